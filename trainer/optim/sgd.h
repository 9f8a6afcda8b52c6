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
  void setHyperparameters(const OptimizerConfig& config) override;
  const std::vector<float>* velocity() const override {
    return momentum_.empty() ? nullptr : &momentum_;
  }

 private:
  void update(const float* from, float* into, const float* grads) override;
  // Empty while momentum has been 0 (a buffer kept once made: at momentum 0 it holds the last
  // step's direction, and the update is plain SGD's).
  std::vector<float> momentum_;
};

}  // namespace ringmaster::trainer::optim
