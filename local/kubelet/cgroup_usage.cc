#include "local/kubelet/cgroup_usage.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> readText(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int64_t> readNumber(const fs::path& path) {
  std::ifstream in(path);
  int64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

// The value of `key` in a "key value" per line file (memory.stat, cpu.stat); 0 when absent.
int64_t statValue(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string k;
  int64_t v = 0;
  while (lines >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

struct Hierarchy {
  std::string controllers;  // "cpu,cpuacct"; "" for v2
  std::string path;
};

std::vector<Hierarchy> hierarchies(const std::string& proc_cgroup) {
  std::vector<Hierarchy> out;
  std::istringstream lines(proc_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

bool hasController(const std::string& list, const std::string& controller) {
  std::istringstream names(list);
  std::string name;
  while (std::getline(names, name, ',')) {
    if (name == controller) return true;
  }
  return false;
}

// The directory of `controller`'s v1 hierarchy for this process: mounted under its own name,
// or under the joined list ("cpu,cpuacct").
std::optional<fs::path> v1Dir(const std::vector<Hierarchy>& hs, const fs::path& root,
                              const std::string& controller) {
  for (const Hierarchy& h : hs) {
    if (!hasController(h.controllers, controller)) continue;
    for (const fs::path& mount : {root / controller, root / h.controllers}) {
      const fs::path dir = mount / fs::path(h.path).relative_path();
      std::error_code ec;
      if (fs::is_directory(dir, ec)) return dir;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<SessionUsage> cgroupUsage(const std::string& proc_cgroup, const fs::path& root) {
  const std::vector<Hierarchy> hs = hierarchies(proc_cgroup);
  const auto cpuacct = v1Dir(hs, root, "cpuacct");
  const auto memory = v1Dir(hs, root, "memory");
  if (cpuacct && memory) {
    const auto ns = readNumber(*cpuacct / "cpuacct.usage");
    const auto used = readNumber(*memory / "memory.usage_in_bytes");
    const auto stat = readText(*memory / "memory.stat");
    if (!ns || !used || !stat) return std::nullopt;
    return SessionUsage{static_cast<double>(*ns) / 1e9,
                        std::max<int64_t>(0, *used - statValue(*stat, "total_inactive_file"))};
  }
  for (const Hierarchy& h : hs) {
    if (!h.controllers.empty()) continue;
    const fs::path dir = root / fs::path(h.path).relative_path();
    const auto cpu = readText(dir / "cpu.stat");
    const auto used = readNumber(dir / "memory.current");
    const auto stat = readText(dir / "memory.stat");
    if (!cpu || !used || !stat) return std::nullopt;
    return SessionUsage{static_cast<double>(statValue(*cpu, "usage_usec")) / 1e6,
                        std::max<int64_t>(0, *used - statValue(*stat, "inactive_file"))};
  }
  return std::nullopt;
}

std::optional<SessionUsage> conmonContainerUsage(const fs::path& conmon_pidfile) {
  const auto conmon = readNumber(conmon_pidfile);
  if (!conmon || *conmon <= 0) return std::nullopt;
  const std::string task = "/proc/" + std::to_string(*conmon) + "/task/" + std::to_string(*conmon);
  const auto child = readNumber(task + "/children");
  if (!child || *child <= 0) return std::nullopt;
  const auto cgroup = readText("/proc/" + std::to_string(*child) + "/cgroup");
  if (!cgroup) return std::nullopt;
  return cgroupUsage(*cgroup, "/sys/fs/cgroup");
}

}  // namespace ringmaster::local::kubelet
