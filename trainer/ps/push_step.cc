#include "trainer/ps/push_step.h"

#include <algorithm>
#include <cmath>

namespace ringmaster::trainer::ps {

PushStep pushStep(const Consistency& consistency, const optim::OptimizerConfig& config,
                  int workers) {
  PushStep step{config, 1.0};
  if (consistency.isSync()) return step;
  const double w = std::max(workers, 1);
  if (config.type != optim::OptimizerKind::kSgd || config.momentum <= 0) {
    step.gradient_scale = 1.0 / w;
  } else {
    const double mu = config.momentum;
    step.optimizer.momentum = std::pow(mu, 1.0 / w);
    step.gradient_scale = (1.0 - step.optimizer.momentum) / (w * (1.0 - mu));
  }
  if (config.type == optim::OptimizerKind::kSgd)
    step.optimizer.weight_decay = config.weight_decay * step.gradient_scale;
  return step;
}

double stalenessScale(int workers, int64_t updates_since_pull) {
  const double w = std::max(workers, 1);
  return w / std::max(w, static_cast<double>(updates_since_pull) + 1.0);
}

double lookahead(const optim::OptimizerConfig& step_config, double learning_rate, double updates) {
  const double mu = step_config.momentum;
  if (step_config.type != optim::OptimizerKind::kSgd || mu <= 0 || updates <= 0) return 0;
  const double along = mu * (1.0 - std::pow(mu, updates)) / (1.0 - mu);
  return learning_rate * along * (step_config.nesterov ? mu : 1.0);
}

double expectedUpdates(double previous, int64_t found) {
  constexpr double kWeight = 0.25;  // of the newest push: a mean over about the last 4
  return (1.0 - kWeight) * previous + kWeight * static_cast<double>(std::max<int64_t>(found, 0));
}

}  // namespace ringmaster::trainer::ps
