#include "launcher/pod_outcome.h"

#include <gtest/gtest.h>

#include <string>

#include "launcher/hang_detector.h"
#include "ringmaster/kube/termination_message.h"

namespace ringmaster::launcher {
namespace {

TEST(BadInputExit, TheStatusCodeAndTheLaunchersMessage) {
  struct Case {
    core::Status status;
    PodExit want;
  };
  const Case cases[] = {
      {core::invalidArgument("NODE_RANK=3 must be in [0, NNODES=2)"),
       {1, "launcher: NODE_RANK=3 must be in [0, NNODES=2)"}},
      {core::notFound("nope: not found in PATH"), {1, "launcher: nope: not found in PATH"}},
      {core::usageError("bad flag"), {2, "launcher: bad flag"}},
  };
  for (const Case& c : cases) EXPECT_EQ(badInputExit(c.status), c.want) << c.status.toString();
  // As long as it is, the message fits the kubelet's limit.
  const PodExit long_one = badInputExit(core::invalidArgument(std::string(10000, 'x')));
  ASSERT_TRUE(long_one.termination_message.has_value());
  EXPECT_LE(long_one.termination_message->size(), kube::kMaxTerminationMessageBytes);
}

TEST(RendezvousExit, AStopIsTheSignalsATimeoutIsRetryableTheRestBadInput) {
  struct Case {
    core::Status status;
    RendezvousFailure want_kind;
    PodExit want;
  };
  const int sigint = 130;
  const Case cases[] = {
      {core::cancelled("received Interrupt"), RendezvousFailure::kStopped, {sigint, std::nullopt}},
      {core::timeoutError("pods 1, 2 did not join within 300 s"),
       RendezvousFailure::kRetryable,
       {kHangExitCode, "rendezvous: pods 1, 2 did not join within 300 s"}},
      {core::unavailable("store 10.0.0.1:29510 unreachable"),
       RendezvousFailure::kRetryable,
       {142, "rendezvous: store 10.0.0.1:29510 unreachable"}},
      {core::invalidArgument("pod 1 has 2 processes, pod 0 4"),
       RendezvousFailure::kBadInput,
       {1, "launcher: pod 1 has 2 processes, pod 0 4"}},
      {core::internalError("socket: Too many open files"),
       RendezvousFailure::kBadInput,
       {1, "launcher: socket: Too many open files"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(classifyRendezvousFailure(c.status), c.want_kind) << c.status.toString();
    EXPECT_EQ(rendezvousExit(c.status, sigint), c.want) << c.status.toString();
  }
}

TEST(PodVerdict, TheOutcomeTheMessageAndWhetherTheGangHearsOfIt) {
  const std::string hang = "rank 1 (pod 0) stuck at step 12 for 6 s (no heartbeat for 5 s)";
  const FailureCause none;
  struct Case {
    const char* name;
    SupervisorOutcome outcome;
    FailureCause cause;
    bool own_hang_verdict;
    bool stop_requested;
    std::optional<std::string> published;  // what another pod published
    SupervisorOutcome want_outcome;
    bool want_published_hang;
    std::string want_failure;
    bool want_report;
    int want_reads;  // of the published verdict
  };
  const Case cases[] = {
      {"success: nothing to read",
       {0, "all 2 processes succeeded"},
       none,
       false,
       false,
       hang,
       {0, "all 2 processes succeeded"},
       false,
       "all 2 processes succeeded",
       false,
       0},
      {"this pod's own failure goes to the gang",
       {1, "rank 3 exited with code 1"},
       {"rank 3", "ValueError: bad shard", 1000, true},
       false,
       false,
       std::nullopt,
       {1, "rank 3 exited with code 1"},
       false,
       "rank 3 exited with code 1: ValueError: bad shard",
       true,
       1},
      {"another rank's error came first",
       {1, "rank 2 exited with code 1"},
       {"rank 3", "ValueError: bad shard", 1000, false},
       false,
       false,
       std::nullopt,
       {1, "rank 2 exited with code 1"},
       false,
       "rank 2 exited with code 1; rank 3's error came first: ValueError: bad shard",
       true,
       1},
      {"mpirun's failure has no cause",
       {3, "mpirun exited with code 3"},
       none,
       false,
       false,
       std::nullopt,
       {3, "mpirun exited with code 3"},
       false,
       "mpirun exited with code 3",
       true,
       1},
      {"this pod's own hang verdict: nothing to read, nothing to report",
       {kHangExitCode, "hang: " + hang},
       none,
       true,
       false,
       "rank 5 (pod 2) stuck at step 3 for 9 s (no rank advanced for 5 s)",
       {kHangExitCode, "hang: " + hang},
       false,
       "hang: " + hang,
       false,
       0},
      {"another pod's hang verdict replaces the failure it caused",
       {1, "rank 2 exited with code 1"},
       {"rank 2", "RuntimeError: Connection closed by peer", 1000, true},
       false,
       false,
       hang,
       {kHangExitCode, "hang: " + hang},
       true,
       "hang: " + hang + ": RuntimeError: Connection closed by peer",
       false,
       1},
      {"under a signal the hang is named but the signal's code stays",
       {143, "received Terminated"},
       none,
       false,
       true,
       hang,
       {143, "received Terminated"},
       true,
       "received Terminated",
       false,
       1},
      {"a signal's stop is no failure of this pod's own",
       {130, "received Interrupt"},
       none,
       false,
       true,
       std::nullopt,
       {130, "received Interrupt"},
       false,
       "received Interrupt",
       false,
       1},
  };
  for (const Case& c : cases) {
    int reads = 0;
    const PodVerdict verdict =
        podVerdict(c.outcome, c.cause, c.own_hang_verdict, c.stop_requested, [&] {
          ++reads;
          return c.published;
        });
    EXPECT_EQ(verdict.outcome.exit_code, c.want_outcome.exit_code) << c.name;
    EXPECT_EQ(verdict.outcome.reason, c.want_outcome.reason) << c.name;
    EXPECT_EQ(verdict.published_hang, c.want_published_hang ? c.published : std::nullopt) << c.name;
    EXPECT_EQ(verdict.failure, c.want_failure) << c.name;
    EXPECT_EQ(verdict.report_to_gang, c.want_report) << c.name;
    EXPECT_EQ(reads, c.want_reads) << c.name;
  }
}

TEST(ProcessesExit, FailureWritesTheFailureSuccessRankZerosSummary) {
  struct Case {
    const char* name;
    SupervisorOutcome outcome;
    std::optional<std::string> summary_json;
    PodExit want;
  };
  const std::string failure = "rank 0 failed first; then on this pod: rank 1 exited with code 1";
  const Case cases[] = {
      {"failure", {1, "rank 1 exited with code 1"}, std::nullopt, {1, failure}},
      {"failure ignores a summary",
       {7, "rank 0 exited with code 7"},
       "{\"steps\":3}",
       {7, failure}},
      {"a hang", {kHangExitCode, "hang: rank 1"}, std::nullopt, {kHangExitCode, failure}},
      {"success with rank 0's summary, compacted",
       {0, "all 2 processes succeeded"},
       "{\n  \"steps\": 3,\n  \"loss\": 0.5\n}\n",
       {0, "{\"loss\":0.5,\"steps\":3}"}},
      {"success on another pod: no summary, no message",
       {0, "all 2 processes succeeded"},
       std::nullopt,
       {0, std::nullopt}},
      {"success with a summary that is no object: no message",
       {0, "all 2 processes succeeded"},
       "[1, 2]",
       {0, std::nullopt}},
      {"success with a summary too large: no message",
       {0, "all 2 processes succeeded"},
       "{\"x\":\"" + std::string(kube::kMaxTerminationMessageBytes, 'x') + "\"}",
       {0, std::nullopt}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(processesExit(c.outcome, failure, c.summary_json), c.want) << c.name;
  }
}

}  // namespace
}  // namespace ringmaster::launcher
