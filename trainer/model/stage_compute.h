#pragma once
// What a pipeline stage's executor (pipeline/stage_executor.h) asks of the stage's arithmetic,
// wherever it runs: on the host (ModelStage) or on a GPU. The buffers it hands out are in the
// stage's own memory, host or device; the executor only passes them to its link
// (pipeline/stage_link.h) and never reads them. A GPU stage's calls enqueue work on its stream
// and return; takeLosses() is where it may wait for the device.
//
// Slots: the executor maps each micro-batch in flight to a slot (micro-batch m -> m % slots()),
// and a slot's buffers hold that micro-batch's activations from its forward to its backward.
//
// Thread-safety: none (one stage per rank). Failure: broken call contracts (a slot or batch out
// of range, backward before forward) abort with the reason; a failure of the arithmetic itself
// (a tensor group's sum, a GPU stage's CUDA or cuBLASLt call) is kept in status(), and the
// stage's results from then on are not to be used.

#include <cstddef>
#include <cstdint>
#include <span>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::model {

// The last stage's summed losses and argmax hits over the micro-batches it scored.
struct StageLosses {
  double loss_sum = 0;
  int correct = 0;
};

class StageCompute {
 public:
  virtual ~StageCompute() = default;

  virtual int slots() const = 0;
  virtual int microBatch() const = 0;     // rows of the largest micro-batch
  virtual size_t inputSize() const = 0;   // floats per sample in
  virtual size_t outputSize() const = 0;  // floats per sample out

  // Where the slot's input rows are received (stages but the first).
  virtual float* input(int slot) = 0;
  // First stage: `rows` samples of host memory into the slot's input.
  virtual void loadInput(int slot, const float* samples, int rows) = 0;
  // Runs the stage's layers on the slot's input; returns its output rows (what is sent on).
  virtual const float* forward(int slot, int rows) = 0;
  // Last stage: softmax cross-entropy of the slot's logits against `labels` (host memory), added
  // to the losses; writes d(mean loss)/d(logits) times `grad_scale` into the slot's output
  // gradient (grad_scale = rows / mini-batch rows makes the micro-batches sum to the
  // mini-batch's mean).
  virtual void addLoss(int slot, const int32_t* labels, int rows, float grad_scale) = 0;
  // Last stage: the same loss without a gradient (evaluation; nothing to backpropagate).
  virtual void addEvaluationLoss(int slot, const int32_t* labels, int rows) = 0;
  // The losses added since the last call.
  virtual StageLosses takeLosses() = 0;
  // Where the slot's d(loss)/d(output) rows are received (stages but the last).
  virtual float* outputGrad(int slot) = 0;
  // Adds the slot's parameter gradients to the stage's; returns d(loss)/d(input) (what is sent
  // back), valid until the slot is used again; nullptr on the first stage.
  virtual const float* backward(int slot, int rows) = 0;
  // The next backward starts the gradients afresh.
  virtual void zeroGrads() = 0;
  // Writes now the zeros a zeroGrads() left to the next backward, for a caller about to wait
  // anyway: a backward that starts the sums afresh can cost more than one that adds. Does
  // nothing when no zeroGrads() is pending, and on stages where starting afresh costs nothing.
  virtual void clearGrads() {}
  // Ok, or the stage's first failure since it was made.
  virtual const core::Status& status() const = 0;

  // Weight versions, for PipeDream's stash: version 0 is the stage's parameters, versions
  // 1..n buffers of the same size in the stage's memory, made on first use.
  virtual std::span<float> weightVersion(int version) = 0;
  // Makes the layers compute with `weights` (a version) until called again.
  virtual void useWeights(std::span<float> weights) = 0;
  virtual void copyWeights(std::span<const float> from, std::span<float> to) = 0;
};

}  // namespace ringmaster::trainer::model
