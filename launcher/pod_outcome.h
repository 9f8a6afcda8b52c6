#pragma once
// How the pod ends: its exit code and what its termination message says (termination_message.h),
// decided from what happened; main.cc does the logging, the store's reads and the writing.
//   bad input    the launcher's own checks (flags, environment, a program not found): the
//                status's code (1; 2 for a usage error), "launcher: <message>"
//   rendezvous   a stop by signal N: 128+N and no message (the pod is going away anyway); a
//                deadline that ran out or a store that stayed unreachable: kHangExitCode,
//                "rendezvous: <message>", retryable (the operator restarts the gang); anything
//                else is bad input
//   processes    what the supervisor (or mpirun) ended with. A failure without this pod's own
//                hang verdict may be the consequence of another pod's: that pod stopped a hung
//                gang and published its verdict, so this pod reports the hang too, and exits with
//                kHangExitCode unless a signal stopped it (its code says how the pod ended). A
//                failure that is this pod's own (no hang, no signal) goes through reportFailure
//                (first_failure.h) so that the gang names the first. On success the message is
//                rank 0's summary, when it wrote one that fits.
//
// Thread-safety: pure functions (published_hang is the caller's). Failure: none.

#include <functional>
#include <optional>
#include <string>

#include "launcher/supervisor.h"
#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

struct PodExit {
  int exit_code = 0;
  std::optional<std::string> termination_message;  // nullopt: none is written
  bool operator==(const PodExit&) const = default;
};

PodExit badInputExit(const core::Status& status);

enum class RendezvousFailure {
  kStopped,    // a signal's stop request
  kRetryable,  // a deadline ran out, the store stayed unreachable
  kBadInput,   // anything else (pods that disagree on the world, ...)
};
RendezvousFailure classifyRendezvousFailure(const core::Status& status);
// `signal_exit_code`: 128+N for the signal received, the code of a stop.
PodExit rendezvousExit(const core::Status& status, int signal_exit_code);

// What the processes' end says, before the gang hears of it.
struct PodVerdict {
  SupervisorOutcome outcome;                  // what the pod exits with and why
  std::optional<std::string> published_hang;  // another pod's hang verdict this pod reports
  std::string failure;                        // the termination message on failure
  bool report_to_gang = false;                // the failure is this pod's own: reportFailure
};

// `outcome` and `cause`: the supervisor's (mpirun's: no cause); `own_hang_verdict`: this pod's
// monitor judged a hang; `stop_requested`: a signal arrived. `published_hang` reads the verdict
// another pod published (publishedHang); it is called only for a failure without a verdict of
// this pod's own.
PodVerdict podVerdict(const SupervisorOutcome& outcome, const FailureCause& cause,
                      bool own_hang_verdict, bool stop_requested,
                      const std::function<std::optional<std::string>()>& published_hang);

// The pod's exit once the gang heard of it: `failure` is the termination message on failure
// (what reportFailure returned, for a failure of this pod's own), `summary_json` what rank 0's
// summary file holds (nullopt: there is none). Success without a summary that fits writes no
// message.
PodExit processesExit(const SupervisorOutcome& outcome, const std::string& failure,
                      const std::optional<std::string>& summary_json);

}  // namespace ringmaster::launcher
