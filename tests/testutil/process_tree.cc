#include "process_tree.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace ringmaster::testutil {
namespace {

struct Stat {
  pid_t pid = 0;
  pid_t parent = 0;
  char state = '?';
  std::string name;
};

std::string firstLine(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
bool readStat(const std::filesystem::path& dir, Stat* out) {
  const std::string line = firstLine(dir / "stat");
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 > line.size())
    return false;
  out->pid = static_cast<pid_t>(std::stol(line.substr(0, open)));
  out->name = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  rest >> out->state >> out->parent;
  return true;
}

bool isNumber(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::string describeProcessTree(pid_t root) {
  std::map<pid_t, Stat> all;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    Stat s;
    if (isNumber(entry.path().filename().string()) && readStat(entry.path(), &s)) all[s.pid] = s;
  }
  if (!all.count(root)) return "";
  std::vector<pid_t> tree{root};
  for (size_t i = 0; i < tree.size(); ++i) {
    for (const auto& [pid, s] : all)
      if (s.parent == tree[i]) tree.push_back(pid);
  }
  std::ostringstream out;
  for (pid_t pid : tree) {
    const Stat& s = all[pid];
    const std::filesystem::path dir = "/proc/" + std::to_string(pid);
    out << "pid " << pid << " (parent " << s.parent << ") " << s.state << " " << s.name
        << " wchan=" << firstLine(dir / "wchan") << "\n";
    for (const auto& task : std::filesystem::directory_iterator(dir / "task", ec)) {
      Stat t;
      if (!readStat(task.path(), &t) || t.pid == pid) continue;
      out << "  thread " << t.pid << " " << t.state << " " << t.name
          << " wchan=" << firstLine(task.path() / "wchan") << "\n";
    }
  }
  return out.str();
}

}  // namespace ringmaster::testutil
