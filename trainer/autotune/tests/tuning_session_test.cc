// Autotune's schedule over the steps: warm-up steps discarded, the median of the measured ones
// reported, the search driven to its end one step at a time; and the bucket knobs' grids for
// models of different sizes.

#include "trainer/autotune/tuning_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ringmaster::trainer::autotune {
namespace {

Knob knob(const std::string& name, std::vector<double> values, size_t default_index) {
  return Knob{name, std::move(values), default_index};
}

TEST(TuningSession, DiscardsWarmUpAndReportsTheMedianOfEachSample) {
  SessionOptions options;
  options.warmup_steps = 2;
  options.measure_steps = 5;
  options.search.max_samples = 2;
  TuningSession session({knob("k", {1, 2}, 0)}, options);
  EXPECT_EQ(session.stepsPerSample(), 7);
  EXPECT_EQ(session.describeSpace(), "k in {1, 2}");
  EXPECT_EQ(session.current(), (Setting{0}));
  // Warm-up steps far slower, one outlier among the measured ones: the median ignores both.
  const std::vector<double> defaults = {9, 9, 1.0, 1.1, 50, 0.9, 1.05};
  for (size_t i = 0; i + 1 < defaults.size(); ++i) {
    EXPECT_FALSE(session.record(defaults[i]).has_value()) << "step " << i;
  }
  std::optional<Measured> first = session.record(defaults.back());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->setting, (Setting{0}));
  EXPECT_DOUBLE_EQ(first->seconds, 1.05);
  EXPECT_EQ(session.current(), (Setting{1}));  // the search moved on
  std::optional<Measured> second;
  for (int i = 0; i < 7; ++i) second = session.record(0.5);
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(session.done());
  EXPECT_EQ(session.current(), (Setting{1}));  // the best, from now on
  EXPECT_FALSE(session.record(0.5).has_value());
  EXPECT_EQ(session.search().samples().size(), 2u);
}

// Driven step by step against a step-time model, the session finds its best setting within the
// budget and every step until then counts.
TEST(TuningSession, RunsTheSearchToItsEndOneStepAtATime) {
  SessionOptions options;
  options.search.max_samples = 30;
  const std::vector<Knob> knobs = bucketKnobs(size_t{100} << 20, 1, 25);
  TuningSession session(knobs, options);
  // Fastest at bucketCapMB 8 and firstBucketCapMB 0.5.
  auto step_time = [&](const Setting& s) {
    const double cap = *session.valueOf(s, kBucketCapKnob);
    const double first = *session.valueOf(s, kFirstBucketCapKnob);
    return 1.0 + 0.1 * std::abs(std::log2(cap / 8)) + 0.05 * std::abs(std::log2(first / 0.5));
  };
  int steps = 0;
  while (!session.done() && steps < 10'000) {
    session.record(step_time(session.current()));
    ++steps;
  }
  ASSERT_TRUE(session.done());
  EXPECT_EQ(session.describe(session.current()), "bucketCapMB=8 firstBucketCapMB=0.5");
  EXPECT_LE(session.search().samples().size(), 30u);
  EXPECT_EQ(steps, static_cast<int>(session.search().samples().size()) * session.stepsPerSample());
}

TEST(BucketKnobs, DoubleUpToTheModelAndKeepTheConfiguredCaps) {
  struct Row {
    const char* what;
    size_t model_bytes;
    double first, cap;
    std::vector<double> caps, firsts;
  };
  const Row rows[] = {
      {"the MLP (2.6 MB), PyTorch's defaults",
       2'678'824,
       1,
       25,
       {1, 2, 4, 25},
       {0.25, 0.5, 1, 2, 4}},
      {"a model under a MiB", 100'000, 1, 25, {1, 25}, {0.25, 1}},
      {"caps on the grid", 10u << 20, 2, 8, {1, 2, 4, 8, 16}, {0.25, 0.5, 1, 2, 4, 8, 16}},
      {"a 1.5 GB model reaches past 256 MB",
       size_t{1536} << 20,
       1,
       25,
       {1, 2, 4, 8, 16, 25, 32, 64, 128, 256, 512, 1024},
       {0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}},
  };
  for (const Row& row : rows) {
    const std::vector<Knob> knobs = bucketKnobs(row.model_bytes, row.first, row.cap);
    ASSERT_EQ(knobs.size(), 2u);
    EXPECT_EQ(knobs[0].name, kBucketCapKnob);
    EXPECT_EQ(knobs[0].values, row.caps) << row.what;
    EXPECT_EQ(knobs[0].values[knobs[0].default_index], row.cap) << row.what;
    EXPECT_EQ(knobs[1].name, kFirstBucketCapKnob);
    EXPECT_EQ(knobs[1].values, row.firsts) << row.what;
    EXPECT_EQ(knobs[1].values[knobs[1].default_index], row.first) << row.what;
  }
}

TEST(MicroBatchKnob, PowersOfTwoDividingTheBatchDownToFourRowsAndTheConfiguredCount) {
  struct Row {
    const char* what;
    int64_t batch;
    int32_t given;
    std::vector<double> values;
  };
  const Row rows[] = {
      {"the README's batch, one per stage", 128, 2, {1, 2, 4, 8, 16, 32}},
      {"a count off the powers of two (32 would leave 3 rows)", 96, 3, {1, 2, 3, 4, 8, 16}},
      {"an odd batch", 9, 9, {1, 9}},
      {"a batch under four rows", 2, 1, {1}},
      {"the configured count past four rows", 64, 64, {1, 2, 4, 8, 16, 64}},
  };
  for (const Row& row : rows) {
    const Knob knob = microBatchKnob(row.batch, row.given);
    EXPECT_EQ(knob.name, kMicroBatchesKnob);
    EXPECT_EQ(knob.values, row.values) << row.what;
    EXPECT_EQ(knob.values[knob.default_index], row.given) << row.what;
  }
}

TEST(BlasThreadsKnob, DoublingUpToTheCoresAndTheConfiguredCount) {
  struct Row {
    const char* what;
    int cores;
    int32_t given;
    std::vector<double> values;
  };
  const Row rows[] = {
      {"one core: nothing to search", 1, 1, {1}},
      {"two cores", 2, 1, {1, 2}},
      {"six cores", 6, 1, {1, 2, 4}},
      {"a configured count past the cores", 2, 8, {1, 2, 8}},
      {"cores unknown", 0, 1, {1}},
  };
  for (const Row& row : rows) {
    const Knob knob = blasThreadsKnob(row.cores, row.given);
    EXPECT_EQ(knob.name, kBlasThreadsKnob);
    EXPECT_EQ(knob.values, row.values) << row.what;
    EXPECT_EQ(knob.values[knob.default_index], row.given) << row.what;
  }
}

TEST(TcpDoublingKnob, FourKibDoublingToFourMibAndTheTransportsOwn) {
  const Knob two_ranks = tcpDoublingKnob(32);
  EXPECT_EQ(two_ranks.name, kTcpDoublingKnob);
  EXPECT_EQ(two_ranks.values,
            (std::vector<double>{4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(two_ranks.values[two_ranks.default_index], 32);
  const Knob three_ranks = tcpDoublingKnob(48);  // 16 KiB a rank: off the powers of two
  EXPECT_EQ(three_ranks.values.size(), 12u);
  EXPECT_EQ(three_ranks.values[three_ranks.default_index], 48);
}

}  // namespace
}  // namespace ringmaster::trainer::autotune
