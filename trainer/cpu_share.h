#pragma once
// How many cores one process of a pod may keep busy: what its CPU affinity allows, cut to its
// cgroup's CPU quota (a pod's CPU limit shows there, not in the affinity), shared among the
// pod's processes. Autotune searches BLAS threads up to it.
//
// Thread-safety: pure, but cpusPerProcess reads /proc and /sys. Failure: none; what cannot be
// read counts as no limit.

#include <optional>
#include <string_view>

namespace ringmaster::trainer {

// The cores in a cgroup v2 cpu.max text ("200000 100000" -> 2; "150000 100000" -> 1.5; "max
// 100000" and anything unreadable -> nullopt).
std::optional<double> cgroupCpuQuota(std::string_view cpu_max);

// floor(min(affinity, quota) / processes), at least 1.
int cpuShare(int affinity_cpus, std::optional<double> quota_cpus, int processes);

// cpuShare of this process's affinity and its cgroup's /sys/fs/cgroup/cpu.max.
int cpusPerProcess(int processes);

}  // namespace ringmaster::trainer
