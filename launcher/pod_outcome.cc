#include "launcher/pod_outcome.h"

#include "launcher/hang_detector.h"
#include "launcher/termination_message.h"

namespace ringmaster::launcher {

PodExit badInputExit(const core::Status& status) {
  return {status.exitCode(), failureMessage("launcher: " + status.message(), "")};
}

RendezvousFailure classifyRendezvousFailure(const core::Status& status) {
  switch (status.code()) {
    case core::Code::kCancelled:
      return RendezvousFailure::kStopped;
    case core::Code::kTimeout:
    case core::Code::kUnavailable:
      return RendezvousFailure::kRetryable;
    default:
      return RendezvousFailure::kBadInput;
  }
}

PodExit rendezvousExit(const core::Status& status, int signal_exit_code) {
  switch (classifyRendezvousFailure(status)) {
    case RendezvousFailure::kStopped:
      return {signal_exit_code, std::nullopt};
    case RendezvousFailure::kRetryable:
      return {kHangExitCode, failureMessage("rendezvous: " + status.message(), "")};
    case RendezvousFailure::kBadInput:
      break;
  }
  return badInputExit(status);
}

PodVerdict podVerdict(const SupervisorOutcome& outcome, const FailureCause& cause,
                      bool own_hang_verdict, bool stop_requested,
                      const std::function<std::optional<std::string>()>& published_hang) {
  PodVerdict verdict;
  verdict.outcome = outcome;
  bool hang_reported = own_hang_verdict;
  if (outcome.exit_code != 0 && !own_hang_verdict) {
    verdict.published_hang = published_hang();
    if (verdict.published_hang) {
      hang_reported = true;
      if (!stop_requested) verdict.outcome = {kHangExitCode, "hang: " + *verdict.published_hang};
    }
  }
  // The rank whose error came first, when it is not the one that exited first.
  std::string reason = verdict.outcome.reason;
  if (!cause.exited_first) reason += "; " + cause.name + "'s error came first";
  verdict.failure = failureMessage(reason, cause.error_line);
  verdict.report_to_gang = verdict.outcome.exit_code != 0 && !hang_reported && !stop_requested;
  return verdict;
}

PodExit processesExit(const SupervisorOutcome& outcome, const std::string& failure,
                      const std::optional<std::string>& summary_json) {
  if (outcome.exit_code != 0) return {outcome.exit_code, failure};
  return {0, summary_json ? summaryMessage(*summary_json) : std::nullopt};
}

}  // namespace ringmaster::launcher
