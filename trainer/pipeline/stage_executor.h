#pragma once
// Runs one pipeline stage's share of a mini-batch: cuts it into micro-batches, walks the stage's
// schedule (schedule.h), receives activations from the previous stage and gradients from the next
// one, and sends its own on. Sends are started, not waited for (Communicator::startSend): two
// neighbours in a 1F1B schedule send to each other at the same moment, and a send that waited
// for its receiver would stall both. A slot's sends are waited for before the slot is reused and
// at the end of the mini-batch, so no buffer changes under a send.
//
// After run() the stage's gradients are the mini-batch's (summed over micro-batches, scaled so
// they equal the gradients of the mini-batch's mean loss); the caller reduces them across
// data-parallel replicas and steps its optimizer. PipeDream instead streams (beginStream,
// runStream, drainStream): no flush between mini-batches, and an update after every micro-batch.
//
// Messages travel over a StageLink (stage_link.h) that the executor makes from the communicator:
// host point-to-point, or NCCL groups on device memory enqueued on the stage's stream.
//
// Ownership: borrows the stage and the communicator. Thread-safety: one executor per rank, used
// by one thread. Failure: the first failed send or receive, with the stage, micro-batch and step
// in its message; the communicator is then unusable (Communicator contract).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"
#include "trainer/model/stage_compute.h"
#include "trainer/pipeline/schedule.h"
#include "trainer/pipeline/stage_link.h"

namespace ringmaster::trainer::pipeline {

struct StageLinks {
  comm::Communicator* comm = nullptr;  // carries activations and gradients
  int prev = -1;                       // rank of the previous stage; -1 on the first
  int next = -1;                       // rank of the next stage; -1 on the last
  std::chrono::milliseconds timeout{0};
  void* stream = nullptr;  // device memory (nccl): the cudaStream_t its messages are enqueued on
};

struct MiniBatch {
  const float* x = nullptr;         // first stage: rows * inputSize() floats
  const int32_t* labels = nullptr;  // last stage: rows labels
  int rows = 0;                     // every stage: the mini-batch's samples
};

struct StepStats {
  double loss_sum = 0;           // last stage: summed loss of the mini-batch
  int correct = 0;               // last stage: argmax hits
  double wall_seconds = 0;       // the whole of run()
  double compute_seconds = 0;    // forwards, backwards and the loss
  double forward_seconds = 0;    // of which forwards and the loss
  double recv_wait_seconds = 0;  // waiting inside receives
  double send_wait_seconds = 0;  // waiting for started sends to finish
  // PipeDream: the updates (`apply`) after each backward inside the stream; work, not bubble.
  double update_seconds = 0;
  // Zeroing the stage's gradients while its first receive of the step waits; work, not bubble.
  double clear_seconds = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
  double busySeconds() const { return compute_seconds + update_seconds + clear_seconds; }
  // The share of run() this stage did not work: the pipeline's bubble as this stage saw it.
  double bubble() const { return wall_seconds > 0 ? 1.0 - busySeconds() / wall_seconds : 0; }
  // Adds another call's measures (a PipeDream drain to its step's stream).
  void add(const StepStats& other);
};

// The last stage's summed loss and hits over the rows it scored (zeros elsewhere).
using EvaluationStats = model::StageLosses;

class StageExecutor {
 public:
  // `stage_index` of `stages`; the stage was created with slots() >= the schedule's peak.
  StageExecutor(model::StageCompute& stage, ScheduleKind kind, int stage_index, int stages,
                int micro_batches, StageLinks links);
  ~StageExecutor();

  // Zeroes the stage's gradients and runs the mini-batch; `step` names it in errors.
  core::Result<StepStats> run(const MiniBatch& batch, int64_t step);

  // PipeDream (asynchronous 1F1B with weight stashing): one 1F1B stream over an epoch's
  // `micro_batches` micro-batches with no flush between mini-batches. Each micro-batch is an
  // update of its own: its backward runs on the weights its forward used, and `apply` then
  // steps the optimizer from the newest weights with that gradient. Only neighbouring stages
  // talk, as in every schedule here.
  //
  // The stash costs no copy: the executor keeps one weight version per micro-batch in flight
  // besides the newest, `apply` writes each update into a free version (Optimizer::stepInto),
  // and a version is free once no micro-batch in flight used it. While a stream runs the
  // newest weights may be in one of those versions; once it has ended (streamEnded) they are
  // back in the stage's parameters (weight version 0).
  core::Status beginStream(int64_t micro_batches);
  // Applies the stage's gradients to `newest`, writing the result into `next`
  // (`next` is `newest` on a stage with one slot, which needs no versions); false when it
  // made no update (a failed reduction), so that `newest` stays the newest.
  using Apply = std::function<bool(std::span<const float> newest, std::span<float> next)>;
  // The mini-batch's forwards and the backwards 1F1B interleaves with them (of this and earlier
  // mini-batches), up to the next mini-batch's first forward.
  core::Result<StepStats> runStream(const MiniBatch& batch, int64_t step, const Apply& apply);
  // The backwards of every micro-batch forwarded and not yet backpropagated (the epoch's end, or
  // a run stopped inside it), then every send finished.
  core::Result<StepStats> drainStream(int64_t step, const Apply& apply);
  // Whether every forwarded micro-batch has had its backward.
  bool streamDrained() const { return streamIdle(); }
  // Whether the stream is over (every pass run or drained): the same moment on every stage,
  // unlike streamDrained (the last stage is idle after each of its backwards).
  bool streamEnded() const { return stream_pos_ >= stream_.size(); }

  // Forward only over `rows` samples (a test set) in chunks of the stage's micro-batch rows:
  // the first stage reads `x`, the last scores `labels`; `what` names it in errors.
  core::Result<EvaluationStats> evaluate(const float* x, const int32_t* labels, int rows,
                                         const std::string& what);

  // How many slots the schedule needs with `micro_batches` micro-batches (ModelStage::create).
  static core::Result<int> slotsNeeded(ScheduleKind kind, int stage_index, int stages,
                                       int micro_batches);

 private:
  // One pass's inputs: the slot it uses, its rows, and where the first and last stage read.
  struct OpData {
    int slot = 0;
    int rows = 0;
    const float* x = nullptr;
    const int32_t* labels = nullptr;
    float grad_scale = 1.0f;
  };
  core::Result<const std::vector<PipelineOp>*> scheduleFor(int micro_batches);
  core::Status doOp(const PipelineOp& op, const OpData& data, int64_t step, StepStats& stats);
  core::Status streamOp(const PipelineOp& op, OpData data, int64_t step, const Apply& apply,
                        StepStats& stats);
  // Once the stream has ended: the newest weights back into version 0, the layers on them.
  void settleVersions();
  // The stage's losses since the last call, or its failure (a GPU stage's surfaces here).
  core::Result<model::StageLosses> takeLosses();
  // The same, added to the step's stats.
  core::Status takeLosses(StepStats& stats);
  core::Status waitSend(size_t index, StepStats& stats);
  // No micro-batch between its forward and its backward.
  bool streamIdle() const {
    for (size_t i = stream_pos_; i < stream_.size(); ++i) {
      if (stream_[i].kind == PipelineOp::kBackward && stream_[i].micro < stream_first_micro_) {
        return false;
      }
    }
    return true;
  }

  model::StageCompute& stage_;
  const ScheduleKind kind_;
  const int stage_index_, stages_, micro_batches_;
  const StageLinks links_;
  std::unique_ptr<StageLink> link_;  // outlives pending_, whose sends it may still hold
  std::map<int, std::vector<PipelineOp>> schedules_;         // by micro-batch count (short batches)
  std::vector<std::unique_ptr<comm::PendingSend>> pending_;  // per slot: activations, gradients
  // PipeDream's stream: its ops, the next one, the first micro-batch of the next mini-batch,
  // each slot's rows and weight version (-1: no micro-batch in flight), how many weight
  // versions the stage keeps beyond its parameters and which one is the newest.
  std::vector<PipelineOp> stream_;
  size_t stream_pos_ = 0;
  int64_t stream_first_micro_ = 0;
  bool clear_grads_at_receive_ = false;  // run(): the stage's gradients still to be zeroed
  std::vector<int> slot_rows_;
  std::vector<int> slot_version_;
  int extra_versions_ = 0;
  int newest_ = 0;
};

}  // namespace ringmaster::trainer::pipeline
