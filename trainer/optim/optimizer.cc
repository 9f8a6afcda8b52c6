#include "trainer/optim/optimizer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "trainer/optim/adam.h"
#include "trainer/optim/sgd.h"

namespace ringmaster::trainer::optim {
namespace {

std::string str(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

core::Status badField(const std::string& field, const std::string& rule, double value) {
  return core::invalidArgument("optimizer." + field + ": must be " + rule + ", got " + str(value));
}

// Field names as the TrainingJob spec spells them (spec.trainer.optimizer.*).
core::Status validate(const OptimizerConfig& c, size_t num_params) {
  if (!(std::isfinite(c.learning_rate) && c.learning_rate > 0)) {
    return badField("learningRate", "a finite number > 0", c.learning_rate);
  }
  if (!(std::isfinite(c.weight_decay) && c.weight_decay >= 0)) {
    return badField("weightDecay", "a finite number >= 0", c.weight_decay);
  }
  if (c.type == OptimizerKind::kSgd) {
    if (!(c.momentum >= 0 && c.momentum < 1)) return badField("momentum", "in [0, 1)", c.momentum);
    if (c.nesterov && c.momentum == 0) {
      return core::invalidArgument("optimizer.nesterov: needs momentum > 0");
    }
  } else {
    if (!(c.beta1 >= 0 && c.beta1 < 1)) return badField("beta1", "in [0, 1)", c.beta1);
    if (!(c.beta2 >= 0 && c.beta2 < 1)) return badField("beta2", "in [0, 1)", c.beta2);
    if (!(std::isfinite(c.epsilon) && c.epsilon > 0)) {
      return badField("epsilon", "a finite number > 0", c.epsilon);
    }
  }
  if (num_params == 0) return core::invalidArgument("optimizer: the model has no parameters");
  return core::Status::Ok();
}

}  // namespace

Optimizer::~Optimizer() = default;

core::Result<std::unique_ptr<Optimizer>> Optimizer::create(const OptimizerConfig& config,
                                                           size_t num_params) {
  RM_RETURN_IF_ERROR(validate(config, num_params));
  if (config.type == OptimizerKind::kSgd)
    return std::unique_ptr<Optimizer>(new Sgd(config, num_params));
  return std::unique_ptr<Optimizer>(new Adam(config, num_params));
}

void Optimizer::step(std::span<float> params, std::span<const float> grads) {
  stepInto(params, params, grads);
}

void Optimizer::stepInto(std::span<const float> from, std::span<float> into,
                         std::span<const float> grads) {
  const bool apart =
      into.data() + into.size() <= from.data() || from.data() + from.size() <= into.data();
  if (from.size() != num_params_ || into.size() != num_params_ || grads.size() != num_params_ ||
      (into.data() != from.data() && !apart)) {
    std::fprintf(stderr,
                 "optimizer: contract broken: step() from %zu params into %zu (%s) with %zu "
                 "grads, built for %zu\n",
                 from.size(), into.size(), into.data() == from.data() ? "in place" : "elsewhere",
                 grads.size(), num_params_);
    std::abort();
  }
  ++step_count_;
  update(from.data(), into.data(), grads.data());
}

}  // namespace ringmaster::trainer::optim
