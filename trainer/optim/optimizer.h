#pragma once
// Optimizers over the model's flat parameter buffer, with PyTorch's semantics so results
// compare with torch.optim runs:
//   sgd:  d = g + wd*p; buf = m*buf + d (buf starts at 0, i.e. d on the first step);
//         p -= lr * (nesterov ? d + m*buf : buf)          (torch.optim.SGD, dampening 0)
//   adam: g += wd*p (L2, not AdamW); m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
//         p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)   (torch.optim.Adam)
// Each step is one fused pass over params, grads and state.
//
// Ownership: an Optimizer owns its state buffers (momentum; Adam's m and v), sized at
// create(); state() exposes them for checkpoints (restore by writing into them, same size).
// Thread-safety: none; one per rank, used by one thread.
// Failure: create() returns kInvalidArgument naming the field, spelled as in the TrainingJob
// spec ("optimizer.momentum: must be in [0, 1), got 1"). step() with spans whose size differs
// from num_params is a caller bug and aborts.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::optim {

enum class OptimizerKind { kSgd, kAdam };

struct OptimizerConfig {
  OptimizerKind type = OptimizerKind::kSgd;
  double learning_rate = 0.1, momentum = 0.9, weight_decay = 0.0;
  bool nesterov = false;                              // sgd only
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam only
};

class Optimizer {
 public:
  virtual ~Optimizer();

  static core::Result<std::unique_ptr<Optimizer>> create(const OptimizerConfig& config,
                                                         size_t num_params);

  // One update of params from grads (both num_params long); counts the step.
  void step(std::span<float> params, std::span<const float> grads);
  // The same update written elsewhere: `into` gets what step() would leave in `from`, which
  // stays as it was (PipeDream keeps the old weights for backwards in flight). `into` may be
  // `from`; otherwise the two must not overlap.
  void stepInto(std::span<const float> from, std::span<float> into, std::span<const float> grads);

  // "sgd" | "adam": what checkpoints record, so that a resume finds state of its kind.
  virtual std::string type() const = 0;
  // Steps taken so far (Adam's bias correction uses it); restored from checkpoints.
  int64_t stepCount() const { return step_count_; }
  void setStepCount(int64_t steps) { step_count_ = steps; }
  // The buffers to save and restore with a checkpoint, in a fixed order (may be empty).
  virtual std::vector<std::vector<float>*> state() = 0;
  // The buffer the next steps keep moving the parameters along, times the learning rate (SGD's
  // momentum buffer); null for none. A parameter server looks ahead along it.
  virtual const std::vector<float>* velocity() const { return nullptr; }
  // For schedules (warm-up, decay) between steps.
  void setLearningRate(double lr) { config_.learning_rate = lr; }
  // Every hyperparameter at once, between steps (population-based training's exploit); the
  // type stays this optimizer's. State a value now needs (SGD's momentum buffer when momentum
  // becomes nonzero) starts at zero; state() may then hold more buffers than before.
  virtual void setHyperparameters(const OptimizerConfig& config) {
    const OptimizerKind type = config_.type;
    config_ = config;
    config_.type = type;
  }
  double learningRate() const { return config_.learning_rate; }

 protected:
  Optimizer(const OptimizerConfig& config, size_t num_params)
      : config_(config), num_params_(num_params) {}
  // step_count_ already counts this step (1 on the first). `into` is `from` or apart from it.
  virtual void update(const float* from, float* into, const float* grads) = 0;

  OptimizerConfig config_;
  size_t num_params_;

 private:
  int64_t step_count_ = 0;
};

}  // namespace ringmaster::trainer::optim
