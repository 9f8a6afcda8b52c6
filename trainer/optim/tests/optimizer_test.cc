#include "trainer/optim/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <vector>

namespace ringmaster::trainer::optim {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Optimizer> make(const OptimizerConfig& c, size_t n) {
  auto o = Optimizer::create(c, n);
  EXPECT_TRUE(o.ok()) << o.status().toString();
  return o.ok() ? std::move(o).value() : nullptr;
}

TEST(Sgd, PlainStepIsLearningRateTimesGradient) {
  OptimizerConfig c;
  c.learning_rate = 0.1;
  c.momentum = 0;
  auto o = make(c, 3);
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  const std::vector<float> g = {0.5f, 1.0f, -4.0f};
  o->step(p, g);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -2.1f);
  EXPECT_FLOAT_EQ(p[2], 0.9f);
  EXPECT_TRUE(o->state().empty());
  EXPECT_EQ(o->type(), "sgd");
}

// Population-based training swaps values between steps: momentum from 0 gets a buffer of zeros
// (the first step after is plain SGD's, as a fresh momentum run's), back to 0 keeps it unused.
TEST(Sgd, NewHyperparametersMakeTheStateTheyNeed) {
  OptimizerConfig c;
  c.learning_rate = 0.1;
  c.momentum = 0;
  auto o = make(c, 2);
  ASSERT_TRUE(o->state().empty());
  c.momentum = 0.9;
  c.learning_rate = 0.2;
  o->setHyperparameters(c);
  ASSERT_EQ(o->state().size(), 1u);
  EXPECT_EQ(*o->state()[0], (std::vector<float>{0, 0}));
  EXPECT_EQ(o->learningRate(), 0.2);
  std::vector<float> p = {1.0f, 1.0f};
  o->step(p, std::vector<float>{1.0f, -1.0f});
  EXPECT_FLOAT_EQ(p[0], 0.8f);
  EXPECT_FLOAT_EQ(p[1], 1.2f);
  o->step(p, std::vector<float>{1.0f, -1.0f});  // buf = 0.9 * 1 + 1
  EXPECT_FLOAT_EQ(p[0], 0.8f - 0.2f * 1.9f);
  c.momentum = 0;
  o->setHyperparameters(c);
  o->step(p, std::vector<float>{1.0f, -1.0f});  // plain again: buf = 0 * buf + g
  EXPECT_FLOAT_EQ(p[0], 0.8f - 0.2f * 1.9f - 0.2f);
}

TEST(Sgd, MomentumAndWeightDecayFollowTorchForThreeSteps) {
  OptimizerConfig c;
  c.learning_rate = 0.1;
  c.momentum = 0.9;
  c.weight_decay = 0.01;
  auto o = make(c, 1);
  std::vector<float> p = {1.0f};
  const std::vector<float> g = {0.5f};
  // Hand-computed: d = g + wd*p; buf = 0.9*buf + d; p -= 0.1*buf
  // step 1: d = 0.51,       buf = 0.51,       p = 0.949
  // step 2: d = 0.50949,    buf = 0.96849,    p = 0.852151
  // step 3: d = 0.50852151, buf = 1.38016251, p = 0.714134749
  const double want[] = {0.949, 0.852151, 0.714134749};
  for (double w : want) {
    o->step(p, g);
    EXPECT_NEAR(p[0], w, 1e-6);
  }
  ASSERT_EQ(o->state().size(), 1u);
  EXPECT_NEAR((*o->state()[0])[0], 1.38016251, 1e-6);
  EXPECT_EQ(o->stepCount(), 3);
}

TEST(Sgd, NesterovLooksAheadAlongTheMomentum) {
  OptimizerConfig c;
  c.learning_rate = 0.1;
  c.momentum = 0.9;
  c.nesterov = true;
  auto o = make(c, 1);
  std::vector<float> p = {1.0f};
  const std::vector<float> g = {1.0f};
  // step 1: buf = 1,   p -= 0.1*(1 + 0.9*1)   -> 0.81
  // step 2: buf = 1.9, p -= 0.1*(1 + 0.9*1.9) -> 0.539
  o->step(p, g);
  EXPECT_NEAR(p[0], 0.81, 1e-6);
  o->step(p, g);
  EXPECT_NEAR(p[0], 0.539, 1e-6);
}

TEST(Sgd, LongBufferUsesTheSameRuleEverywhere) {
  // Odd length exercises the vector body and its tail.
  OptimizerConfig c;
  auto o = make(c, 1001);
  std::vector<float> p(1001), g(1001), want(1001), buf(1001, 0.0f);
  for (int i = 0; i < 1001; ++i) {
    p[i] = want[i] = 0.001f * i;
    g[i] = std::sin(0.1f * i);
  }
  for (int s = 0; s < 3; ++s) {
    o->step(p, g);
    for (int i = 0; i < 1001; ++i) {
      buf[i] = 0.9f * buf[i] + g[i];
      want[i] -= 0.1f * buf[i];
    }
  }
  for (int i = 0; i < 1001; ++i) ASSERT_NEAR(p[i], want[i], 1e-6) << i;
}

// torch.optim.Adam in double, for comparison.
struct AdamRef {
  double lr, b1, b2, eps, wd, m = 0, v = 0;
  int t = 0;
  void step(double& p, double g) {
    ++t;
    g += wd * p;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double denom = std::sqrt(v) / std::sqrt(1 - std::pow(b2, t)) + eps;
    p -= lr / (1 - std::pow(b1, t)) * m / denom;
  }
};

TEST(Adam, FirstStepMovesEachParameterByTheLearningRate) {
  // Bias correction makes the first step lr * g / (|g| + eps) = lr * sign(g).
  OptimizerConfig c;
  c.type = OptimizerKind::kAdam;
  c.learning_rate = 0.01;
  auto o = make(c, 2);
  std::vector<float> p = {1.0f, 1.0f};
  const std::vector<float> g = {0.3f, -2.0f};
  o->step(p, g);
  EXPECT_NEAR(p[0], 0.99, 1e-6);
  EXPECT_NEAR(p[1], 1.01, 1e-6);
  EXPECT_EQ(o->type(), "adam");
  EXPECT_EQ(o->state().size(), 2u);
}

TEST(Adam, FollowsTorchWithBiasCorrectionAndWeightDecay) {
  OptimizerConfig c;
  c.type = OptimizerKind::kAdam;
  c.learning_rate = 0.001;
  c.weight_decay = 0.1;
  c.beta1 = 0.8;
  c.beta2 = 0.99;
  auto o = make(c, 1);
  AdamRef ref{0.001, 0.8, 0.99, 1e-8, 0.1};
  std::vector<float> p = {0.5f};
  double want = 0.5;
  const double grads[] = {0.2, -0.1, 0.4, 0.05, -0.3};
  for (double g : grads) {
    const std::vector<float> gv = {static_cast<float>(g)};
    o->step(p, gv);
    ref.step(want, g);
    EXPECT_NEAR(p[0], want, 1e-6);
  }
  EXPECT_NEAR((*o->state()[0])[0], ref.m, 1e-6);
  EXPECT_NEAR((*o->state()[1])[0], ref.v, 1e-7);
}

TEST(Adam, RestoredStateAndStepCountContinueTheSameTrajectory) {
  OptimizerConfig c;
  c.type = OptimizerKind::kAdam;
  auto a = make(c, 4);
  std::vector<float> pa = {1, 2, 3, 4};
  const std::vector<float> g = {0.1f, -0.2f, 0.3f, -0.4f};
  for (int i = 0; i < 3; ++i) a->step(pa, g);

  auto b = make(c, 4);
  std::vector<float> pb = pa;
  for (size_t i = 0; i < a->state().size(); ++i) *b->state()[i] = *a->state()[i];
  b->setStepCount(a->stepCount());
  a->step(pa, g);
  b->step(pb, g);
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(b->stepCount(), 4);
}

TEST(Optimizer, SetLearningRateAppliesToTheNextStep) {
  OptimizerConfig c;
  c.momentum = 0;
  auto o = make(c, 1);
  std::vector<float> p = {1.0f};
  const std::vector<float> g = {1.0f};
  o->setLearningRate(0.5);
  EXPECT_EQ(o->learningRate(), 0.5);
  o->step(p, g);
  EXPECT_FLOAT_EQ(p[0], 0.5f);
}

std::string createError(const OptimizerConfig& c, size_t n = 10) {
  auto o = Optimizer::create(c, n);
  EXPECT_FALSE(o.ok());
  if (o.ok()) return "";
  EXPECT_EQ(o.status().code(), core::Code::kInvalidArgument);
  return o.status().message();
}

TEST(OptimizerCreate, RejectsBadValuesNamingTheField) {
  OptimizerConfig c;
  c.learning_rate = 0;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.learningRate: must be a finite number > 0"));
  c.learning_rate = NAN;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.learningRate"));
  c = OptimizerConfig();
  c.momentum = 1;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.momentum: must be in [0, 1), got 1"));
  c.momentum = -0.1;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.momentum"));
  c = OptimizerConfig();
  c.weight_decay = -1;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.weightDecay"));
  c = OptimizerConfig();
  c.momentum = 0;
  c.nesterov = true;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.nesterov"));
  c = OptimizerConfig();
  c.type = OptimizerKind::kAdam;
  c.beta1 = 1;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.beta1"));
  c = OptimizerConfig();
  c.type = OptimizerKind::kAdam;
  c.beta2 = 1.5;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.beta2"));
  c = OptimizerConfig();
  c.type = OptimizerKind::kAdam;
  c.epsilon = 0;
  EXPECT_THAT(createError(c), HasSubstr("optimizer.epsilon"));
  EXPECT_THAT(createError(OptimizerConfig(), 0), HasSubstr("no parameters"));
}

TEST(OptimizerCreate, IgnoresFieldsOfTheOtherOptimizer) {
  OptimizerConfig c;
  c.type = OptimizerKind::kAdam;
  c.momentum = 5;  // an SGD field
  EXPECT_TRUE(Optimizer::create(c, 1).ok());
  c = OptimizerConfig();
  c.beta2 = 5;  // an Adam field
  EXPECT_TRUE(Optimizer::create(c, 1).ok());
}

TEST(OptimizerDeathTest, AbortsOnSpansOfTheWrongSize) {
  auto o = make(OptimizerConfig(), 3);
  std::vector<float> p(3), g(2);
  EXPECT_DEATH(o->step(p, g), "built for 3");
}

TEST(OptimizerDeathTest, AbortsOnOverlappingSpansThatAreNotOne) {
  auto o = make(OptimizerConfig(), 3);
  std::vector<float> p(4), g(3);
  EXPECT_DEATH(o->stepInto(std::span(p).first(3), std::span(p).last(3), g), "elsewhere");
}

// Writing the update elsewhere leaves `from` alone and gives bitwise what an update in place
// gives, for every rule, over a few steps (long enough for the vectorized loops).
TEST(Optimizer, StepIntoAnotherBufferEqualsAStepInPlace) {
  OptimizerConfig nesterov;
  nesterov.nesterov = true;
  nesterov.weight_decay = 0.01;
  OptimizerConfig plain;
  plain.momentum = 0;
  OptimizerConfig adam;
  adam.type = OptimizerKind::kAdam;
  adam.weight_decay = 0.02;
  for (const OptimizerConfig& config : {OptimizerConfig(), nesterov, plain, adam}) {
    constexpr size_t n = 1037;
    auto in_place = make(config, n), elsewhere = make(config, n);
    SCOPED_TRACE(in_place->type() + (config.nesterov ? " nesterov" : "") +
                 (config.momentum == 0 ? " plain" : ""));
    std::vector<float> p(n), a(n), b(n), g(n);
    for (size_t i = 0; i < n; ++i) p[i] = a[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < n; ++i)
        g[i] = 0.003f * static_cast<float>((i * 7 + step) % 31) - 0.05f;
      in_place->step(p, g);
      const std::vector<float> before = a;
      elsewhere->stepInto(a, b, g);
      EXPECT_EQ(a, before) << "step " << step << " wrote into `from`";
      EXPECT_EQ(b, p) << "step " << step;
      std::swap(a, b);
    }
    EXPECT_EQ(elsewhere->stepCount(), 4);
  }
}

}  // namespace
}  // namespace ringmaster::trainer::optim
