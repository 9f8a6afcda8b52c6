#include "trainer/cpu_share.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace ringmaster::trainer {

std::optional<double> cgroupCpuQuota(std::string_view cpu_max) {
  std::istringstream in{std::string(cpu_max)};
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  double q = 0, p = 0;
  const auto parse = [](const std::string& text, double& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && out > 0;
  };
  if (!parse(quota, q) || !parse(period, p)) return std::nullopt;
  return q / p;
}

int cpuShare(int affinity_cpus, std::optional<double> quota_cpus, int processes) {
  double cpus = std::max(affinity_cpus, 1);
  if (quota_cpus) cpus = std::min(cpus, *quota_cpus);
  return std::max(1, static_cast<int>(std::floor(cpus / std::max(processes, 1))));
}

int cpusPerProcess(int processes) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::string text;
  std::getline(cpu_max, text);
  return cpuShare(affinity, cgroupCpuQuota(text), processes);
}

}  // namespace ringmaster::trainer
