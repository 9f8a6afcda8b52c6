#include "trainer/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer {

using Clock = std::chrono::steady_clock;

double learningRateAt(const contract::TrainerSettings::Optimizer& optimizer, int64_t step,
                      double total_steps) {
  const double base = optimizer.learning_rate;
  if (optimizer.schedule != contract::LrSchedule::kCosine || total_steps <= 0) return base;
  return base * 0.5 * (1.0 + std::cos(M_PI * static_cast<double>(step) / total_steps));
}

namespace {

// A population-based training member's round after epoch pos.epoch: its checkpoint for the
// others, the round's decision, and, when it exploits, the other member's weights and its
// optimizer values loaded in place (no restart: the next step trains on them).
core::Status memberRound(const contract::TrainerSettings& settings, const LoopContext& context,
                         StepEngine& engine, const Position& pos, const EpochTotals& totals,
                         TrainSummary* summary) {
  pbt::Member& member = *context.pbt;
  const double samples = std::max(1.0f, totals.values[2]);
  const double objective =
      settings.pbt.loss ? totals.values[1] / samples : totals.values[0] / samples;
  const auto start = Clock::now();
  RM_ASSIGN_OR_RETURN(
      std::string checkpoint,
      engine.writeMemberCheckpoint(member.directory().checkpointDir(member.name()), pos));
  RM_ASSIGN_OR_RETURN(std::optional<pbt::Decision> decision,
                      member.interval(pos.epoch, pos.step, objective, checkpoint, context.stop));
  const auto met = Clock::now();
  if (context.metrics) context.metrics->pbt_objective->Set(objective);
  if (decision) {
    RM_RETURN_IF_ERROR_CTX(engine.exploit(decision->checkpoint, decision->optimizer),
                           "pbt round " + std::to_string(pos.epoch) + ": taking " +
                               decision->entry.source + "'s checkpoint " + decision->checkpoint);
    if (context.metrics) context.metrics->pbt_exploits->Increment();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - met).count();
    RM_LOG(INFO, STEP) << "pbt round " << pos.epoch << " at step " << pos.step << ": "
                       << member.name() << " (" << objective << ") continues from "
                       << decision->entry.source << " (" << decision->entry.source_objective
                       << ") with " << search::describe(decision->entry.parameters)
                       << "; exploit took " << static_cast<int64_t>(ms) << " ms";
  } else {
    RM_LOG(INFO, STEP) << "pbt round " << pos.epoch << " at step " << pos.step << ": "
                       << member.name() << " (" << objective << ") trains on with "
                       << search::describe(member.parameters());
  }
  summary->pbt_round_seconds += std::chrono::duration<double>(met - start).count();
  return core::Status::Ok();
}

}  // namespace

core::Status runTrainingLoop(const contract::TrainerSettings& settings, const LoopContext& context,
                             StepEngine& engine, Position pos, TrainSummary* summary) {
  const bool checkpoints = !settings.checkpoint.path.empty();
  const bool writer = context.checkpoint_writer && checkpoints;
  const int data_replicas = context.data_replicas > 0 ? context.data_replicas : context.world;
  const int64_t max_steps = settings.max_steps;
  const int64_t num_batches = engine.batchesPerEpoch();
  RunReport report(context.rank, context.world, settings.epochs, pos.epoch, context.metrics);
  bool reached_max_steps = false;  // in this run: the position then needs a checkpoint

  if (trainingComplete(settings, pos)) {
    RM_ASSIGN_OR_RETURN(EpochTotals totals, engine.evaluate(0, 0, "evaluating the restored model"));
    report.endRestored(pos, totals, summary);
  }

  for (int64_t epoch = pos.epoch; !trainingComplete(settings, pos); ++epoch) {
    const int64_t first_batch = epoch == pos.epoch ? pos.step_in_epoch : 0;
    if (context.metrics) context.metrics->epoch->Set(static_cast<double>(epoch + 1));
    RM_RETURN_IF_ERROR(engine.beginEpoch(epoch, first_batch));
    const auto epoch_start = Clock::now();
    int64_t epoch_samples = 0, steps = 0;

    for (int64_t b = first_batch; b < num_batches; ++b) {
      if (context.stop && context.stop->stopRequested()) {
        if (writer) {
          RM_RETURN_IF_ERROR(engine.saveCheckpoint({epoch, pos.step, b}));
          RM_LOG(INFO, CKPT) << "checkpoint written at step " << pos.step << " before stopping";
        }
        return core::cancelled(context.stop->reason() + ": stopped at epoch " +
                               std::to_string(epoch + 1) + " step " + std::to_string(pos.step));
      }
      if (max_steps > 0 && pos.step >= max_steps) {
        reached_max_steps = true;
        break;
      }
      RM_ASSIGN_OR_RETURN(const int samples, engine.step(epoch, b, pos.step));
      ++pos.step;
      pos.epoch = epoch;  // where a checkpoint taken now (max_steps, stop) resumes
      pos.step_in_epoch = b + 1;
      ++steps;
      epoch_samples += static_cast<int64_t>(samples) * data_replicas;
      if (writer && settings.checkpoint.every_steps > 0 &&
          pos.step % settings.checkpoint.every_steps == 0 && b + 1 < num_batches) {
        RM_RETURN_IF_ERROR(engine.saveCheckpoint({epoch, pos.step, b + 1}));
      }
    }
    RM_ASSIGN_OR_RETURN(EpochMeasures measured, engine.endEpoch(epoch, steps));
    const double epoch_wall = std::chrono::duration<double>(Clock::now() - epoch_start).count();

    RM_ASSIGN_OR_RETURN(EpochTotals totals, engine.evaluate(measured.train_loss_sum, steps,
                                                            "epoch " + std::to_string(epoch + 1)));
    report.endEpoch({epoch, epoch_wall, epoch_samples, steps, measured.comm_seconds,
                     measured.exposed_seconds, measured.comm_bytes, measured.where},
                    totals, summary);
    if (!reached_max_steps) {
      pos = {epoch + 1, pos.step, 0};
      summary->epochs = epoch + 1;
    } else {
      summary->epochs = epoch;
    }
    if (writer && !reached_max_steps) RM_RETURN_IF_ERROR(engine.saveCheckpoint(pos));
    if (context.pbt != nullptr && !reached_max_steps && !trainingComplete(settings, pos)) {
      RM_RETURN_IF_ERROR(memberRound(settings, context, engine, pos, totals, summary));
    }
  }
  if (writer && reached_max_steps) RM_RETURN_IF_ERROR(engine.saveCheckpoint(pos));

  report.finish(pos.step, engine.allreduceCalls(), engine.allreduceBytes(), summary);
  return engine.finish(*summary, report.trainSeconds());
}

}  // namespace ringmaster::trainer
