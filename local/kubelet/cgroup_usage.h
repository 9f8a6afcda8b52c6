#pragma once
// A container's CPU and memory from its cgroup, as cAdvisor reads them, for containers that run
// in their images (the runtime gives each a cgroup; a host process' container is a session
// instead, session.h). CPU: cgroup v1's cpuacct.usage, v2's cpu.stat usage_usec. Memory, the
// working set: usage (v1 memory.usage_in_bytes, v2 memory.current) less the inactive file cache
// (memory.stat's total_inactive_file, v2 inactive_file), never below 0.
//
// Thread-safety: reads files only. Failure: nullopt when a file is missing or unreadable (the
// container has just ended, say).

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "local/kubelet/session.h"

namespace ringmaster::local::kubelet {

// The usage of the cgroup that `proc_cgroup` (the text of /proc/<pid>/cgroup of one of the
// container's processes) names, the hierarchies mounted under `cgroup_root` (/sys/fs/cgroup):
// v1's cpuacct and memory controllers where the process has them, else the v2 ("0::") one.
std::optional<SessionUsage> cgroupUsage(const std::string& proc_cgroup,
                                        const std::filesystem::path& cgroup_root);

// The usage of the container whose conmon wrote its pid to `conmon_pidfile`: the cgroup of
// conmon's child (the container's first process), read through /proc.
std::optional<SessionUsage> conmonContainerUsage(const std::filesystem::path& conmon_pidfile);

}  // namespace ringmaster::local::kubelet
