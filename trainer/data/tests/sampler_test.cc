#include "trainer/data/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace ringmaster::trainer::data {
namespace {

using ::testing::ElementsAre;

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(EpochPermutation, IsAPermutation) {
  for (size_t n : {0u, 1u, 2u, 7u, 1000u}) {
    std::vector<uint32_t> expected(n);
    std::iota(expected.begin(), expected.end(), 0u);
    EXPECT_EQ(sorted(epochPermutation(n, 42, 3)), expected) << "n=" << n;
  }
}

TEST(EpochPermutation, IsPinnedAcrossRunsAndPlatforms) {
  // Pinned: the order must not change between builds, or resumed jobs would see other data.
  EXPECT_THAT(epochPermutation(10, 42, 0), ElementsAre(5, 1, 9, 6, 7, 2, 4, 0, 8, 3));
  EXPECT_THAT(epochPermutation(10, 42, 1), ElementsAre(8, 9, 1, 7, 6, 4, 3, 2, 0, 5));
  std::vector<uint32_t> big = epochPermutation(60000, 42, 0);
  EXPECT_THAT(std::vector<uint32_t>(big.begin(), big.begin() + 5),
              ElementsAre(22358, 37936, 44895, 41298, 16009));
}

TEST(ShardedSampler, ShardsAreDisjointAndCoverAllButTheTail) {
  const size_t n = 103;
  const int w = 4;
  std::set<uint32_t> seen;
  for (int r = 0; r < w; ++r) {
    ShardedSampler s(n, r, w, 7);
    s.setEpoch(2);
    EXPECT_EQ(s.indices().size(), 25u) << "rank " << r;
    for (uint32_t i : s.indices()) {
      EXPECT_LT(i, n);
      EXPECT_TRUE(seen.insert(i).second) << "index " << i << " on two ranks";
    }
  }
  EXPECT_EQ(seen.size(), n - n % w);
}

std::set<uint32_t> droppedTail(size_t n, int w, uint64_t seed, int64_t epoch) {
  std::set<uint32_t> dropped;
  for (uint32_t i = 0; i < n; ++i) dropped.insert(i);
  for (int r = 0; r < w; ++r) {
    ShardedSampler s(n, r, w, seed);
    s.setEpoch(epoch);
    for (uint32_t i : s.indices()) dropped.erase(i);
  }
  return dropped;
}

TEST(ShardedSampler, DroppedTailChangesFromEpochToEpoch) {
  std::set<uint32_t> e0 = droppedTail(103, 4, 7, 0);
  std::set<uint32_t> e1 = droppedTail(103, 4, 7, 1);
  EXPECT_EQ(e0.size(), 3u);
  EXPECT_EQ(e1.size(), 3u);
  EXPECT_NE(e0, e1);
}

TEST(ShardedSampler, DifferentEpochsGiveDifferentOrders) {
  ShardedSampler s(1000, 1, 2, 42);
  std::vector<uint32_t> e0 = s.indices();
  s.setEpoch(1);
  EXPECT_NE(s.indices(), e0);
  EXPECT_EQ(s.epoch(), 1);
}

TEST(ShardedSampler, SameSeedAndEpochGiveTheSameOrder) {
  ShardedSampler a(1000, 0, 3, 42);
  ShardedSampler b(1000, 0, 3, 42);
  a.setEpoch(5);
  b.setEpoch(5);
  EXPECT_EQ(a.indices(), b.indices());
  // Going back to an epoch reproduces it (resume after restart).
  std::vector<uint32_t> e5 = a.indices();
  a.setEpoch(6);
  a.setEpoch(5);
  EXPECT_EQ(a.indices(), e5);
}

TEST(ShardedSampler, DifferentSeedsGiveDifferentOrders) {
  ShardedSampler a(1000, 0, 1, 1);
  ShardedSampler b(1000, 0, 1, 2);
  EXPECT_NE(a.indices(), b.indices());
}

TEST(ShardedSampler, RankTakesStridedPositionsOfTheWorldSizeIndependentPermutation) {
  const size_t n = 1001;
  for (int w : {1, 2, 3, 8}) {
    std::vector<uint32_t> perm = epochPermutation(n, 9, 4);
    for (int r = 0; r < w; ++r) {
      ShardedSampler s(n, r, w, 9);
      s.setEpoch(4);
      ASSERT_EQ(s.indices().size(), n / w);
      for (size_t k = 0; k < s.indices().size(); ++k) {
        ASSERT_EQ(s.indices()[k], perm[r + k * w]) << "w=" << w << " r=" << r << " k=" << k;
      }
    }
  }
}

// For every step k, the W ranks' k-th batches of size b together are the 1-rank run's k-th
// batch of size W*b: data parallel training sees exactly the big-batch data.
TEST(ShardedSampler, UnionOfRankBatchesEqualsTheSingleRankBigBatch) {
  const size_t n = 1000;
  const int w = 3;
  const size_t b = 7;
  ShardedSampler single(n, 0, 1, 11);
  single.setEpoch(2);
  std::vector<ShardedSampler> ranks;
  for (int r = 0; r < w; ++r) {
    ranks.emplace_back(n, r, w, 11);
    ranks.back().setEpoch(2);
  }
  const size_t steps = ranks[0].numBatches(b);
  ASSERT_EQ(steps, 48u);  // shard 333 -> 47 full batches of 7 and one of 4
  const size_t usable = n - n % w;
  for (size_t k = 0; k < steps; ++k) {
    std::vector<uint32_t> merged;
    for (const ShardedSampler& s : ranks) {
      ASSERT_EQ(s.numBatches(b), steps);
      const size_t end = std::min(s.indices().size(), (k + 1) * b);
      merged.insert(merged.end(), s.indices().begin() + k * b, s.indices().begin() + end);
    }
    const size_t big_end = std::min(usable, (k + 1) * b * w);
    std::vector<uint32_t> big(single.indices().begin() + k * b * w,
                              single.indices().begin() + big_end);
    EXPECT_EQ(sorted(merged), sorted(big)) << "step " << k;
  }
}

TEST(ShardedSampler, NumBatchesRoundsUp) {
  ShardedSampler s(100, 2, 3, 0);  // shard of 33
  EXPECT_EQ(s.numBatches(10), 4u);
  EXPECT_EQ(s.numBatches(33), 1u);
  EXPECT_EQ(s.numBatches(64), 1u);
  EXPECT_EQ(s.numBatches(1), 33u);
  EXPECT_EQ(s.numBatches(0), 0u);
}

TEST(ShardedSampler, MoreRanksThanSamplesGivesEmptyShards) {
  ShardedSampler s(3, 3, 4, 0);
  EXPECT_TRUE(s.indices().empty());
  EXPECT_EQ(s.numBatches(8), 0u);
}

TEST(ShardedSampler, ValidateRejectsBadRankAndWorldSize) {
  EXPECT_TRUE(ShardedSampler::validate(10, 0, 1).ok());
  EXPECT_EQ(ShardedSampler::validate(10, 2, 2).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(ShardedSampler::validate(10, -1, 2).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(ShardedSampler::validate(10, 0, 0).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(ShardedSampler::validate(size_t{1} << 33, 0, 1).code(), core::Code::kInvalidArgument);
}

TEST(ShardedSamplerDeathTest, ConstructorAbortsOnBadRank) {
  EXPECT_DEATH(ShardedSampler(10, 5, 2, 0), "rank 5 is outside");
}

TEST(GatherBatch, CopiesTheChosenRowsAndLabels) {
  Dataset d;
  d.rows = 1;
  d.cols = 2;
  d.images = {0, 1, 10, 11, 20, 21, 30, 31};
  d.labels = {0, 1, 2, 3};
  const uint32_t idx[] = {3, 0, 3};
  std::vector<float> images(6, -1);
  std::vector<int32_t> labels(3, -1);
  gatherBatch(d, idx, 3, images.data(), labels.data());
  EXPECT_THAT(images, ElementsAre(30, 31, 0, 1, 30, 31));
  EXPECT_THAT(labels, ElementsAre(3, 0, 3));
}

}  // namespace
}  // namespace ringmaster::trainer::data
