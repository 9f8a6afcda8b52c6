#pragma once
// SGD with optional momentum, Nesterov and L2 weight decay, as torch.optim.SGD (dampening 0).
// See optimizer.h for the contract. Momentum 0 keeps no state.

#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer::optim {

class Sgd : public Optimizer {
 public:
  Sgd(const OptimizerConfig& config, size_t num_params);
  std::string type() const override { return "sgd"; }
  std::vector<std::vector<float>*> state() override;

 private:
  void update(const float* from, float* into, const float* grads) override;
  std::vector<float> momentum_;  // empty when momentum == 0
};

}  // namespace ringmaster::trainer::optim
