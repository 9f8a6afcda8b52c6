#include "trainer/exit_status.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster::trainer {
namespace {

TEST(FailureExit, TheCodeFollowsTheStatusAndWhereItFailed) {
  struct Case {
    core::Status status;
    FailureScope scope;
    int code;
    bool warning;
    std::string message;
  };
  const Case cases[] = {
      {core::usageError("flag --x: bad"), FailureScope::kProcess, 2, false, "flag --x: bad"},
      {core::invalidArgument("trainer.epochs"), FailureScope::kProcess, 1, false, "trainer.epochs"},
      // The process's own endpoints and files fail alike on a fresh attempt.
      {core::unavailable("heartbeat: refused"), FailureScope::kProcess, 1, false,
       "heartbeat: refused"},
      {core::cancelled("SIGTERM"), FailureScope::kProcess, 1, false, "SIGTERM"},
      {core::unavailable("rank 1 went away"), FailureScope::kWorld, 142, false,
       "rank 1 went away (exit 142, retryable)"},
      {core::timeoutError("allreduce stalled"), FailureScope::kWorld, 142, false,
       "allreduce stalled (exit 142, retryable)"},
      {core::cancelled("SIGTERM: stopped at epoch 1 step 3"), FailureScope::kWorld, 143, true,
       "SIGTERM: stopped at epoch 1 step 3"},
      {core::invalidArgument("loss became nan"), FailureScope::kWorld, 1, false, "loss became nan"},
      {core::usageError("bad"), FailureScope::kWorld, 2, false, "bad"},
  };
  for (const Case& c : cases) {
    const FailureExit exit = failureExit(c.status, c.scope);
    EXPECT_EQ(exit.code, c.code) << c.message;
    EXPECT_EQ(exit.warning, c.warning) << c.message;
    EXPECT_EQ(exit.message, c.message);
  }
}

}  // namespace
}  // namespace ringmaster::trainer
