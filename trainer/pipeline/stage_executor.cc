#include "trainer/pipeline/stage_executor.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>

namespace ringmaster::trainer::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

void StepStats::add(const StepStats& o) {
  loss_sum += o.loss_sum;
  correct += o.correct;
  wall_seconds += o.wall_seconds;
  compute_seconds += o.compute_seconds;
  forward_seconds += o.forward_seconds;
  recv_wait_seconds += o.recv_wait_seconds;
  send_wait_seconds += o.send_wait_seconds;
  update_seconds += o.update_seconds;
  clear_seconds += o.clear_seconds;
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
}

StageExecutor::StageExecutor(model::StageCompute& stage, ScheduleKind kind, int stage_index,
                             int stages, int micro_batches, StageLinks links)
    : stage_(stage),
      kind_(kind),
      stage_index_(stage_index),
      stages_(stages),
      micro_batches_(micro_batches),
      links_(links),
      link_(makeStageLink(*links.comm, links.stream)),
      pending_(2 * static_cast<size_t>(stage.slots())) {}

StageExecutor::~StageExecutor() {
  for (auto& p : pending_) {
    if (p) (void)p->wait();
  }
}

core::Result<int> StageExecutor::slotsNeeded(ScheduleKind kind, int stage_index, int stages,
                                             int micro_batches) {
  RM_ASSIGN_OR_RETURN(std::vector<PipelineOp> ops,
                      stageSchedule(kind, stage_index, stages, micro_batches));
  return peakInFlight(ops);
}

core::Result<const std::vector<PipelineOp>*> StageExecutor::scheduleFor(int micro_batches) {
  auto it = schedules_.find(micro_batches);
  if (it == schedules_.end()) {
    RM_ASSIGN_OR_RETURN(std::vector<PipelineOp> ops,
                        stageSchedule(kind_, stage_index_, stages_, micro_batches));
    if (peakInFlight(ops) > stage_.slots()) {
      return core::invalidArgument("pipeline stage " + std::to_string(stage_index_) + ": the " +
                                   scheduleName(kind_) + " schedule keeps " +
                                   std::to_string(peakInFlight(ops)) +
                                   " micro-batches in flight but the stage has " +
                                   std::to_string(stage_.slots()) + " slots");
    }
    it = schedules_.emplace(micro_batches, std::move(ops)).first;
  }
  return &it->second;
}

// Micro-batch m of `micro_batches` over a mini-batch of `rows`: its first row and its rows (the
// first `rows % micro_batches` micro-batches take one more).
struct MicroSplit {
  int base, extra;
  MicroSplit(int rows, int micro_batches)
      : base(rows / micro_batches), extra(rows % micro_batches) {}
  int rows(int m) const { return base + (m < extra ? 1 : 0); }
  int first(int m) const { return m * base + std::min(m, extra); }
};

core::Status StageExecutor::waitSend(size_t index, StepStats& stats) {
  std::unique_ptr<comm::PendingSend>& p = pending_[index];
  if (!p) return core::Status::Ok();
  const auto t0 = Clock::now();
  core::Status s = p->wait();
  p.reset();
  stats.send_wait_seconds += since(t0);
  return s;
}

core::Status StageExecutor::doOp(const PipelineOp& op, const OpData& data, int64_t step,
                                 StepStats& stats) {
  const std::string where =
      "pipeline stage " + std::to_string(stage_index_) + ", step " + std::to_string(step);
  const size_t in_floats = stage_.inputSize(), out_floats = stage_.outputSize();
  const int slot = data.slot, rows = data.rows;
  auto options = [&](const char* what) {
    comm::PointToPointOptions opts;
    opts.timeout = links_.timeout;
    opts.tag = std::string(what) + " of micro-batch " + std::to_string(op.micro) + ", step " +
               std::to_string(step);
    return opts;
  };
  auto start_send = [&](const float* buffer, size_t floats, int peer, const char* what,
                        size_t index) -> core::Status {
    const size_t bytes = floats * sizeof(float);
    auto started = link_->startSend(buffer, bytes, peer, options(what));
    RM_RETURN_IF_ERROR_CTX(started.status(), where);
    pending_[index] = std::move(*started);
    stats.bytes_sent += bytes;
    return core::Status::Ok();
  };
  auto receive = [&](float* buffer, size_t floats, int peer, const char* what) {
    const size_t bytes = floats * sizeof(float);
    // The step's first receive waits for a neighbour's first pass: zeroing here keeps it off the
    // backward that starts the drain.
    if (clear_grads_at_receive_) {
      const auto c0 = Clock::now();
      stage_.clearGrads();
      clear_grads_at_receive_ = false;
      stats.clear_seconds += since(c0);
    }
    const auto t0 = Clock::now();
    core::Status s = link_->recv(buffer, bytes, peer, options(what));
    stats.recv_wait_seconds += since(t0);
    stats.bytes_received += bytes;
    return s.withContext(where);
  };
  // Slot `slot`'s buffers: pending_[2 * slot] sends its output, [2 * slot + 1] its input grad.
  const size_t send_index =
      2 * static_cast<size_t>(slot) + (op.kind == PipelineOp::kForward ? 0 : 1);
  RM_RETURN_IF_ERROR_CTX(waitSend(send_index, stats), where);
  if (op.kind == PipelineOp::kForward) {
    if (links_.prev < 0) {
      RM_RETURN_IF_ERROR_CTX(link_->flush(), where);
      stage_.loadInput(slot, data.x, rows);
    } else {
      RM_RETURN_IF_ERROR(receive(stage_.input(slot), rows * in_floats, links_.prev, "activations"));
    }
    const auto t0 = Clock::now();
    const float* out = stage_.forward(slot, rows);
    RM_RETURN_IF_ERROR_CTX(stage_.status(),
                           where + ": forward of micro-batch " + std::to_string(op.micro));
    if (links_.next < 0) stage_.addLoss(slot, data.labels, rows, data.grad_scale);
    const double seconds = since(t0);
    stats.compute_seconds += seconds;
    stats.forward_seconds += seconds;
    if (links_.next >= 0) {
      RM_RETURN_IF_ERROR(
          start_send(out, rows * out_floats, links_.next, "activations", send_index));
    }
    return core::Status::Ok();
  }
  if (links_.next >= 0) {
    RM_RETURN_IF_ERROR(
        receive(stage_.outputGrad(slot), rows * out_floats, links_.next, "gradients"));
  } else {
    RM_RETURN_IF_ERROR_CTX(link_->flush(), where);
  }
  const auto t0 = Clock::now();
  const float* din = stage_.backward(slot, rows);
  RM_RETURN_IF_ERROR_CTX(stage_.status(),
                         where + ": backward of micro-batch " + std::to_string(op.micro));
  stats.compute_seconds += since(t0);
  if (links_.prev >= 0) {
    RM_RETURN_IF_ERROR(start_send(din, rows * in_floats, links_.prev, "gradients", send_index));
  }
  return core::Status::Ok();
}

core::Result<StepStats> StageExecutor::run(const MiniBatch& batch, int64_t step) {
  const std::string where =
      "pipeline stage " + std::to_string(stage_index_) + ", step " + std::to_string(step);
  if (batch.rows < 1) return core::invalidArgument(where + ": an empty mini-batch");
  if (kind_ == ScheduleKind::kPipeDream) {
    return core::invalidArgument(where + ": pipedream never flushes; it runs as a stream");
  }
  // A short last mini-batch may hold fewer samples than there are micro-batches.
  const int micro_batches = std::min(micro_batches_, batch.rows);
  RM_ASSIGN_OR_RETURN(const std::vector<PipelineOp>* ops, scheduleFor(micro_batches));
  const MicroSplit split(batch.rows, micro_batches);
  if (split.rows(0) > stage_.microBatch()) {
    return core::invalidArgument(
        where + ": " + std::to_string(batch.rows) + " samples in " + std::to_string(micro_batches) +
        " micro-batches exceed the stage's micro-batch of " + std::to_string(stage_.microBatch()));
  }
  const auto start = Clock::now();
  StepStats stats;
  stage_.zeroGrads();
  clear_grads_at_receive_ = true;
  const size_t in_floats = stage_.inputSize();
  for (const PipelineOp& op : *ops) {
    const int m = op.micro;
    OpData data;
    data.slot = m % stage_.slots();
    data.rows = split.rows(m);
    if (batch.x != nullptr) data.x = batch.x + static_cast<size_t>(split.first(m)) * in_floats;
    if (batch.labels != nullptr) data.labels = batch.labels + split.first(m);
    data.grad_scale = static_cast<float>(data.rows) / static_cast<float>(batch.rows);
    RM_RETURN_IF_ERROR(doOp(op, data, step, stats));
  }
  for (size_t i = 0; i < pending_.size(); ++i) RM_RETURN_IF_ERROR_CTX(waitSend(i, stats), where);
  RM_RETURN_IF_ERROR_CTX(takeLosses(stats), where);
  stats.wall_seconds = since(start);
  return stats;
}

core::Result<model::StageLosses> StageExecutor::takeLosses() {
  const model::StageLosses losses = stage_.takeLosses();
  RM_RETURN_IF_ERROR(stage_.status());
  return losses;
}

core::Status StageExecutor::takeLosses(StepStats& stats) {
  RM_ASSIGN_OR_RETURN(const model::StageLosses losses, takeLosses());
  stats.loss_sum += losses.loss_sum;
  stats.correct += losses.correct;
  return core::Status::Ok();
}

core::Status StageExecutor::beginStream(int64_t micro_batches) {
  RM_ASSIGN_OR_RETURN(stream_, stageSchedule(ScheduleKind::kOneFOneB, stage_index_, stages_,
                                             static_cast<int>(micro_batches)));
  if (peakInFlight(stream_) > stage_.slots()) {
    return core::invalidArgument("pipeline stage " + std::to_string(stage_index_) +
                                 ": pipedream keeps " + std::to_string(peakInFlight(stream_)) +
                                 " micro-batches in flight but the stage has " +
                                 std::to_string(stage_.slots()) + " slots");
  }
  stream_pos_ = 0;
  stream_first_micro_ = 0;
  slot_rows_.assign(static_cast<size_t>(stage_.slots()), 0);
  slot_version_.assign(static_cast<size_t>(stage_.slots()), -1);
  // A stage with one slot runs each backward right after its forward: one version will do.
  extra_versions_ = stage_.slots() > 1 ? stage_.slots() : 0;
  for (int v = 1; v <= extra_versions_; ++v) (void)stage_.weightVersion(v);  // made up front
  settleVersions();
  return core::Status::Ok();
}

void StageExecutor::settleVersions() {
  if (newest_ != 0) {
    stage_.copyWeights(stage_.weightVersion(newest_), stage_.weightVersion(0));
    newest_ = 0;
  }
  stage_.useWeights(stage_.weightVersion(0));
}

core::Status StageExecutor::streamOp(const PipelineOp& op, OpData data, int64_t step,
                                     const Apply& apply, StepStats& stats) {
  const size_t slot = static_cast<size_t>(data.slot);
  if (op.kind == PipelineOp::kForward) {
    // Weight stashing: the backward of this micro-batch must see these weights, and no update
    // writes over a version a micro-batch in flight used.
    slot_version_[slot] = newest_;
    slot_rows_[slot] = data.rows;
    return doOp(op, data, step, stats);
  }
  data.rows = slot_rows_[slot];
  const int used = slot_version_[slot];
  slot_version_[slot] = -1;
  if (used != newest_) stage_.useWeights(stage_.weightVersion(used));
  stage_.zeroGrads();
  RM_RETURN_IF_ERROR(doOp(op, data, step, stats));
  // The stashed weights' gradient, applied to the newest weights, written into a version no
  // micro-batch in flight holds (there is one: slots + 1 versions, at most slots - 1 held
  // besides the newest). With one slot nothing is in flight and the update stays in place.
  int next = newest_;
  for (int v = 0; extra_versions_ > 0 && v <= extra_versions_; ++v) {
    if (v != newest_ &&
        std::find(slot_version_.begin(), slot_version_.end(), v) == slot_version_.end()) {
      next = v;
      break;
    }
  }
  const auto t0 = Clock::now();
  if (apply(stage_.weightVersion(newest_), stage_.weightVersion(next))) newest_ = next;
  stats.update_seconds += since(t0);
  stage_.useWeights(stage_.weightVersion(newest_));
  return core::Status::Ok();
}

core::Result<StepStats> StageExecutor::runStream(const MiniBatch& batch, int64_t step,
                                                 const Apply& apply) {
  const std::string where =
      "pipeline stage " + std::to_string(stage_index_) + ", step " + std::to_string(step);
  if (batch.rows < 1) return core::invalidArgument(where + ": an empty mini-batch");
  const int micro_batches = std::min(micro_batches_, batch.rows);
  const MicroSplit split(batch.rows, micro_batches);
  if (split.rows(0) > stage_.microBatch()) {
    return core::invalidArgument(where + ": micro-batches of " + std::to_string(split.rows(0)) +
                                 " rows exceed the stage's " + std::to_string(stage_.microBatch()));
  }
  const int64_t first = stream_first_micro_, end = first + micro_batches;
  const auto start = Clock::now();
  StepStats stats;
  const size_t in_floats = stage_.inputSize();
  // Up to (not including) the first forward of the next mini-batch; backwards of earlier
  // mini-batches' micro-batches come in between, as 1F1B orders them.
  for (; stream_pos_ < stream_.size(); ++stream_pos_) {
    const PipelineOp& op = stream_[stream_pos_];
    if (op.kind == PipelineOp::kForward && op.micro >= end) break;
    OpData data;
    data.slot = op.micro % stage_.slots();
    if (op.kind == PipelineOp::kForward) {
      const int m = static_cast<int>(op.micro - first);
      data.rows = split.rows(m);
      if (batch.x != nullptr) data.x = batch.x + static_cast<size_t>(split.first(m)) * in_floats;
      if (batch.labels != nullptr) data.labels = batch.labels + split.first(m);
    }
    data.grad_scale = 1.0f;  // each micro-batch is an update of its own: its mean loss
    RM_RETURN_IF_ERROR(streamOp(op, data, step, apply, stats));
  }
  stream_first_micro_ = end;
  if (streamEnded()) settleVersions();
  RM_RETURN_IF_ERROR_CTX(takeLosses(stats), where);
  stats.wall_seconds = since(start);
  return stats;
}

core::Result<StepStats> StageExecutor::drainStream(int64_t step, const Apply& apply) {
  const auto start = Clock::now();
  StepStats stats;
  // The backwards of micro-batches already forwarded, in order; forwards of new ones are skipped.
  for (; stream_pos_ < stream_.size(); ++stream_pos_) {
    const PipelineOp& op = stream_[stream_pos_];
    if (op.kind == PipelineOp::kForward) continue;
    if (op.micro >= stream_first_micro_) continue;  // never forwarded
    OpData data;
    data.slot = op.micro % stage_.slots();
    RM_RETURN_IF_ERROR(streamOp(op, data, step, apply, stats));
  }
  settleVersions();
  const std::string where =
      "pipeline stage " + std::to_string(stage_index_) + ", step " + std::to_string(step);
  for (size_t i = 0; i < pending_.size(); ++i) RM_RETURN_IF_ERROR_CTX(waitSend(i, stats), where);
  RM_RETURN_IF_ERROR_CTX(takeLosses(stats), where);
  stats.wall_seconds = since(start);
  return stats;
}

core::Result<EvaluationStats> StageExecutor::evaluate(const float* x, const int32_t* labels,
                                                      int rows, const std::string& what) {
  const std::string where = "pipeline stage " + std::to_string(stage_index_) + ", " + what;
  const size_t in_floats = stage_.inputSize(), out_floats = stage_.outputSize();
  const int chunk = stage_.microBatch();
  comm::PointToPointOptions opts;
  opts.timeout = links_.timeout;
  for (int first = 0; first < rows; first += chunk) {
    const int n = std::min(chunk, rows - first);
    opts.tag = "evaluation rows " + std::to_string(first) + "+" + std::to_string(n);
    if (links_.prev < 0) {
      stage_.loadInput(0, x + static_cast<size_t>(first) * in_floats, n);
    } else {
      RM_RETURN_IF_ERROR_CTX(
          link_->recv(stage_.input(0), sizeof(float) * n * in_floats, links_.prev, opts), where);
    }
    const float* out = stage_.forward(0, n);
    RM_RETURN_IF_ERROR_CTX(stage_.status(), where);
    if (links_.next < 0) {
      stage_.addEvaluationLoss(0, labels + first, n);
    } else {
      // Sent before the next chunk overwrites the output: data flows one way, so a plain send
      // cannot wait on a peer that waits on us.
      RM_RETURN_IF_ERROR_CTX(link_->send(out, sizeof(float) * n * out_floats, links_.next, opts),
                             where);
    }
  }
  auto losses = takeLosses();
  if (!losses.ok()) return losses.status().withContext(where);
  return *losses;
}

}  // namespace ringmaster::trainer::pipeline
