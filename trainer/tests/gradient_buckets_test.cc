#include "trainer/gradient_buckets.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "trainer/comm/inproc_communicator.h"

namespace ringmaster::trainer {
namespace {

std::vector<model::ParamView> views(std::vector<size_t> counts) {
  std::vector<model::ParamView> out;
  size_t offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    std::string name = "p";  // appended: GCC 12 flags "p" + std::to_string(i) (-Wrestrict)
    name += std::to_string(i);
    out.push_back({std::move(name), offset, counts[i]});
    offset += counts[i];
  }
  return out;
}

struct PlanCase {
  const char* what;
  std::vector<size_t> params;  // floats per parameter, forward order
  size_t first_cap_bytes, cap_bytes;
  std::vector<Bucket> want;  // bucket 0 first: the end of the buffer
};

TEST(PlanBuckets, ClosesEachBucketOnceItReachesItsCap) {
  const std::vector<PlanCase> cases = {
      {"the last param (50) stays open below the first cap (250 floats); the 300 closes it; "
       "the rest never reaches the next cap (500)",
       {100, 200, 300, 50},
       1000,
       2000,
       {{300, 350}, {0, 300}}},
      {"a cap reached exactly closes the bucket",
       {100, 200, 300, 50},
       200,
       2000,
       {{600, 50}, {100, 500}, {0, 100}}},
      {"everything under the first cap: one bucket", {10, 20, 30}, 1 << 20, 25 << 20, {{0, 60}}},
      {"parameters larger than the cap are never split: one bucket each",
       {1000, 10},
       16,
       16,
       {{1000, 10}, {0, 1000}}},
      {"a zero cap: every parameter alone", {5, 6}, 0, 0, {{5, 6}, {0, 5}}},
      {"Fashion-MNIST's 784-512-512-10 MLP at the 1 MiB / 25 MiB defaults: the second layer's "
       "weight closes the first bucket, so it does not wait for the first layer",
       {784 * 512, 512, 512 * 512, 512, 512 * 10, 10},
       1 << 20,
       25 << 20,
       {{784 * 512 + 512, 512 * 512 + 512 + 5120 + 10}, {0, 784 * 512 + 512}}},
  };
  for (const PlanCase& c : cases) {
    const auto plan = planBuckets(views(c.params), c.first_cap_bytes, c.cap_bytes);
    ASSERT_EQ(plan.size(), c.want.size()) << c.what;
    for (size_t b = 0; b < plan.size(); ++b) {
      EXPECT_EQ(plan[b].offset, c.want[b].offset) << c.what << ": bucket " << b;
      EXPECT_EQ(plan[b].count, c.want[b].count) << c.what << ": bucket " << b;
    }
  }
}

TEST(BucketsByReadyLayer, EachBucketLaunchesWhenTheLayerOfItsFirstParameterIsDone) {
  // Params (weight, bias) of 3 layers: layer offsets 0, 120, 660. Bucket 0 = layer 2 (60) and
  // layer 1's bias (40), from 620; bucket 1 = layer 1's weight (120..620); bucket 2 = layer 0.
  const std::vector<Bucket> plan = {{620, 100}, {120, 500}, {0, 120}};
  auto at = bucketsByReadyLayer(plan, {0, 120, 660});
  ASSERT_EQ(at.size(), 3u);
  // Bucket 0 starts inside layer 1 (its bias at 620): it must wait for layer 1, not layer 2.
  EXPECT_TRUE(at[2].empty());
  EXPECT_EQ(at[1], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(at[0], (std::vector<size_t>{2}));
}

TEST(BucketsByReadyLayer, BucketsAlignedWithLayersLaunchLayerByLayer) {
  // Layer 0 = 30 + 10 floats, layer 1 = 60 + 20: caps of 80 then 40 floats cut at the layers.
  auto plan = planBuckets(views({30, 10, 60, 20}), 4 * 80, 4 * 40);
  ASSERT_EQ(plan.size(), 2u);
  auto at = bucketsByReadyLayer(plan, {0, 40});
  EXPECT_EQ(at[1], (std::vector<size_t>{0}));
  EXPECT_EQ(at[0], (std::vector<size_t>{1}));
  EXPECT_TRUE(bucketsByReadyLayer(plan, {}).empty());
}

// A communicator that records each allreduce and lets the test wait for one to start.
class RecordingComm : public comm::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "recording"; }
  std::string allreduceAlgorithm(size_t) const override { return "recorded"; }
  core::Status allreduceSum(float* data, size_t count, const comm::AllreduceOptions&) override {
    for (size_t i = 0; i < count; ++i) data[i] *= 2;  // as if the peer had the same gradients
    std::lock_guard lock(mu);
    offsets.push_back(static_cast<size_t>(data - base));
    cv.notify_all();
    return core::Status::Ok();
  }
  core::Status broadcast(void*, size_t, int) override { return core::Status::Ok(); }
  core::Status barrier() override { return core::Status::Ok(); }

  // True once `n` allreduces have happened (false after a generous deadline).
  bool waitForCalls(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return offsets.size() >= n; });
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<size_t> offsets;
  float* base = nullptr;
};

TEST(GradientBuckets, LaunchesEachBucketAsSoonAsItsRangeIsReady) {
  RecordingComm comm;
  std::vector<float> grads(650, 1.0f);
  comm.base = grads.data();
  GradientBuckets buckets(&comm, grads.data(), planBuckets(views({100, 200, 300, 50}), 200, 2000),
                          {});
  buckets.beginStep();
  // Backward reports the last parameter first; each completed bucket goes out before backward
  // reaches the earlier layers (finishStep is not called until the end).
  buckets.onGradsReady(600, 50);
  ASSERT_TRUE(comm.waitForCalls(1)) << "bucket 0 was not launched while backward ran";
  buckets.onGradsReady(300, 300);
  buckets.onGradsReady(100, 200);
  ASSERT_TRUE(comm.waitForCalls(2)) << "bucket 1 was not launched while backward ran";
  buckets.onGradsReady(0, 100);
  ASSERT_TRUE(buckets.finishStep().ok());
  EXPECT_EQ(comm.offsets, (std::vector<size_t>{600, 100, 0}));
  // Summed over 2 "ranks" then averaged: every gradient is back to 1.
  for (float g : grads) ASSERT_FLOAT_EQ(g, 1.0f);
  EXPECT_EQ(buckets.lastStep().bucket_seconds.size(), 3u);
  EXPECT_EQ(buckets.lastStep().bytes, 650u * 4);
}

TEST(GradientBuckets, AveragesAcrossThreadRanks) {
  constexpr int kRanks = 3;
  auto comms = comm::makeInProcCommunicators(kRanks);
  std::vector<std::vector<float>> grads(kRanks);
  std::vector<std::thread> threads;
  std::vector<core::Status> results(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      comm::Communicator* comm = comms[r].get();
      grads[r].assign(1000, static_cast<float>(r + 1));
      GradientBuckets buckets(comm, grads[r].data(), planBuckets(views({400, 400, 200}), 800, 1600),
                              {});
      for (int step = 0; step < 3; ++step) {
        for (auto& g : grads[r]) g = static_cast<float>(r + 1);
        buckets.beginStep();
        buckets.onGradsReady(800, 200);
        buckets.onGradsReady(400, 400);
        buckets.onGradsReady(0, 400);
        results[r] = buckets.finishStep();
        if (!results[r].ok()) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(results[r].ok()) << results[r].message();
    for (float g : grads[r]) ASSERT_FLOAT_EQ(g, 2.0f);  // mean of 1, 2, 3
  }
}

}  // namespace
}  // namespace ringmaster::trainer
