// The gloo backend on a training step's pattern: several gradient buckets of different sizes,
// slices of one gradient array, allreduced in turn every step. A small bucket once pinned the
// TCP send buffer of Gloo's pairs (40 ms stalls on every later large send); the test checks the
// sums and prints the time per step, which it never asserts.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/gloo_communicator.h"
#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Multiples of 1/4 small enough that every partial sum is exact in float.
float exactValue(int rank, size_t i, int step) {
  return static_cast<float>((rank + 1 + step) * static_cast<int>(i % 241 + 1)) * 0.25f;
}

// The trainer's MLP with --first-bucket-cap-mb 1: a 22 KiB bucket, then a 2.6 MiB one.
TEST(GlooBucketsTest, AlternatingSmallAndLargeBucketsSumExactlyEveryStep) {
  constexpr int kRanks = 2;
  constexpr int kSteps = 20;
  const std::vector<size_t> bucket_counts = {5642, 663552, 512};
  size_t total = 0;
  for (size_t c : bucket_counts) total += c;

  auto comms = testing::makeCommunicators("gloo", kRanks, std::chrono::seconds(30));
  ASSERT_EQ(comms.size(), static_cast<size_t>(kRanks));
  std::vector<std::vector<float>> grads(kRanks, std::vector<float>(total));
  std::vector<core::Status> status(kRanks);
  std::vector<int> bad_step(kRanks, -1);
  std::vector<double> seconds(kRanks, 0);

  testing::runRanks(kRanks, [&](int r) {
    const auto start = Clock::now();
    for (int step = 0; step < kSteps && status[r].ok(); ++step) {
      for (size_t i = 0; i < total; ++i) grads[r][i] = exactValue(r, i, step);
      size_t offset = 0;
      for (size_t count : bucket_counts) {
        status[r] = comms[r]->allreduceSum(grads[r].data() + offset, count, {});
        if (!status[r].ok()) break;
        offset += count;
      }
      for (size_t i = 0; i < total && bad_step[r] < 0 && status[r].ok(); ++i) {
        float want = 0;
        for (int peer = 0; peer < kRanks; ++peer) want += exactValue(peer, i, step);
        if (grads[r][i] != want) bad_step[r] = step;
      }
    }
    seconds[r] = std::chrono::duration<double>(Clock::now() - start).count();
  });

  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r].message();
    EXPECT_EQ(bad_step[r], -1) << "rank " << r << " got a wrong sum in step " << bad_step[r];
    EXPECT_EQ(static_cast<GlooCommunicator&>(*comms[r]).cachedBufferCountForTesting(),
              bucket_counts.size());
  }
  std::printf("gloo, 2 ranks, buckets of %zu + %zu + %zu floats: %.2f ms per step\n",
              bucket_counts[0], bucket_counts[1], bucket_counts[2], seconds[0] * 1e3 / kSteps);
}

}  // namespace
}  // namespace ringmaster::trainer::comm
