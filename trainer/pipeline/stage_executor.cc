#include "trainer/pipeline/stage_executor.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace ringmaster::trainer::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

StageExecutor::StageExecutor(model::ModelStage& stage, ScheduleKind kind, int stage_index,
                             int stages, int micro_batches, StageLinks links)
    : stage_(stage),
      kind_(kind),
      stage_index_(stage_index),
      stages_(stages),
      micro_batches_(micro_batches),
      links_(links),
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

core::Result<StepStats> StageExecutor::run(const MiniBatch& batch, int64_t step) {
  const std::string where =
      "pipeline stage " + std::to_string(stage_index_) + ", step " + std::to_string(step);
  if (batch.rows < 1) return core::invalidArgument(where + ": an empty mini-batch");
  // A short last mini-batch may hold fewer samples than there are micro-batches.
  const int micro_batches = std::min(micro_batches_, batch.rows);
  RM_ASSIGN_OR_RETURN(const std::vector<PipelineOp>* ops, scheduleFor(micro_batches));
  const int base = batch.rows / micro_batches, extra = batch.rows % micro_batches;
  auto rows_of = [&](int m) { return base + (m < extra ? 1 : 0); };
  auto first_row = [&](int m) { return m * base + std::min(m, extra); };
  if (base > stage_.microBatch() || (extra > 0 && base + 1 > stage_.microBatch())) {
    return core::invalidArgument(
        where + ": " + std::to_string(batch.rows) + " samples in " + std::to_string(micro_batches) +
        " micro-batches exceed the stage's micro-batch of " + std::to_string(stage_.microBatch()));
  }

  const auto start = Clock::now();
  StepStats stats;
  stage_.zeroGrads();
  const int slots = stage_.slots();
  const size_t in_floats = stage_.inputSize(), out_floats = stage_.outputSize();
  auto tag = [&](const char* what, int m) {
    return std::string(what) + " of micro-batch " + std::to_string(m) + ", step " +
           std::to_string(step);
  };
  auto wait_slot = [&](size_t index) -> core::Status {
    std::unique_ptr<comm::PendingSend>& p = pending_[index];
    if (!p) return core::Status::Ok();
    const auto t0 = Clock::now();
    core::Status s = p->wait();
    p.reset();
    stats.send_wait_seconds += since(t0);
    return s;
  };
  auto start_send = [&](const float* data, size_t floats, int peer, const std::string& what,
                        size_t index) -> core::Status {
    comm::PointToPointOptions opts;
    opts.timeout = links_.timeout;
    opts.tag = what;
    const size_t bytes = floats * sizeof(float);
    auto started = links_.comm->startSend(data, bytes, peer, opts);
    RM_RETURN_IF_ERROR_CTX(started.status(), where);
    pending_[index] = std::move(*started);
    stats.bytes_sent += bytes;
    return core::Status::Ok();
  };
  auto receive = [&](float* data, size_t floats, int peer, const std::string& what) {
    comm::PointToPointOptions opts;
    opts.timeout = links_.timeout;
    opts.tag = what;
    const size_t bytes = floats * sizeof(float);
    const auto t0 = Clock::now();
    core::Status s = links_.comm->recv(data, bytes, peer, opts);
    stats.recv_wait_seconds += since(t0);
    stats.bytes_received += bytes;
    return s;
  };

  for (const PipelineOp& op : *ops) {
    const int m = op.micro, rows = rows_of(m), slot = m % slots;
    // Slot `slot`'s buffers: pending_[2 * slot] sends its output, [2 * slot + 1] its input grad.
    const size_t send_index =
        2 * static_cast<size_t>(slot) + (op.kind == PipelineOp::kForward ? 0 : 1);
    RM_RETURN_IF_ERROR_CTX(wait_slot(send_index), where);
    if (op.kind == PipelineOp::kForward) {
      float* in = stage_.input(slot);
      if (links_.prev < 0) {
        std::memcpy(in, batch.x + first_row(m) * in_floats, sizeof(float) * rows * in_floats);
      } else {
        RM_RETURN_IF_ERROR_CTX(receive(in, rows * in_floats, links_.prev, tag("activations", m)),
                               where);
      }
      const auto t0 = Clock::now();
      const float* out = stage_.forward(slot, rows);
      RM_RETURN_IF_ERROR_CTX(stage_.tensorStatus(),
                             where + ": forward of micro-batch " + std::to_string(m));
      if (links_.next < 0) {
        int correct = 0;
        stats.loss_sum += stage_.loss(slot, batch.labels + first_row(m), rows,
                                      static_cast<float>(rows) / batch.rows, &correct);
        stats.correct += correct;
      }
      const double seconds = since(t0);
      stats.compute_seconds += seconds;
      stats.forward_seconds += seconds;
      if (links_.next >= 0) {
        RM_RETURN_IF_ERROR(
            start_send(out, rows * out_floats, links_.next, tag("activations", m), send_index));
      }
    } else {
      if (links_.next >= 0) {
        RM_RETURN_IF_ERROR_CTX(
            receive(stage_.outputGrad(slot), rows * out_floats, links_.next, tag("gradients", m)),
            where);
      }
      const auto t0 = Clock::now();
      const float* din = stage_.backward(slot, rows);
      RM_RETURN_IF_ERROR_CTX(stage_.tensorStatus(),
                             where + ": backward of micro-batch " + std::to_string(m));
      stats.compute_seconds += since(t0);
      if (links_.prev >= 0) {
        RM_RETURN_IF_ERROR(
            start_send(din, rows * in_floats, links_.prev, tag("gradients", m), send_index));
      }
    }
  }
  for (size_t i = 0; i < pending_.size(); ++i) RM_RETURN_IF_ERROR_CTX(wait_slot(i), where);
  stats.wall_seconds = since(start);
  return stats;
}

core::Result<EvaluationStats> StageExecutor::evaluate(const float* x, const int32_t* labels,
                                                      int rows, const std::string& what) {
  const std::string where = "pipeline stage " + std::to_string(stage_index_) + ", " + what;
  EvaluationStats stats;
  const size_t in_floats = stage_.inputSize(), out_floats = stage_.outputSize();
  const int chunk = stage_.microBatch();
  comm::PointToPointOptions opts;
  opts.timeout = links_.timeout;
  for (int first = 0; first < rows; first += chunk) {
    const int n = std::min(chunk, rows - first);
    opts.tag = "evaluation rows " + std::to_string(first) + "+" + std::to_string(n);
    float* in = stage_.input(0);
    if (links_.prev < 0) {
      std::memcpy(in, x + static_cast<size_t>(first) * in_floats, sizeof(float) * n * in_floats);
    } else {
      RM_RETURN_IF_ERROR_CTX(
          links_.comm->recv(in, sizeof(float) * n * in_floats, links_.prev, opts), where);
    }
    const float* out = stage_.forward(0, n);
    RM_RETURN_IF_ERROR_CTX(stage_.tensorStatus(), where);
    if (links_.next < 0) {
      int correct = 0;
      stats.loss_sum += stage_.evaluationLoss(0, labels + first, n, &correct);
      stats.correct += correct;
    } else {
      // Sent before the next chunk overwrites the output: data flows one way, so a plain send
      // cannot wait on a peer that waits on us.
      RM_RETURN_IF_ERROR_CTX(
          links_.comm->send(out, sizeof(float) * n * out_floats, links_.next, opts), where);
    }
  }
  return stats;
}

}  // namespace ringmaster::trainer::pipeline
