#pragma once
// How ringmaster-trainer ends after a failure: the exit code the launcher and the operator act
// on, and the line it logs.
//   2    a usage error (a bad flag)
//   1    any other failure
//   142  (comm::kRetryableExitCode) a peer that went away or a collective that stalled
//        (kUnavailable, kTimeout) while joining the world or training with it: a fresh attempt
//        may well succeed, so the operator restarts on it
//   143  (128 + SIGTERM) training stopped on request (kCancelled); a warning, not an error
// A failure of the process's own input or machine (config, data, device, its endpoints) is 1 or
// 2 whatever its code: a fresh attempt would fail alike.
//
// Thread-safety: pure function.

#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer {

// Where the failure happened.
enum class FailureScope {
  kProcess,  // the process's own input and machine
  kWorld,    // joining the world (the communicator) or training with it
};

struct FailureExit {
  int code = 1;
  bool warning = false;  // stopped on request
  std::string message;   // what to log
};

FailureExit failureExit(const core::Status& failure, FailureScope scope);

}  // namespace ringmaster::trainer
