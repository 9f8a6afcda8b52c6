#include "launcher/first_failure.h"

#include <gtest/gtest.h>

namespace ringmaster::launcher {
namespace {

using std::chrono::milliseconds;

// Two pods failed: the one whose error began first is named first by both, whichever reports
// first.
TEST(FirstFailure, TheEarliestErrorIsTheCauseEveryPodNames) {
  std::unique_ptr<rendezvous::Store> store = rendezvous::makeInMemoryStore();
  const std::string cause = "rank 3 exited with code 1: ValueError: rank 3 cannot read its shard";
  const std::string consequence =
      "rank 1 exited with code 1: RuntimeError: Connection closed by peer";
  // Pod 0 (the consequence) reports first, before pod 1 published; its wait sees pod 1's.
  ASSERT_TRUE(store->set(failureKey(1), rendezvous::toBytes("1000 " + cause)).ok());
  EXPECT_EQ(reportFailure(*store, 0, 2, consequence, 1050, milliseconds(100)),
            cause + "; then on this pod: " + consequence);
  EXPECT_EQ(reportFailure(*store, 1, 2, cause, 1000, milliseconds(100)), cause);
}

TEST(FirstFailure, ALonePodFailureIsItsOwnAndTiesGoToTheLowerPod) {
  std::unique_ptr<rendezvous::Store> alone = rendezvous::makeInMemoryStore();
  // No other pod publishes: the wait runs out and the pod's own message stands.
  EXPECT_EQ(reportFailure(*alone, 2, 3, "rank 4 exited with code 2", 500, milliseconds(100)),
            "rank 4 exited with code 2");
  std::unique_ptr<rendezvous::Store> tied = rendezvous::makeInMemoryStore();
  ASSERT_TRUE(tied->set(failureKey(0), rendezvous::toBytes("700 rank 0 failed")).ok());
  EXPECT_EQ(reportFailure(*tied, 1, 2, "rank 1 failed", 700, milliseconds(100)),
            "rank 0 failed; then on this pod: rank 1 failed");
  // A failure whose beginning nobody saw (mpirun's) counts from now: after any seen earlier.
  std::unique_ptr<rendezvous::Store> unseen = rendezvous::makeInMemoryStore();
  ASSERT_TRUE(unseen->set(failureKey(1), rendezvous::toBytes("1000 rank 2 failed")).ok());
  EXPECT_EQ(reportFailure(*unseen, 0, 2, "mpirun exited with code 1", 0, milliseconds(100)),
            "rank 2 failed; then on this pod: mpirun exited with code 1");
}

}  // namespace
}  // namespace ringmaster::launcher
