#pragma once
// A container's processes are its session: the kubelet starts each container as a session leader
// (setsid), and everything it starts stays in that session even when it takes a process group of
// its own (the launcher gives each local rank one). Killing the session is how the kubelet ends a
// container the way a real node ends a container's PID namespace: nothing it started survives
// it. A process that calls setsid() itself leaves the session and is not found; only a cgroup
// would hold it.
//
// Thread-safety: free functions over /proc. Failure: processes that vanish mid-scan are skipped.

#include <sys/types.h>

#include <optional>
#include <string_view>
#include <vector>

namespace ringmaster::local::kubelet {

// The session id in a /proc/<pid>/stat line (field 6); nullopt when the line does not parse.
std::optional<pid_t> sessionOfStatLine(std::string_view stat);
// The live processes (zombies excluded) whose session is `sid`.
std::vector<pid_t> sessionMembers(pid_t sid);
// SIGKILLs every process of session `sid` until none is left (forks racing the kill are caught
// by the next round) or a bounded number of rounds passed; returns how many were signalled.
// Never touches the kubelet's own session.
int killSession(pid_t sid);

}  // namespace ringmaster::local::kubelet
