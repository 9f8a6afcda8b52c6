#include "trainer/optim/sgd.h"

#include "trainer/optim/multiversion.h"

namespace ringmaster::trainer::optim {
namespace {

// `into` may be `from` (in place): see RM_ELEMENTWISE.
RM_MULTIVERSION void sgdPlain(const float* from, float* into, const float* __restrict g, size_t n,
                              float lr, float wd) {
  RM_ELEMENTWISE
  for (size_t i = 0; i < n; ++i) into[i] = from[i] - lr * (g[i] + wd * from[i]);
}

RM_MULTIVERSION void sgdMomentum(const float* from, float* into, const float* __restrict g,
                                 float* __restrict buf, size_t n, float lr, float m, float wd,
                                 bool nesterov) {
  if (nesterov) {
    RM_ELEMENTWISE
    for (size_t i = 0; i < n; ++i) {
      const float d = g[i] + wd * from[i];
      const float b = m * buf[i] + d;
      buf[i] = b;
      into[i] = from[i] - lr * (d + m * b);
    }
  } else {
    RM_ELEMENTWISE
    for (size_t i = 0; i < n; ++i) {
      const float b = m * buf[i] + (g[i] + wd * from[i]);
      buf[i] = b;
      into[i] = from[i] - lr * b;
    }
  }
}

}  // namespace

Sgd::Sgd(const OptimizerConfig& config, size_t num_params) : Optimizer(config, num_params) {
  if (config.momentum != 0) momentum_.assign(num_params, 0.0f);
}

void Sgd::setHyperparameters(const OptimizerConfig& config) {
  Optimizer::setHyperparameters(config);
  if (config.momentum != 0 && momentum_.empty()) momentum_.assign(num_params_, 0.0f);
}

std::vector<std::vector<float>*> Sgd::state() {
  if (momentum_.empty()) return {};
  return {&momentum_};
}

void Sgd::update(const float* from, float* into, const float* grads) {
  const auto lr = static_cast<float>(config_.learning_rate);
  const auto wd = static_cast<float>(config_.weight_decay);
  if (momentum_.empty()) {
    sgdPlain(from, into, grads, num_params_, lr, wd);
  } else {
    sgdMomentum(from, into, grads, momentum_.data(), num_params_, lr,
                static_cast<float>(config_.momentum), wd, config_.nesterov);
  }
}

}  // namespace ringmaster::trainer::optim
