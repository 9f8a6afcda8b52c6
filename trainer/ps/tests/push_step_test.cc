// pushStep and stalenessScale: the per-push update of a loose-consistency server, by mode,
// optimizer and live workers, and the damping of stale pushes.

#include "trainer/ps/push_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

namespace ringmaster::trainer::ps {
namespace {

optim::OptimizerConfig sgd(double momentum, double weight_decay = 0) {
  optim::OptimizerConfig c;
  c.learning_rate = 0.1;
  c.momentum = momentum;
  c.weight_decay = weight_decay;
  return c;
}

optim::OptimizerConfig adam() {
  optim::OptimizerConfig c;
  c.type = optim::OptimizerKind::kAdam;
  c.learning_rate = 1e-3;
  c.weight_decay = 0.01;
  return c;
}

struct StepCase {
  std::string name;
  Consistency consistency;
  optim::OptimizerConfig config;
  int workers;
  double momentum, gradient_scale, weight_decay;
};
void PrintTo(const StepCase& c, std::ostream* os) { *os << c.name; }

class PushStepTable : public ::testing::TestWithParam<StepCase> {};

TEST_P(PushStepTable, MatchesSyncPerSample) {
  const StepCase& c = GetParam();
  const PushStep step = pushStep(c.consistency, c.config, c.workers);
  EXPECT_NEAR(step.optimizer.momentum, c.momentum, 1e-12);
  EXPECT_NEAR(step.gradient_scale, c.gradient_scale, 1e-12);
  EXPECT_NEAR(step.optimizer.weight_decay, c.weight_decay, 1e-12);
  EXPECT_EQ(step.optimizer.learning_rate, c.config.learning_rate);
  EXPECT_EQ(step.optimizer.type, c.config.type);
  if (c.consistency == Consistency::sync() || c.config.type != optim::OptimizerKind::kSgd ||
      c.config.momentum == 0)
    return;
  // W pushes decay the momentum as one sync step does, and a gradient's total contribution
  // (scale / (1 - momentum)) is its 1/W share of a sync step's (1 / (1 - mu)).
  const double w = std::max(c.workers, 1);
  EXPECT_NEAR(std::pow(step.optimizer.momentum, w), c.config.momentum, 1e-12);
  EXPECT_NEAR(step.gradient_scale / (1 - step.optimizer.momentum),
              1 / (w * (1 - c.config.momentum)), 1e-12);
}

const double kMu2 = std::sqrt(0.9);             // momentum 0.9 over 2 pushes
const double kScale2 = (1 - kMu2) / (2 * 0.1);  // 0.2565 against plain 1/2

INSTANTIATE_TEST_SUITE_P(
    Modes, PushStepTable,
    ::testing::Values(
        // Sync averages the step's pushes itself: the configuration as is.
        StepCase{"sync", Consistency::sync(), sgd(0.9, 1e-4), 2, 0.9, 1, 1e-4},
        StepCase{"bound_0_is_sync", Consistency::bounded(0), sgd(0.9), 4, 0.9, 1, 0},
        // Without momentum: the plain 1/W share, weight decay too.
        StepCase{"async_plain_sgd", Consistency::async(), sgd(0, 1e-4), 2, 0, 0.5, 0.5e-4},
        StepCase{"async_plain_sgd_4", Consistency::async(), sgd(0), 4, 0, 0.25, 0},
        // Momentum mu^(1/W), the gradient scaled to keep its total contribution.
        StepCase{"async_momentum", Consistency::async(), sgd(0.9), 2, kMu2, kScale2, 0},
        StepCase{"bounded_1_momentum", Consistency::bounded(1), sgd(0.9), 2, kMu2, kScale2, 0},
        StepCase{"bounded_16_weight_decay", Consistency::bounded(16), sgd(0.9, 5e-4), 2, kMu2,
                 kScale2, 5e-4 * kScale2},
        StepCase{"async_momentum_4", Consistency::async(), sgd(0.9), 4, std::pow(0.9, 0.25),
                 (1 - std::pow(0.9, 0.25)) / 0.4, 0},
        // One worker (or none left): exactly the configuration, as a single sync worker runs.
        StepCase{"async_one_worker", Consistency::async(), sgd(0.9, 1e-4), 1, 0.9, 1, 1e-4},
        StepCase{"async_no_worker", Consistency::async(), sgd(0.9), 0, 0.9, 1, 0},
        // Adam's step does not scale with the gradient: as configured, the 1/W share.
        StepCase{"async_adam", Consistency::async(), adam(), 2, adam().momentum, 0.5, 0.01}),
    [](const auto& info) { return info.param.name; });

struct StaleCase {
  std::string name;
  int workers;
  int64_t updates_since_pull;
  double scale;
};
void PrintTo(const StaleCase& c, std::ostream* os) { *os << c.name; }

class StalenessScaleTable : public ::testing::TestWithParam<StaleCase> {};

TEST_P(StalenessScaleTable, DampsOnlyBeyondARound) {
  const StaleCase& c = GetParam();
  EXPECT_DOUBLE_EQ(stalenessScale(c.workers, c.updates_since_pull), c.scale);
}

INSTANTIATE_TEST_SUITE_P(
    Rounds, StalenessScaleTable,
    ::testing::Values(StaleCase{"fresh", 2, 0, 1}, StaleCase{"one_round", 2, 1, 1},
                      StaleCase{"two_rounds", 2, 3, 0.5}, StaleCase{"ten_behind", 2, 9, 0.2},
                      StaleCase{"four_workers_round", 4, 3, 1},
                      StaleCase{"four_workers_late", 4, 7, 0.5}, StaleCase{"one_worker", 1, 0, 1},
                      StaleCase{"no_worker", 0, 0, 1},
                      StaleCase{"one_worker_overtaken", 1, 1, 0.5}),
    [](const auto& info) { return info.param.name; });

struct LookaheadCase {
  std::string name;
  optim::OptimizerConfig config;  // the per-push optimizer
  double learning_rate;
  double updates;
  double ahead;
};
void PrintTo(const LookaheadCase& c, std::ostream* os) { *os << c.name; }

class LookaheadTable : public ::testing::TestWithParam<LookaheadCase> {};

TEST_P(LookaheadTable, FollowsTheMomentumOfTheUpdatesToCome) {
  const LookaheadCase& c = GetParam();
  EXPECT_NEAR(lookahead(c.config, c.learning_rate, c.updates), c.ahead, 1e-12);
}

optim::OptimizerConfig nesterov(double momentum) {
  optim::OptimizerConfig c = sgd(momentum);
  c.nesterov = true;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Updates, LookaheadTable,
    ::testing::Values(
        // lr (mu + ... + mu^u): one update ahead is lr mu, two lr (mu + mu^2).
        LookaheadCase{"one_update", sgd(0.5), 2, 1, 1.0},
        LookaheadCase{"two_updates", sgd(0.5), 2, 2, 1.5},
        LookaheadCase{"three_quarters_of_one", sgd(0.5), 2, 0.75, 2 * (1 - std::pow(0.5, 0.75))},
        LookaheadCase{"many_updates_approach_mu_over_1_minus_mu", sgd(0.9), 1, 400, 9.0},
        LookaheadCase{"none_expected", sgd(0.9), 1, 0, 0},
        LookaheadCase{"nesterov_moves_one_mu_further", nesterov(0.5), 2, 1, 0.5},
        LookaheadCase{"no_momentum", sgd(0), 2, 1, 0},
        LookaheadCase{"adam_does_not_look_ahead", adam(), 2, 1, 0}),
    [](const auto& info) { return info.param.name; });

TEST(ExpectedUpdates, IsARunningMeanOfWhatThePushesFound) {
  EXPECT_DOUBLE_EQ(expectedUpdates(1, 1), 1);
  EXPECT_DOUBLE_EQ(expectedUpdates(1, 3), 1.5);
  EXPECT_DOUBLE_EQ(expectedUpdates(0, -1), 0);  // a push without its pull found none
  double u = 0;
  for (int i = 0; i < 40; ++i) u = expectedUpdates(u, 2);
  EXPECT_NEAR(u, 2, 1e-4);  // a new pace is followed
}

}  // namespace
}  // namespace ringmaster::trainer::ps
