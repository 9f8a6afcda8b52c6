#include "launcher/first_failure.h"

#include <gtest/gtest.h>

namespace ringmaster::launcher {
namespace {

using std::chrono::milliseconds;

TEST(FirstFailure, TheFirstPodToFailIsTheCauseEveryOtherPodNames) {
  std::unique_ptr<rendezvous::Store> store = rendezvous::makeInMemoryStore();
  const std::string cause = "rank 3 exited with code 1: ValueError: rank 3 cannot read its shard";
  EXPECT_EQ(reportFailure(*store, cause, milliseconds(100)), cause);
  const std::string consequence =
      "rank 1 exited with code 1: RuntimeError: Connection closed by peer";
  EXPECT_EQ(reportFailure(*store, consequence, milliseconds(100)),
            cause + "; then on this pod: " + consequence);
}

TEST(FirstFailure, ACauseWhoseTextNeverCameLeavesThePodsOwnMessage) {
  std::unique_ptr<rendezvous::Store> store = rendezvous::makeInMemoryStore();
  ASSERT_TRUE(store->add(kFailureCountKey, 1).ok());  // counted, then gone before setting it
  EXPECT_EQ(reportFailure(*store, "rank 0 exited with code 2", milliseconds(50)),
            "rank 0 exited with code 2");
}

}  // namespace
}  // namespace ringmaster::launcher
