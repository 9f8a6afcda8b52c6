#pragma once
// A container's processes are its session: the kubelet starts each container as a session leader
// (setsid), and everything it starts stays in that session even when it takes a process group of
// its own (the launcher gives each local rank one). Killing the session is how the kubelet ends a
// container the way a real node ends a container's PID namespace: nothing it started survives
// it. A process that calls setsid() itself leaves the session and is not found; only a cgroup
// would hold it.
//
// Thread-safety: free functions over /proc. Failure: processes that vanish mid-scan are skipped.
// The same scan measures a container: its processes' CPU time and resident memory.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace ringmaster::local::kubelet {

// What the kubelet reads of a process in its /proc/<pid>/stat line.
struct ProcessStat {
  pid_t pid = 0;
  char state = '?';
  pid_t session = 0;
  uint64_t cpu_ticks = 0;         // utime + stime, in clock ticks
  uint64_t reaped_cpu_ticks = 0;  // cutime + cstime: the children it has waited for
  int64_t rss_pages = 0;          // resident set size
};
// Parses a stat line; fields past the session that the line lacks stay 0. nullopt when the line
// does not parse.
std::optional<ProcessStat> parseStatLine(std::string_view stat);
// The session id in a /proc/<pid>/stat line (field 6); nullopt when the line does not parse.
std::optional<pid_t> sessionOfStatLine(std::string_view stat);
// Every live process (zombies excluded), one scan of /proc.
std::vector<ProcessStat> liveProcesses();
// The live processes (zombies excluded) whose session is `sid`.
std::vector<pid_t> sessionMembers(pid_t sid);

// A container's use of the machine, as cAdvisor reports a container's cgroup.
struct SessionUsage {
  // Every live process' CPU time plus what each reaped of its children: a child's time moves to
  // its parent when the parent waits for it, so the sum only falls when a process ends unreaped
  // by its session (an orphan), which a kubelet's cgroup would still count.
  double cpu_seconds = 0;
  // The processes' resident sets summed (pages two processes share count twice): a working set
  // without a cgroup to ask.
  int64_t memory_bytes = 0;
};
// The usage of each session in `sessions`, from one scan's `processes` (a session with no live
// process has none).
std::map<pid_t, SessionUsage> sessionUsage(const std::vector<ProcessStat>& processes,
                                           const std::set<pid_t>& sessions, long ticks_per_second,
                                           long page_size);
// SIGKILLs every process of session `sid` until none is left (forks racing the kill are caught
// by the next round) or a bounded number of rounds passed; returns how many were signalled.
// Never touches the kubelet's own session.
int killSession(pid_t sid);

}  // namespace ringmaster::local::kubelet
