#include "trainer/exit_status.h"

#include "trainer/comm/collective_watchdog.h"

namespace ringmaster::trainer {

namespace {
constexpr int kStoppedExitCode = 128 + 15;  // as if SIGTERM had ended the process
}  // namespace

FailureExit failureExit(const core::Status& failure, FailureScope scope) {
  FailureExit out{failure.exitCode(), false, failure.message()};
  if (scope != FailureScope::kWorld) return out;
  switch (failure.code()) {
    case core::Code::kCancelled:
      out.code = kStoppedExitCode;
      out.warning = true;
      break;
    case core::Code::kUnavailable:
    case core::Code::kTimeout:
      out.code = comm::kRetryableExitCode;
      out.message += " (exit " + std::to_string(comm::kRetryableExitCode) + ", retryable)";
      break;
    default:
      break;
  }
  return out;
}

}  // namespace ringmaster::trainer
