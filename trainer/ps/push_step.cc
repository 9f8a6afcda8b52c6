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

}  // namespace ringmaster::trainer::ps
