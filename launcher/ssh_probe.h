#pragma once
// "Does sshd answer on host:port?" — the check MPI mode makes before it calls a pod ready and
// before pod 0 runs mpirun (launchers racing sshd is the MPI Operator users' classic failure).
// An answer is the server's identification line ("SSH-2.0-..."), read without logging in.
//
// Thread-safety: free functions, no shared state. Failure: probeSsh names the host, the address
// it tried and why (no such name, refused, no banner within the timeout, not SSH); waitForSsh
// returns kTimeout with the last of those at the deadline, kCancelled on a stop request.

#include <chrono>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"

namespace ringmaster::launcher {

// One try: resolves `host` (every time: names appear while pods start), connects, reads the
// banner. Returns the banner line.
core::Result<std::string> probeSsh(const std::string& host, int port,
                                   std::chrono::milliseconds timeout);

// Tries until an answer, with backoff (100 ms doubling to 2 s), until `deadline`.
core::Result<std::string> waitForSsh(const std::string& host, int port,
                                     std::chrono::steady_clock::time_point deadline,
                                     const core::StopSource* stop = nullptr);

}  // namespace ringmaster::launcher
