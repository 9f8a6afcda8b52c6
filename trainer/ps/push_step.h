#pragma once
// How a parameter server in a loose consistency mode (async or bounded staleness) makes one
// optimizer step of each push, so that a learning rate, momentum and weight decay mean what they
// mean in sync (and in allreduce data parallelism), where a step's W gradients are averaged into
// one update.
//
// SGD with momentum mu, W live workers, every push its own update:
//  - momentum mu^(1/W): W pushes decay the momentum buffer as one sync step does, so it averages
//    over as many samples; with mu per push it would forget W times as fast, and each push would
//    move the parameters W times further at once than its share of a sync step does.
//  - gradient (and weight decay) scale (1 - mu^(1/W)) / (W (1 - mu)): a gradient then moves the
//    parameters, over all the updates after it, lr / (W (1 - mu)) times itself, as its share of a
//    sync step does; 1/W when mu is 0.
//  - staleness: a push computed on parameters that u other pushes changed since its pull is also
//    scaled by W / max(W, u + 1). u = W - 1 (each other worker pushed once) is async's normal
//    round; a gradient staler than that counts less, as the learning rate / staleness of
//    "Staleness-aware async-SGD" (Zhang et al.) does.
// Sync: the configuration as is, scale 1 (the server averages a step's pushes into one update).
// Adam: the configuration as is, scale 1/W (its step hardly depends on the gradient's scale).
//
// A pull for a step looks ahead (as DANA does: Hakimi et al., "Taming Momentum in a Distributed
// Asynchronous Environment"): a loose server answers it with its values moved on by the momentum
// part of the updates the worker's push will likely find applied before it, u of them,
//   values - lr (mu + mu^2 + ... + mu^u) v      (v: SGD's momentum buffer; Nesterov: times mu),
// so that the gradient is computed near where it is applied. Without it a push one update stale
// under momentum 0.95 made a 2-worker async run end about a point below sync: a delayed
// heavy-ball step is stable only for lr x curvature < 1 - mu, against 2 (1 + mu) undelayed. The
// part of those updates that is other workers' new gradients stays unknown. u is a running mean
// of what the worker's pushes found (W - 1 before its first). Adam's step is not a multiple of
// a buffer: its pulls do not look ahead.
//
// Thread-safety: pure functions.

#include <cstdint>

#include "trainer/optim/optimizer.h"
#include "trainer/ps/staleness_gate.h"

namespace ringmaster::trainer::ps {

struct PushStep {
  optim::OptimizerConfig optimizer;  // the optimizer one push's update runs
  double gradient_scale = 1;         // times the pushed gradient, before stalenessScale
};

// The per-push update of a loose-consistency server with `workers` live workers (below 1 read
// as 1). Sync: `config` as is and scale 1 (the server averages the step's pushes itself).
PushStep pushStep(const Consistency& consistency, const optim::OptimizerConfig& config,
                  int workers);

// The extra scale of a push whose gradient other pushes updated the parameters under
// `updates_since_pull` times: 1 up to workers - 1, then workers / (updates_since_pull + 1).
double stalenessScale(int workers, int64_t updates_since_pull);

// How far a pull looks ahead along the momentum buffer: lr (mu + ... + mu^updates) for the
// optimizer a push runs (`step_config`, its per-push momentum) at learning rate
// `learning_rate`, `updates` a real count (mu (1 - mu^u) / (1 - mu)); times mu for Nesterov; 0
// for Adam, without momentum, or for no updates.
double lookahead(const optim::OptimizerConfig& step_config, double learning_rate, double updates);

// The updates a worker's next push will likely find applied since its pull, from the last
// estimate and what its push just found: a running mean that follows a change of pace within a
// few pushes.
double expectedUpdates(double previous, int64_t found);

}  // namespace ringmaster::trainer::ps
