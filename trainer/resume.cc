#include "trainer/resume.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer {

using Clock = std::chrono::steady_clock;
using core::Status;

bool trainingComplete(const contract::TrainerSettings& settings, const Position& pos) {
  return pos.epoch >= settings.epochs || (settings.max_steps > 0 && pos.step >= settings.max_steps);
}

Status restoreOrSync(const contract::TrainerSettings& settings, comm::Communicator& comm,
                     model::Model& model, optim::Optimizer& optimizer, Position* pos,
                     int64_t* resumed_from) {
  const int rank = comm.rank();
  // header: ok(1)/error(-1), found, epoch, step, step_in_epoch, optimizer_step
  int64_t header[6] = {1, 0, 0, 0, 0, 0};
  Status rank0_error;
  if (rank == 0 && !settings.checkpoint.path.empty()) {
    auto loaded = checkpoint::loadNewestCheckpoint(settings.checkpoint.path, model.signature());
    if (!loaded.ok()) {
      rank0_error = loaded.status();
      header[0] = -1;
    } else if (loaded->has_value()) {
      const checkpoint::Checkpoint& ck = **loaded;
      auto state = optimizer.state();
      if (!checkpointFits(ck, model.params().size(), optimizer)) {
        rank0_error = core::invalidArgument(
            "checkpoint in " + settings.checkpoint.path + " (step " + std::to_string(ck.step) +
            ") was written with optimizer '" + ck.optimizer_type + "' and cannot resume '" +
            optimizer.type() + "': use another checkpoint.path");
        header[0] = -1;
      } else {
        std::copy(ck.params.begin(), ck.params.end(), model.params().begin());
        for (size_t i = 0; i < state.size(); ++i) *state[i] = ck.optimizer_state[i];
        header[1] = 1;
        header[2] = ck.epoch;
        header[3] = ck.step;
        header[4] = ck.step_in_epoch;
        header[5] = ck.optimizer_step;
      }
    }
  }
  if (comm.size() > 1) {
    RM_RETURN_IF_ERROR_CTX(comm.broadcast(header, sizeof header, 0), "broadcast resume header");
  }
  if (header[0] < 0) {
    if (rank == 0) return rank0_error.withContext("restoring checkpoint");
    return core::invalidArgument("rank 0 could not restore its checkpoint (see rank 0's log)");
  }
  if (comm.size() > 1) {
    auto params = model.params();
    RM_RETURN_IF_ERROR_CTX(comm.broadcast(params.data(), params.size_bytes(), 0),
                           "broadcast parameters");
    if (header[1]) {
      for (auto* buffer : optimizer.state())
        RM_RETURN_IF_ERROR_CTX(comm.broadcast(buffer->data(), buffer->size() * sizeof(float), 0),
                               "broadcast optimizer state");
    }
  }
  if (header[1]) {
    pos->epoch = header[2];
    pos->step = header[3];
    pos->step_in_epoch = header[4];
    optimizer.setStepCount(header[5]);
    *resumed_from = pos->step;
    // A checkpoint at the end of training has no epoch to resume in; the training loop's
    // report says what the run then does (RunReport::endRestored).
    if (trainingComplete(settings, *pos)) {
      RM_LOG(INFO, CKPT) << "resumed from checkpoint at step " << pos->step << " (" << pos->epoch
                         << " of " << settings.epochs << " epochs done)";
    } else {
      RM_LOG(INFO, CKPT) << "resumed from checkpoint at step " << pos->step << " (epoch "
                         << pos->epoch + 1 << ", step " << pos->step_in_epoch << " of the epoch)";
    }
  }
  return Status::Ok();
}

bool checkpointFits(const checkpoint::Checkpoint& ck, size_t params_count,
                    optim::Optimizer& optimizer) {
  auto state = optimizer.state();
  bool fits = ck.params.size() == params_count && ck.optimizer_type == optimizer.type() &&
              ck.optimizer_state.size() == state.size();
  for (size_t i = 0; fits && i < state.size(); ++i) {
    fits = ck.optimizer_state[i].size() == state[i]->size();
  }
  return fits;
}

Status writeTrainingCheckpoint(const contract::TrainerSettings& settings, const std::string& dir,
                               const std::string& signature, std::span<const float> params,
                               optim::Optimizer& optimizer, const Position& pos,
                               TrainerMetrics* metrics) {
  checkpoint::Checkpoint ck;
  ck.epoch = pos.epoch;
  ck.step = pos.step;
  ck.step_in_epoch = pos.step_in_epoch;
  ck.model_signature = signature;
  ck.params.assign(params.begin(), params.end());
  ck.optimizer_type = optimizer.type();
  ck.optimizer_step = optimizer.stepCount();
  for (auto* buffer : optimizer.state()) ck.optimizer_state.push_back(*buffer);
  const auto t0 = Clock::now();
  RM_RETURN_IF_ERROR_CTX(
      checkpoint::writeCheckpoint(dir, ck, static_cast<int>(settings.checkpoint.keep)),
      "writing checkpoint at step " + std::to_string(pos.step));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (metrics) {
    metrics->checkpoints->Increment();
    metrics->checkpoint_seconds->Observe(seconds);
  }
  RM_LOG(DEBUG, CKPT) << "checkpoint at step " << pos.step << " written in "
                      << static_cast<int>(seconds * 1000) << " ms";
  return Status::Ok();
}

Status saveCheckpoint(const contract::TrainerSettings& settings, model::Model& model,
                      optim::Optimizer& optimizer, const Position& pos, TrainerMetrics* metrics) {
  return writeTrainingCheckpoint(settings, settings.checkpoint.path, model.signature(),
                                 model.params(), optimizer, pos, metrics);
}

}  // namespace ringmaster::trainer
