// Where the executor has a stage write its zeroed gradients: once per mini-batch, at the step's
// first receive (a wait for a neighbour's first pass), so that the backward that starts the
// drain only adds. The calls a stage sees are a table per schedule and stage; the gradients they
// give are the exactness tests' to check.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/comm/tests/rank_threads.h"
#include "trainer/model/model_stage.h"
#include "trainer/model/tests/test_util.h"
#include "trainer/pipeline/stage_executor.h"

namespace ringmaster::trainer::pipeline {
namespace {

// A stage that records its calls, as letters: z zeroGrads, c clearGrads, F forward, B backward.
class RecordingStage final : public model::StageCompute {
 public:
  explicit RecordingStage(model::ModelStage& stage) : stage_(stage) {}
  std::string calls;

  int slots() const override { return stage_.slots(); }
  int microBatch() const override { return stage_.microBatch(); }
  size_t inputSize() const override { return stage_.inputSize(); }
  size_t outputSize() const override { return stage_.outputSize(); }
  float* input(int slot) override { return stage_.input(slot); }
  void loadInput(int slot, const float* samples, int rows) override {
    stage_.loadInput(slot, samples, rows);
  }
  const float* forward(int slot, int rows) override {
    calls += 'F';
    return stage_.forward(slot, rows);
  }
  void addLoss(int slot, const int32_t* labels, int rows, float grad_scale) override {
    stage_.addLoss(slot, labels, rows, grad_scale);
  }
  void addEvaluationLoss(int slot, const int32_t* labels, int rows) override {
    stage_.addEvaluationLoss(slot, labels, rows);
  }
  model::StageLosses takeLosses() override { return stage_.takeLosses(); }
  float* outputGrad(int slot) override { return stage_.outputGrad(slot); }
  const float* backward(int slot, int rows) override {
    calls += 'B';
    return stage_.backward(slot, rows);
  }
  void zeroGrads() override {
    calls += 'z';
    stage_.zeroGrads();
  }
  void clearGrads() override {
    calls += 'c';
    stage_.clearGrads();
  }
  const core::Status& status() const override { return stage_.status(); }
  std::span<float> weightVersion(int version) override { return stage_.weightVersion(version); }
  void useWeights(std::span<float> weights) override { stage_.useWeights(weights); }
  void copyWeights(std::span<const float> from, std::span<float> to) override {
    stage_.copyWeights(from, to);
  }

 private:
  model::ModelStage& stage_;
};

struct Case {
  const char* name;
  ScheduleKind kind;
  int stages, micro;
  std::vector<std::string> calls;  // one step's, per stage
};

class GradClearing : public ::testing::TestWithParam<Case> {};

TEST_P(GradClearing, HappensOncePerStepAtTheFirstReceive) {
  const Case& c = GetParam();
  model::ModelConfig net;
  net.hidden = {32, 24, 16};  // four layers
  constexpr int kBatch = 8, kSteps = 2;
  auto comms = comm::testing::makeCommunicators("inproc", c.stages);
  std::vector<std::string> seen(static_cast<size_t>(c.stages));
  comm::testing::runRanks(c.stages, [&](int s) {
    const int layers = 4;
    const int first = s * layers / c.stages, end = (s + 1) * layers / c.stages;
    auto slots = StageExecutor::slotsNeeded(c.kind, s, c.stages, c.micro);
    ASSERT_TRUE(slots.ok());
    const int rows = (kBatch + c.micro - 1) / c.micro;
    auto stage = model::ModelStage::create(net, 3, rows, first, end, *slots);
    ASSERT_TRUE(stage.ok()) << stage.status().toString();
    RecordingStage recording(**stage);
    StageLinks links{comms[s].get(), s > 0 ? s - 1 : -1, s + 1 < c.stages ? s + 1 : -1, {}};
    StageExecutor executor(recording, c.kind, s, c.stages, c.micro, links);
    const auto x = model::testing::randomFloats(kBatch * (*stage)->inputSize(), 4);
    const auto y = model::testing::randomLabels(kBatch, 10, 5);
    for (int step = 0; step < kSteps; ++step) {
      recording.calls.clear();
      auto stats = executor.run({x.data(), y.data(), kBatch}, step);
      ASSERT_TRUE(stats.ok()) << stats.status().toString();
    }
    seen[static_cast<size_t>(s)] = recording.calls;  // the last step's: after a step, as always
  });
  for (int s = 0; s < c.stages; ++s) {
    EXPECT_EQ(seen[static_cast<size_t>(s)], c.calls[static_cast<size_t>(s)]) << "stage " << s;
  }
}

// The first stage receives first the gradient of its first micro-batch; every other stage first
// an activation. One stage receives nothing: its first backward starts the sums afresh itself.
INSTANTIATE_TEST_SUITE_P(
    Schedules, GradClearing,
    ::testing::Values(
        Case{"one_stage", ScheduleKind::kGPipe, 1, 2, {"zFFBB"}},
        Case{"gpipe_2x4", ScheduleKind::kGPipe, 2, 4, {"zFFFFcBBBB", "zcFFFFBBBB"}},
        Case{"onefoneb_2x4", ScheduleKind::kOneFOneB, 2, 4, {"zFFcBFBFBB", "zcFBFBFBFB"}},
        Case{"onefoneb_3x3", ScheduleKind::kOneFOneB, 3, 3, {"zFFFcBBB", "zcFFBFBB", "zcFBFBFB"}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ringmaster::trainer::pipeline
