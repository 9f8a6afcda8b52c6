// A network cut into stages is the same network: the stages' parameters are the Model's, and
// chaining their forwards and backwards over micro-batches gives the Model's gradients on the
// whole batch (up to float rounding), for MLP and CNN cuts, including one stage per layer.

#include "trainer/model/model_stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/model/tests/test_util.h"

namespace ringmaster::trainer::model {
namespace {

using testing::near;
using testing::randomFloats;
using testing::randomLabels;

ModelConfig mlp() {
  ModelConfig c;
  c.hidden = {32, 24, 16};
  return c;
}

ModelConfig cnn() {
  ModelConfig c;
  c.type = ModelKind::kCnn;
  c.conv_channels = {4, 6};
  c.cnn_hidden = 12;
  return c;
}

std::vector<std::unique_ptr<ModelStage>> cut(const ModelConfig& config,
                                             const std::vector<int>& starts, int micro_batch,
                                             int slots) {
  const int layers = *ModelStage::layerCount(config);
  std::vector<std::unique_ptr<ModelStage>> stages;
  for (size_t s = 0; s < starts.size(); ++s) {
    const int end = s + 1 < starts.size() ? starts[s + 1] : layers;
    auto stage = ModelStage::create(config, 7, micro_batch, starts[s], end, slots);
    EXPECT_TRUE(stage.ok()) << stage.status().toString();
    stages.push_back(std::move(*stage));
  }
  return stages;
}

std::vector<float> concat(std::vector<std::unique_ptr<ModelStage>>& stages, bool grads) {
  std::vector<float> all;
  for (auto& s : stages) {
    auto span = grads ? s->grads() : s->params();
    all.insert(all.end(), span.begin(), span.end());
  }
  return all;
}

struct CutCase {
  const char* name;
  ModelConfig config;
  std::vector<int> starts;  // first layer of each stage
  int micro_batches;
};

class ModelStageCut : public ::testing::TestWithParam<CutCase> {};

TEST_P(ModelStageCut, StagesHoldTheModelsParametersAndSumToItsGradients) {
  const CutCase& c = GetParam();
  constexpr int kBatch = 12;
  const int micro = kBatch / c.micro_batches;
  auto model = Model::create(c.config, 7, kBatch);
  ASSERT_TRUE(model.ok());
  auto stages = cut(c.config, c.starts, micro, c.micro_batches);
  ASSERT_EQ(stages.size(), c.starts.size());
  const auto params = (*model)->params();
  EXPECT_EQ(concat(stages, false), std::vector<float>(params.begin(), params.end()));

  const size_t in = (*model)->inputSize();
  const auto x = randomFloats(kBatch * in, 3);
  const auto y = randomLabels(kBatch, 10, 4);
  const double mean_loss = (*model)->forwardLoss(x.data(), y.data(), kBatch, nullptr);
  (*model)->backward({});

  // GPipe order with no communication: every forward, then every backward.
  double loss_sum = 0;
  for (int m = 0; m < c.micro_batches; ++m) {
    std::memcpy(stages[0]->input(m), x.data() + m * micro * in, sizeof(float) * micro * in);
    for (size_t s = 0; s < stages.size(); ++s) {
      const float* out = stages[s]->forward(m, micro);
      if (s + 1 < stages.size()) {
        std::memcpy(stages[s + 1]->input(m), out, sizeof(float) * micro * stages[s]->outputSize());
      }
    }
    loss_sum += stages.back()->loss(m, y.data() + m * micro, micro,
                                    static_cast<float>(micro) / kBatch, nullptr);
  }
  for (int m = 0; m < c.micro_batches; ++m) {
    for (size_t s = stages.size(); s-- > 0;) {
      const float* din = stages[s]->backward(m, micro);
      if (s == 0) {
        EXPECT_EQ(din, nullptr);
      } else {
        std::memcpy(stages[s - 1]->outputGrad(m), din,
                    sizeof(float) * micro * stages[s]->inputSize());
      }
    }
  }
  EXPECT_TRUE(near(loss_sum / kBatch, mean_loss, 1e-6, 1e-5));
  const auto want = (*model)->grads();
  const auto got = concat(stages, true);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(near(got[i], want[i], 1e-6, 1e-4))
        << "parameter " << i << ": " << got[i] << " vs " << want[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Cuts, ModelStageCut,
                         ::testing::Values(CutCase{"mlp_whole", mlp(), {0}, 1},
                                           CutCase{"mlp_2_stages", mlp(), {0, 2}, 4},
                                           CutCase{"mlp_every_layer", mlp(), {0, 1, 2, 3}, 3},
                                           CutCase{"cnn_3_stages", cnn(), {0, 1, 3}, 2}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ModelStage, GradientsAccumulateUntilZeroedAndClearingEarlyChangesNothing) {
  auto stages = cut(mlp(), {0}, 4, 1);
  ModelStage& s = *stages[0];
  const auto x = randomFloats(4 * s.inputSize(), 5);
  const auto y = randomLabels(4, 10, 6);
  auto step = [&] {
    std::memcpy(s.input(0), x.data(), sizeof(float) * x.size());
    s.forward(0, 4);
    s.loss(0, y.data(), 4, 1.0f, nullptr);
    s.backward(0, 4);
  };
  step();
  const std::vector<float> once(s.grads().begin(), s.grads().end());
  step();
  for (size_t i = 0; i < once.size(); i += 97) EXPECT_FLOAT_EQ(s.grads()[i], 2 * once[i]);
  s.zeroGrads();
  step();  // overwrites what the two steps left
  EXPECT_EQ(std::vector<float>(s.grads().begin(), s.grads().end()), once);
  step();
  s.zeroGrads();  // and no backward after it: grads() reads zeros
  for (float g : s.grads()) ASSERT_EQ(g, 0.0f);
  // Zeros written early (clearGrads) and then added to: the gradients the overwrite gives.
  step();
  s.zeroGrads();
  s.clearGrads();
  step();
  EXPECT_EQ(std::vector<float>(s.grads().begin(), s.grads().end()), once);
  s.clearGrads();  // nothing pending: keeps them
  EXPECT_EQ(std::vector<float>(s.grads().begin(), s.grads().end()), once);
}

// The StageCompute calls the executor makes: loadInput is the copy into input(), the losses
// added are loss()'s and evaluationLoss()'s summed until taken, and weight versions beyond 0
// are buffers of the parameters' size that the layers can be pointed at.
TEST(ModelStage, StageComputeCallsAreTheStagesOwn) {
  auto a = cut(mlp(), {0}, 4, 1), b = cut(mlp(), {0}, 4, 1);
  const auto x = randomFloats(4 * a[0]->inputSize(), 8);
  const auto y = randomLabels(4, 10, 9);
  std::memcpy(a[0]->input(0), x.data(), sizeof(float) * x.size());
  b[0]->loadInput(0, x.data(), 4);
  EXPECT_EQ(std::memcmp(a[0]->input(0), b[0]->input(0), sizeof(float) * x.size()), 0);
  a[0]->forward(0, 4);
  b[0]->forward(0, 4);
  int hits = 0, eval_hits = 0;
  const double want = a[0]->loss(0, y.data(), 4, 0.5f, &hits);
  b[0]->addLoss(0, y.data(), 4, 0.5f);
  EXPECT_EQ(std::memcmp(a[0]->outputGrad(0), b[0]->outputGrad(0), sizeof(float) * 4 * 10), 0);
  const double eval = a[0]->evaluationLoss(0, y.data(), 4, &eval_hits);
  b[0]->addEvaluationLoss(0, y.data(), 4);
  const StageLosses got = b[0]->takeLosses();
  EXPECT_EQ(got.loss_sum, want + eval);
  EXPECT_EQ(got.correct, hits + eval_hits);
  EXPECT_EQ(b[0]->takeLosses().loss_sum, 0.0) << "taken losses start again from 0";

  ModelStage& s = *b[0];
  ASSERT_EQ(s.weightVersion(0).data(), s.params().data());
  const std::span<float> v2 = s.weightVersion(2);
  ASSERT_EQ(v2.size(), s.params().size());
  EXPECT_NE(v2.data(), s.weightVersion(1).data());
  EXPECT_EQ(s.weightVersion(2).data(), v2.data()) << "a version is made once";
  s.copyWeights(s.params(), v2);
  EXPECT_TRUE(std::equal(v2.begin(), v2.end(), s.params().begin()));
  // Layers on a version compute with it: zero weights give every class the same logit.
  std::fill(v2.begin(), v2.end(), 0.0f);
  s.useWeights(v2);
  s.loadInput(0, x.data(), 4);
  const float* logits = s.forward(0, 4);
  for (int c = 1; c < 10; ++c) EXPECT_EQ(logits[c], logits[0]);
}

TEST(ModelStage, ActivationMemoryCountsTheSlotsUsed) {
  auto stages = cut(mlp(), {0, 2}, 8, 4);
  ModelStage& s = *stages[1];  // layers 2 and 3: 24 -> 16 -> 10
  EXPECT_EQ(s.activationBytes(), 0u);
  s.input(0);
  // input 24 + outputs 16 and 10 + dout 10 + din 24 floats per row, 8 rows.
  const size_t per_slot = (24 + 16 + 10 + 10 + 24) * 8 * sizeof(float);
  EXPECT_EQ(s.activationBytes(), per_slot);
  s.input(0);
  EXPECT_EQ(s.activationBytes(), per_slot);
  s.input(3);
  EXPECT_EQ(s.activationBytes(), 2 * per_slot);
}

TEST(ModelStage, RejectsARangeOutsideTheNetworkNamingIt) {
  EXPECT_EQ(*ModelStage::layerCount(mlp()), 4);
  for (auto [first, end] : {std::pair{0, 5}, std::pair{2, 2}, std::pair{-1, 1}}) {
    auto s = ModelStage::create(mlp(), 7, 4, first, end, 1);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("4 layers of mlp:784-32-24-16-10"), std::string::npos)
        << s.status().message();
  }
  EXPECT_FALSE(ModelStage::create(mlp(), 7, 4, 0, 1, 0).ok());
  EXPECT_FALSE(ModelStage::create(mlp(), 7, 0, 0, 1, 1).ok()) << "micro-batch of 0 rows";
}

}  // namespace
}  // namespace ringmaster::trainer::model
