#include "trainer/optim/sgd.h"

#include "trainer/optim/multiversion.h"

namespace ringmaster::trainer::optim {
namespace {

RM_MULTIVERSION void sgdPlain(float* __restrict p, const float* __restrict g, size_t n, float lr,
                              float wd) {
  for (size_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
}

RM_MULTIVERSION void sgdMomentum(float* __restrict p, const float* __restrict g,
                                 float* __restrict buf, size_t n, float lr, float m, float wd,
                                 bool nesterov) {
  if (nesterov) {
    for (size_t i = 0; i < n; ++i) {
      const float d = g[i] + wd * p[i];
      const float b = m * buf[i] + d;
      buf[i] = b;
      p[i] -= lr * (d + m * b);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float b = m * buf[i] + (g[i] + wd * p[i]);
      buf[i] = b;
      p[i] -= lr * b;
    }
  }
}

}  // namespace

Sgd::Sgd(const OptimizerConfig& config, size_t num_params) : Optimizer(config, num_params) {
  if (config.momentum != 0) momentum_.assign(num_params, 0.0f);
}

std::vector<std::vector<float>*> Sgd::state() {
  if (momentum_.empty()) return {};
  return {&momentum_};
}

void Sgd::update(float* params, const float* grads) {
  const auto lr = static_cast<float>(config_.learning_rate);
  const auto wd = static_cast<float>(config_.weight_decay);
  if (momentum_.empty()) {
    sgdPlain(params, grads, num_params_, lr, wd);
  } else {
    sgdMomentum(params, grads, momentum_.data(), num_params_, lr,
                static_cast<float>(config_.momentum), wd, config_.nesterov);
  }
}

}  // namespace ringmaster::trainer::optim
