#include "ringmaster/core/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ringmaster::core {
namespace {

using std::chrono::milliseconds;

TEST(BackoffDelay, DoublesFromInitialUpToTheCap) {
  struct Case {
    BackoffPolicy policy;
    int failures;
    milliseconds delay;
  };
  const BackoffPolicy p{milliseconds(100), milliseconds(2000), 0};
  for (const Case& c : std::vector<Case>{
           {p, 0, milliseconds(100)},
           {p, 1, milliseconds(100)},
           {p, 2, milliseconds(200)},
           {p, 3, milliseconds(400)},
           {p, 5, milliseconds(1600)},
           {p, 6, milliseconds(2000)},
           {p, 1000, milliseconds(2000)},  // no overflow however long it fails
           {{milliseconds(300), milliseconds(1000), 0}, 3, milliseconds(1000)},
           {{milliseconds(5), milliseconds(5), 0}, 9, milliseconds(5)},
       }) {
    EXPECT_EQ(backoffDelay(c.policy, c.failures), c.delay)
        << c.policy.initial.count() << "/" << c.policy.max.count() << " ms after " << c.failures;
  }
}

TEST(Jittered, AddsUpToJitterTimesTheDelay) {
  EXPECT_EQ(jittered(milliseconds(1000), 0, 0.99), milliseconds(1000));
  EXPECT_EQ(jittered(milliseconds(1000), 0.5, 0), milliseconds(1000));
  EXPECT_EQ(jittered(milliseconds(1000), 0.5, 0.5), milliseconds(1250));
  EXPECT_EQ(jittered(milliseconds(1000), 0.5, 0.999), milliseconds(1499));
  EXPECT_EQ(jittered(milliseconds(1000), 3, 0.5), milliseconds(1500));  // jitter at most 1
}

TEST(Backoff, NextWalksTheDelaysAndResetStartsOver) {
  Backoff b({milliseconds(50), milliseconds(1000), 0});
  std::vector<milliseconds> seen;
  for (int i = 0; i < 7; ++i) seen.push_back(b.next());
  EXPECT_EQ(seen, (std::vector<milliseconds>{milliseconds(50), milliseconds(100), milliseconds(200),
                                             milliseconds(400), milliseconds(800),
                                             milliseconds(1000), milliseconds(1000)}));
  EXPECT_EQ(b.failures(), 7);
  b.reset();
  EXPECT_EQ(b.next(), milliseconds(50));
}

TEST(Backoff, JitterSpreadsClientsWithinTheBound) {
  // Ten clients that failed together: their first delays differ, each within [100, 150) ms.
  std::vector<milliseconds> first;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    first.push_back(Backoff({milliseconds(100), milliseconds(1000), 0.5}, seed).next());
    EXPECT_GE(first.back(), milliseconds(100));
    EXPECT_LT(first.back(), milliseconds(150));
  }
  std::sort(first.begin(), first.end());
  EXPECT_GT(std::unique(first.begin(), first.end()) - first.begin(), 1)
      << "ten seeds gave one delay: no jitter";
}

}  // namespace
}  // namespace ringmaster::core
