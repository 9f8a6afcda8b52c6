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

}  // namespace ringmaster::trainer::ps
