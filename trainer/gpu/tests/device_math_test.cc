// The GPU step's arithmetic (device_math.h) checked on the host against the CPU path it must
// match: the model's softmax cross-entropy, the optimizers, the schedule. Runs without a GPU.

#include "trainer/gpu/device_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/model/softmax_cross_entropy.h"
#include "trainer/model/tests/test_util.h"
#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer::gpu {
namespace {

using model::testing::near;
using model::testing::randomFloats;
using model::testing::randomLabels;

TEST(FeistelPermutation, IsAPermutationOfEverySize) {
  for (uint32_t n : {1u, 2u, 3u, 7u, 64u, 1000u, 10000u, 60000u, 65536u, 65537u}) {
    const FeistelPermutation p = FeistelPermutation::make(n, 42, 3);
    std::vector<char> seen(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t x = p(i);
      ASSERT_LT(x, n) << "n=" << n << " i=" << i;
      ASSERT_FALSE(seen[x]) << "n=" << n << ": " << x << " twice";
      seen[x] = 1;
    }
  }
}

TEST(FeistelPermutation, DependsOnSeedAndEpochOnly) {
  const uint32_t n = 60000;
  const auto a = FeistelPermutation::make(n, 42, 0), again = FeistelPermutation::make(n, 42, 0);
  const auto next_epoch = FeistelPermutation::make(n, 42, 1);
  const auto other_seed = FeistelPermutation::make(n, 43, 0);
  int same_epoch = 0, same_seed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(a(i), again(i));
    same_epoch += a(i) == next_epoch(i);
    same_seed += a(i) == other_seed(i);
  }
  // Two independent orders agree in about one position (n * 1/n).
  EXPECT_LT(same_epoch, 20);
  EXPECT_LT(same_seed, 20);
}

TEST(FeistelPermutation, ShufflesWell) {
  // A batch of 128 consecutive positions should look like a random draw: its samples spread
  // over the whole set (not a block), and the first positions move far from where they were.
  const uint32_t n = 60000;
  const auto p = FeistelPermutation::make(n, 7, 2);
  uint32_t lo = n, hi = 0;
  double mean = 0;
  for (uint32_t i = 0; i < 128; ++i) {
    lo = std::min(lo, p(i));
    hi = std::max(hi, p(i));
    mean += p(i) / 128.0;
  }
  EXPECT_LT(lo, n / 20);
  EXPECT_GT(hi, n - n / 20);
  EXPECT_NEAR(mean, n / 2.0, n * 0.1);
  int fixed = 0;
  for (uint32_t i = 0; i < n; ++i) fixed += p(i) == i;
  EXPECT_LT(fixed, 20);
}

TEST(SoftmaxCrossEntropyRow, MatchesTheCpuModel) {
  const int batch = 37, classes = 10;
  const auto logits = randomFloats(batch * classes, 5, -6.0f, 6.0f);
  const auto labels = randomLabels(batch, classes, 6);
  std::vector<float> cpu_grad(batch * classes);
  int cpu_hits = 0;
  const double cpu_loss = model::softmaxCrossEntropy(logits.data(), labels.data(), batch, classes,
                                                     cpu_grad.data(), &cpu_hits);
  double loss = 0;
  int hits = 0;
  std::vector<float> grad(batch * classes);
  for (int r = 0; r < batch; ++r) {
    int hit = 0;
    loss += softmaxCrossEntropyRow(
        logits.data() + r * classes, classes, labels[r], 1.0f / batch, grad.data() + r * classes,
        [](float d) { return d; }, &hit);
    hits += hit;
  }
  EXPECT_EQ(hits, cpu_hits);
  EXPECT_TRUE(near(loss, cpu_loss, 1e-5, 1e-6)) << loss << " vs " << cpu_loss;
  for (int i = 0; i < batch * classes; ++i)
    ASSERT_TRUE(near(grad[i], cpu_grad[i], 1e-8, 1e-6))
        << i << ": " << grad[i] << " vs " << cpu_grad[i];
}

TEST(SoftmaxCrossEntropyRow, EvaluationSkipsTheGradientAndBreaksTiesLikeTheCpu) {
  const float z[4] = {1.0f, 3.0f, 3.0f, -2.0f};
  int hit = 0;
  float* none = nullptr;
  const float loss = softmaxCrossEntropyRow(
      z, 4, 2, 1.0f, none, [](float d) { return d; }, &hit);
  EXPECT_EQ(hit, 0) << "the first maximum (class 1) is the prediction";
  const double expected = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(-2.0)) - 3.0;
  EXPECT_NEAR(loss, expected, 1e-5);
}

// Runs `steps` updates of the CPU optimizer and of the element rule; they must agree.
void expectOptimizerParity(const optim::OptimizerConfig& config, int steps) {
  const size_t n = 257;
  auto cpu_params = randomFloats(n, 11);
  auto gpu_params = cpu_params;
  auto cpu = optim::Optimizer::create(config, n);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  std::vector<float> buf(n, 0.0f), m(n, 0.0f), v(n, 0.0f);
  const LrSchedule schedule{config.learning_rate, 0, false};
  for (int t = 0; t < steps; ++t) {
    const auto grads = randomFloats(n, 100 + t);
    (*cpu)->step(cpu_params, grads);
    const double lr = learningRateAt(schedule, t);
    if (config.type == optim::OptimizerKind::kSgd) {
      const SgdScalars s{static_cast<float>(lr), static_cast<float>(config.momentum),
                         static_cast<float>(config.weight_decay), config.nesterov};
      for (size_t i = 0; i < n; ++i) sgdElement(&gpu_params[i], grads[i], &buf[i], s);
    } else {
      const AdamScalars s =
          adamScalarsAt(lr, config.beta1, config.beta2, config.weight_decay, config.epsilon, t + 1);
      for (size_t i = 0; i < n; ++i) adamElement(&gpu_params[i], grads[i], &m[i], &v[i], s);
    }
  }
  for (size_t i = 0; i < n; ++i)
    ASSERT_TRUE(near(gpu_params[i], cpu_params[i], 1e-7, 1e-6))
        << (*cpu)->type() << " param " << i << ": " << gpu_params[i] << " vs " << cpu_params[i];
}

TEST(OptimizerElements, SgdMatchesTheCpuOptimizer) {
  optim::OptimizerConfig c;
  c.type = optim::OptimizerKind::kSgd;
  c.learning_rate = 0.05;
  c.momentum = 0.9;
  c.weight_decay = 1e-4;
  expectOptimizerParity(c, 5);
  c.nesterov = true;
  expectOptimizerParity(c, 5);
  c.momentum = 0;
  c.nesterov = false;
  expectOptimizerParity(c, 3);
}

TEST(OptimizerElements, AdamMatchesTheCpuOptimizer) {
  optim::OptimizerConfig c;
  c.type = optim::OptimizerKind::kAdam;
  c.learning_rate = 1e-3;
  c.weight_decay = 1e-2;
  expectOptimizerParity(c, 6);
}

TEST(LearningRate, CosineDecaysToZeroAtTheLastStep) {
  const LrSchedule cosine{0.1, 100, true};
  EXPECT_DOUBLE_EQ(learningRateAt(cosine, 0), 0.1);
  EXPECT_NEAR(learningRateAt(cosine, 50), 0.05, 1e-12);
  EXPECT_NEAR(learningRateAt(cosine, 100), 0.0, 1e-12);
  const LrSchedule constant{0.1, 100, false};
  EXPECT_DOUBLE_EQ(learningRateAt(constant, 77), 0.1);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(toBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(toBf16Bits(-2.0f), 0xC000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(toBf16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to the even one (1 + 2^-6).
  EXPECT_EQ(toBf16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  // Just above halfway rounds up.
  EXPECT_EQ(toBf16Bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_TRUE(std::isnan(fromBf16Bits(toBf16Bits(std::nanf("")))));
  EXPECT_EQ(fromBf16Bits(toBf16Bits(INFINITY)), INFINITY);
  for (float f : {0.1f, 3.14159f, -1234.5f, 6.0e-5f}) {
    const float back = fromBf16Bits(toBf16Bits(f));
    EXPECT_LE(std::fabs(back - f), std::fabs(f) * std::ldexp(1.0f, -8)) << f;
  }
}

}  // namespace
}  // namespace ringmaster::trainer::gpu
