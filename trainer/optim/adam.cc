#include "trainer/optim/adam.h"

#include <cmath>

#include "trainer/optim/multiversion.h"

namespace ringmaster::trainer::optim {
namespace {

struct AdamScalars {
  float b1, b2, wd, eps, step_size, bc2_sqrt;
};

// `into` may be `from` (in place): see RM_ELEMENTWISE.
RM_MULTIVERSION void adamUpdate(const float* from, float* into, const float* __restrict g,
                                float* __restrict m, float* __restrict v, size_t n, AdamScalars s) {
  const float one_minus_b1 = 1.0f - s.b1, one_minus_b2 = 1.0f - s.b2;
  RM_ELEMENTWISE
  for (size_t i = 0; i < n; ++i) {
    const float grad = g[i] + s.wd * from[i];
    const float mi = s.b1 * m[i] + one_minus_b1 * grad;
    const float vi = s.b2 * v[i] + one_minus_b2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    into[i] = from[i] - s.step_size * (mi / denom);
  }
}

}  // namespace

Adam::Adam(const OptimizerConfig& config, size_t num_params)
    : Optimizer(config, num_params), m_(num_params, 0.0f), v_(num_params, 0.0f) {}

void Adam::update(const float* from, float* into, const float* grads) {
  // Bias corrections in double from the step count, as torch does with Python floats.
  const auto t = static_cast<double>(stepCount());
  const double bc1 = 1.0 - std::pow(config_.beta1, t);
  const double bc2 = 1.0 - std::pow(config_.beta2, t);
  const AdamScalars s{static_cast<float>(config_.beta1),
                      static_cast<float>(config_.beta2),
                      static_cast<float>(config_.weight_decay),
                      static_cast<float>(config_.epsilon),
                      static_cast<float>(config_.learning_rate / bc1),
                      static_cast<float>(std::sqrt(bc2))};
  adamUpdate(from, into, grads, m_.data(), v_.data(), num_params_, s);
}

}  // namespace ringmaster::trainer::optim
