#pragma once
// Adam with bias correction and L2 weight decay, as torch.optim.Adam (amsgrad off).
// See optimizer.h for the contract. State: first and second moments.

#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer::optim {

class Adam : public Optimizer {
 public:
  Adam(const OptimizerConfig& config, size_t num_params);
  std::string type() const override { return "adam"; }
  std::vector<std::vector<float>*> state() override { return {&m_, &v_}; }

 private:
  void update(const float* from, float* into, const float* grads) override;
  std::vector<float> m_, v_;
};

}  // namespace ringmaster::trainer::optim
