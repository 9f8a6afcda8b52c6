// PipeDream's weight stashing: a stage's backward of a micro-batch runs on the weights its
// forward used, and the gradient then updates the newest weights. Two stages over inproc run
// a stream of micro-batches that straddles mini-batches; a one-thread reference that plays the
// same per-stage orders, stashing by hand, lands on bitwise the same parameters, and the same
// reference without stashing does not (so the check can tell). The stream runs over inproc and
// over the model of NCCL's point-to-point rules (comm/tests/nccl_model.h) that GPU stages meet.

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "trainer/comm/tests/rank_threads.h"
#include "trainer/model/model_stage.h"
#include "trainer/model/tests/test_util.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline/schedule.h"
#include "trainer/pipeline/stage_executor.h"

namespace ringmaster::trainer::pipeline {
namespace {

constexpr int kStages = 2, kMicro = 2, kRows = 4, kBatches = 3;
constexpr uint64_t kSeed = 5;

model::ModelConfig network() {
  model::ModelConfig c;
  c.hidden = {16, 12};
  return c;
}

optim::OptimizerConfig sgd() {
  optim::OptimizerConfig c;
  c.learning_rate = 0.2;  // large steps: a backward on the wrong weights shows
  c.momentum = 0.5;
  return c;
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};
Batch batchAt(int b) {
  return {model::testing::randomFloats(kMicro * kRows * 784, 300 + b),
          model::testing::randomLabels(kMicro * kRows, 10, 400 + b)};
}

std::unique_ptr<model::ModelStage> makeStage(int s, int slots) {
  const int first = s == 0 ? 0 : 2, end = s == 0 ? 2 : 3;
  auto stage = model::ModelStage::create(network(), kSeed, kRows, first, end, slots);
  EXPECT_TRUE(stage.ok()) << stage.status().toString();
  return std::move(*stage);
}

std::vector<std::vector<float>> runPipeDream(const std::string& backend) {
  auto comms = comm::testing::makeCommunicators(backend, kStages);
  std::vector<std::vector<float>> params(kStages);
  comm::testing::runRanks(kStages, [&](int s) {
    auto stage = makeStage(s, kStages - s);
    auto opt = optim::Optimizer::create(sgd(), stage->params().size());
    StageLinks links{comms[s].get(), s > 0 ? s - 1 : -1, s + 1 < kStages ? s + 1 : -1, {}};
    StageExecutor executor(*stage, ScheduleKind::kOneFOneB, s, kStages, kMicro, links);
    ASSERT_TRUE(executor.beginStream(kMicro * kBatches).ok());
    auto apply = [&](std::span<const float> newest, std::span<float> next) {
      (*opt)->stepInto(newest, next, stage->grads());
      return true;
    };
    for (int b = 0; b < kBatches; ++b) {
      const Batch d = batchAt(b);
      auto stats = executor.runStream({d.x.data(), d.y.data(), kMicro * kRows}, b, apply);
      ASSERT_TRUE(stats.ok()) << stats.status().toString();
    }
    auto drained = executor.drainStream(kBatches, apply);
    ASSERT_TRUE(drained.ok()) << drained.status().toString();
    EXPECT_TRUE(executor.streamDrained());
    params[s].assign(stage->params().begin(), stage->params().end());
  });
  return params;
}

// The same per-stage orders in one thread, in any order the dependencies allow.
std::vector<std::vector<float>> reference(bool stash_weights) {
  std::vector<std::unique_ptr<model::ModelStage>> stages;
  std::vector<std::unique_ptr<optim::Optimizer>> opts;
  std::vector<std::vector<PipelineOp>> ops;
  for (int s = 0; s < kStages; ++s) {
    stages.push_back(makeStage(s, kStages - s));
    opts.push_back(
        std::move(optim::Optimizer::create(sgd(), stages.back()->params().size()).value()));
    ops.push_back(*stageSchedule(ScheduleKind::kOneFOneB, s, kStages, kMicro * kBatches));
  }
  std::vector<Batch> data;
  for (int b = 0; b < kBatches; ++b) data.push_back(batchAt(b));
  // stash[s][slot]: the weights stage s's forward of the slot's micro-batch used.
  std::vector<std::vector<std::vector<float>>> stash(kStages);
  std::vector<size_t> next(kStages, 0);
  std::vector<std::vector<bool>> forwarded(kStages, std::vector<bool>(kMicro * kBatches)),
      backwarded = forwarded;
  // What stage s sent on, by micro-batch: taken when the receiver runs that pass (a slot may
  // still hold an earlier micro-batch until then).
  std::vector<std::map<int, std::vector<float>>> activations(kStages), gradients(kStages);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < kStages; ++s) {
      if (next[s] == ops[s].size()) continue;
      const PipelineOp op = ops[s][next[s]];
      model::ModelStage& st = *stages[s];
      const int slot = op.micro % st.slots(), b = op.micro / kMicro, m = op.micro % kMicro;
      auto params = st.params();
      if (op.kind == PipelineOp::kForward) {
        if (s > 0 && !forwarded[s - 1][op.micro]) continue;
        if (s == 0) {
          std::memcpy(st.input(slot), data[b].x.data() + m * kRows * 784,
                      sizeof(float) * kRows * 784);
        } else {
          const std::vector<float>& in = activations[s - 1].at(op.micro);
          std::copy(in.begin(), in.end(), st.input(slot));
        }
        stash[s].resize(st.slots());
        stash[s][slot].assign(params.begin(), params.end());
        const float* out = st.forward(slot, kRows);
        if (s + 1 < kStages) {
          activations[s][op.micro].assign(out, out + kRows * st.outputSize());
        } else {
          st.loss(slot, data[b].y.data() + m * kRows, kRows, 1.0f, nullptr);
        }
        forwarded[s][op.micro] = true;
      } else {
        if (s + 1 < kStages && !backwarded[s + 1][op.micro]) continue;
        if (s + 1 < kStages) {
          const std::vector<float>& g = gradients[s + 1].at(op.micro);
          std::copy(g.begin(), g.end(), st.outputGrad(slot));
        }
        const std::vector<float> latest(params.begin(), params.end());
        if (stash_weights) std::copy(stash[s][slot].begin(), stash[s][slot].end(), params.begin());
        st.zeroGrads();
        const float* din = st.backward(slot, kRows);
        std::copy(latest.begin(), latest.end(), params.begin());
        opts[s]->step(params, st.grads());
        if (s > 0) gradients[s][op.micro].assign(din, din + kRows * st.inputSize());
        backwarded[s][op.micro] = true;
      }
      ++next[s];
      progressed = true;
    }
  }
  std::vector<std::vector<float>> out;
  for (auto& st : stages) out.emplace_back(st->params().begin(), st->params().end());
  return out;
}

TEST(PipeDream, BackwardRunsOnTheWeightsItsForwardUsed) {
  const auto stashed = reference(/*stash_weights=*/true);
  const auto unstashed = reference(/*stash_weights=*/false);
  for (const char* backend : {"inproc", "nccl-model"}) {
    const auto piped = runPipeDream(backend);
    ASSERT_EQ(piped.size(), stashed.size()) << backend;
    for (int s = 0; s < kStages; ++s) EXPECT_EQ(piped[s], stashed[s]) << backend << " stage " << s;
  }
  // Stage 0 runs two forwards before its first backward: without the stash its backward of
  // micro-batch 1 would see the weights micro-batch 0 already moved.
  EXPECT_NE(unstashed[0], stashed[0]) << "the reference cannot tell stashing from not";
}

TEST(PipeDream, TheStreamKeepsAtMostOneMicroBatchPerLaterStageInFlight) {
  for (int s = 0; s < 4; ++s) {
    auto ops = stageSchedule(ScheduleKind::kOneFOneB, s, 4, 100);
    ASSERT_TRUE(ops.ok());
    EXPECT_EQ(peakInFlight(*ops), 4 - s);
  }
}

}  // namespace
}  // namespace ringmaster::trainer::pipeline
