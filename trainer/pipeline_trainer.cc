#include "trainer/pipeline_trainer.h"

#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "ringmaster/core/log.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/model/model_stage.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline/partition.h"
#include "trainer/pipeline/stage_executor.h"
#include "trainer/training_loop.h"

namespace ringmaster::trainer {
namespace {

using Clock = std::chrono::steady_clock;
using core::Result;
using core::Status;

// Forward + backward timings are noisy; the fastest of a few runs is what the layer costs.
constexpr int kProfileRepeats = 3;

std::string stageName(int stage, int stages) {
  return "stage " + std::to_string(stage) + " of " + std::to_string(stages);
}

std::string stageDirectory(const TrainerConfig& config, int stage, int stages) {
  return config.checkpoint.path + "/stage-" + std::to_string(stage) + "-of-" +
         std::to_string(stages);
}

// The first layer of every stage: the user's cut, or rank 0's measured and balanced one,
// broadcast so that every stage builds from the same numbers.
Result<pipeline::StageStarts> choosePartition(const TrainerConfig& config, comm::Communicator& comm,
                                              int micro_rows) {
  const int stages = config.pipeline.stages;
  RM_ASSIGN_OR_RETURN(const int layers, model::ModelStage::layerCount(config.model));
  if (!config.pipeline.partition.empty()) {
    pipeline::StageStarts starts(config.pipeline.partition.begin(),
                                 config.pipeline.partition.end());
    RM_RETURN_IF_ERROR(pipeline::checkPartition(starts, layers));
    if (static_cast<int>(starts.size()) != stages) {
      return core::invalidArgument(
          "parallelism.pipeline.partition: " + std::to_string(starts.size()) + " starts for " +
          std::to_string(stages) + " stages");
    }
    return starts;
  }
  std::vector<int32_t> cut(stages, 0);
  if (comm.rank() == 0) {
    RM_ASSIGN_OR_RETURN(auto whole,
                        model::ModelStage::create(config.model, config.seed, micro_rows, 0, layers,
                                                  /*slots=*/1));
    const std::vector<double> seconds = whole->measureLayerSeconds(kProfileRepeats);
    RM_ASSIGN_OR_RETURN(pipeline::StageStarts starts, pipeline::balancedPartition(seconds, stages));
    std::string costs;
    for (size_t i = 0; i < seconds.size(); ++i) {
      char text[32];
      std::snprintf(text, sizeof text, "%s%.3f", i ? " " : "", seconds[i] * 1e3);
      costs += text;
    }
    std::string where;
    for (int s = 0; s < stages; ++s) where += (s ? ", " : "") + std::to_string(starts[s]);
    RM_LOG(INFO, STEP) << "pipeline partition: layer costs [" << costs
                       << "] ms per micro-batch; stages start at layers [" << where << "]";
    std::copy(starts.begin(), starts.end(), cut.begin());
  }
  RM_RETURN_IF_ERROR_CTX(comm.broadcast(cut.data(), cut.size() * sizeof(int32_t), 0),
                         "broadcast the pipeline partition");
  return pipeline::StageStarts(cut.begin(), cut.end());
}

class PipelineEngine final : public StepEngine {
 public:
  PipelineEngine(const TrainerConfig& config, const TrainerContext& ctx, model::ModelStage& stage,
                 optim::Optimizer& optimizer, pipeline::StageExecutor& executor, int stage_index,
                 int stages, std::string signature)
      : config_(config),
        ctx_(ctx),
        comm_(*ctx.comm),
        stage_(stage),
        optimizer_(optimizer),
        executor_(executor),
        stage_index_(stage_index),
        stages_(stages),
        last_(stage_index + 1 == stages),
        signature_(std::move(signature)),
        train_(*ctx.train),
        test_(*ctx.test),
        batch_(static_cast<int>(config.batch_size)),
        // One sampler for the whole pipeline: every stage takes the same mini-batch.
        sampler_(train_.size(), 0, 1, config.seed),
        total_steps_(static_cast<double>(config.epochs) *
                     static_cast<double>(sampler_.numBatches(batch_))),
        x_(static_cast<size_t>(batch_) * train_.featureSize()),
        y_(static_cast<size_t>(batch_)) {}

  int64_t batchesPerEpoch() const override {
    return static_cast<int64_t>(sampler_.numBatches(batch_));
  }

  Status beginEpoch(int64_t epoch, int64_t) override {
    sampler_.setEpoch(epoch);
    loss_sum_ = 0;
    schedule_seconds_ = compute_seconds_ = 0;
    epoch_bytes_ = 0;
    return Status::Ok();
  }

  Result<int> step(int64_t epoch, int64_t b, int64_t steps_done) override {
    const int n = data::gatherShardBatch(train_, sampler_, b, batch_, x_.data(), y_.data());
    const int64_t step = steps_done + 1;

    const auto t0 = Clock::now();
    RM_ASSIGN_OR_RETURN(const pipeline::StepStats stats,
                        executor_.run({x_.data(), y_.data(), n}, step));
    optimizer_.setLearningRate(learningRateAt(config_, steps_done, total_steps_));
    optimizer_.step(stage_.params(), stage_.grads());
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    schedule_seconds_ += stats.wall_seconds;
    compute_seconds_ += stats.compute_seconds;
    epoch_bytes_ += stats.bytes_sent + stats.bytes_received;
    if (TrainerMetrics* metrics = ctx_.metrics) {
      metrics->samples->Increment(n);
      metrics->steps->Increment();
      metrics->step_seconds->Observe(seconds);
      const TrainerMetrics::Pipeline& p = metrics->pipeline;
      if (p.compute_seconds != nullptr) {
        p.compute_seconds->Increment(stats.compute_seconds);
        p.send_bytes->Increment(static_cast<double>(stats.bytes_sent));
        p.recv_bytes->Increment(static_cast<double>(stats.bytes_received));
        p.send_wait_seconds->Increment(stats.send_wait_seconds);
        p.recv_wait_seconds->Increment(stats.recv_wait_seconds);
        p.activation_bytes->Set(static_cast<double>(stage_.activationBytes()));
      }
    }
    if (last_) {
      const double loss = stats.loss_sum / n;
      loss_sum_ += loss;
      if (!std::isfinite(loss)) {
        return core::invalidArgument(
            "pipeline " + stageName(stage_index_, stages_) + ": loss became " +
            std::to_string(loss) + " at step " + std::to_string(step) + " (learning rate " +
            std::to_string(config_.optimizer.learning_rate) + " too high?)");
      }
      if (config_.log_every_steps > 0 && step % config_.log_every_steps == 0) {
        RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << step << " loss " << loss;
      }
    }
    return n;
  }

  Result<EpochMeasures> endEpoch(int64_t epoch, int64_t steps) override {
    EpochMeasures m;
    m.train_loss_sum = last_ ? loss_sum_ : 0;
    m.comm_bytes = epoch_bytes_;
    // Of the time inside the schedule: data loading and the optimizer step are not the bubble.
    const double bubble = schedule_seconds_ > 0 ? 1.0 - compute_seconds_ / schedule_seconds_ : 0;
    if (ctx_.metrics != nullptr && ctx_.metrics->pipeline.bubble_ratio != nullptr) {
      ctx_.metrics->pipeline.bubble_ratio->Set(bubble);
    }
    char line[160];
    std::snprintf(line, sizeof line,
                  "pipeline %s: epoch %lld, %lld steps, bubble %.1f%% of the schedule's time, "
                  "activations %.1f MiB",
                  stageName(stage_index_, stages_).c_str(), static_cast<long long>(epoch + 1),
                  static_cast<long long>(steps), 100.0 * bubble,
                  static_cast<double>(stage_.activationBytes()) / (1 << 20));
    RM_LOG(INFO, STEP) << line;
    return m;
  }

  Result<EpochTotals> evaluate(double train_loss_sum, int64_t train_steps,
                               const std::string& what) override {
    std::vector<float> x;
    std::vector<int32_t> y;
    const int rows = static_cast<int>(test_.size());
    std::vector<uint32_t> all(test_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint32_t>(i);
    if (stage_index_ == 0 || last_) {
      x.resize(all.size() * test_.featureSize());
      y.resize(all.size());
      data::gatherBatch(test_, all.data(), all.size(), x.data(), y.data());
    }
    RM_ASSIGN_OR_RETURN(const pipeline::EvaluationStats stats,
                        executor_.evaluate(x.data(), y.data(), rows, what));
    // Only the last stage scores; the others add zeros to the sum.
    EpochTotals totals(last_ ? stats.correct : 0, last_ ? stats.loss_sum : 0, last_ ? rows : 0,
                       last_ ? train_loss_sum : 0, last_ ? static_cast<double>(train_steps) : 0);
    comm::AllreduceOptions opts;
    opts.timeout = std::chrono::seconds(config_.comm_timeout_seconds);
    opts.tag = "epoch totals";
    RM_RETURN_IF_ERROR_CTX(comm_.allreduceSum(totals.values, EpochTotals::kCount, opts),
                           "pipeline " + stageName(stage_index_, stages_) + ": " + what);
    return totals;
  }

  Status saveCheckpoint(const Position& at) override {
    checkpoint::Checkpoint ck;
    ck.epoch = at.epoch;
    ck.step = at.step;
    ck.step_in_epoch = at.step_in_epoch;
    ck.model_signature = signature_;
    ck.params.assign(stage_.params().begin(), stage_.params().end());
    ck.optimizer_type = optimizer_.type();
    ck.optimizer_step = optimizer_.stepCount();
    for (auto* buffer : optimizer_.state()) ck.optimizer_state.push_back(*buffer);
    const auto t0 = Clock::now();
    RM_RETURN_IF_ERROR_CTX(
        checkpoint::writeCheckpoint(stageDirectory(config_, stage_index_, stages_), ck,
                                    static_cast<int>(config_.checkpoint.keep)),
        "pipeline " + stageName(stage_index_, stages_) + ": writing checkpoint at step " +
            std::to_string(at.step));
    if (TrainerMetrics* metrics = ctx_.metrics) {
      metrics->checkpoints->Increment();
      metrics->checkpoint_seconds->Observe(
          std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return Status::Ok();
  }

  uint64_t allreduceCalls() const override { return 0; }
  uint64_t allreduceBytes() const override { return 0; }

  Status finish(const TrainSummary&, double) override { return Status::Ok(); }

 private:
  const TrainerConfig& config_;
  const TrainerContext& ctx_;
  comm::Communicator& comm_;
  model::ModelStage& stage_;
  optim::Optimizer& optimizer_;
  pipeline::StageExecutor& executor_;
  const int stage_index_, stages_;
  const bool last_;
  const std::string signature_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  const int batch_;
  data::ShardedSampler sampler_;
  const double total_steps_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
  double loss_sum_ = 0, schedule_seconds_ = 0, compute_seconds_ = 0;
  uint64_t epoch_bytes_ = 0;
};

// Every rank's int64 `mine`, in rank order (one broadcast per rank: tiny and exact).
Result<std::vector<int64_t>> gatherFromEveryRank(comm::Communicator& comm, int64_t mine) {
  std::vector<int64_t> all(comm.size(), 0);
  all[comm.rank()] = mine;
  for (int r = 0; r < comm.size(); ++r) {
    RM_RETURN_IF_ERROR(comm.broadcast(&all[r], sizeof(int64_t), r));
  }
  return all;
}

// Restores this stage at the newest step every stage holds, or leaves the fresh parameters
// when no stage has a checkpoint. Sets *pos and *resumed_from after a resume.
Status restoreStage(const TrainerConfig& config, comm::Communicator& comm, model::ModelStage& stage,
                    optim::Optimizer& optimizer, const std::string& signature, int stage_index,
                    int stages, Position* pos, int64_t* resumed_from) {
  std::optional<checkpoint::Checkpoint> newest;
  const std::string dir = stageDirectory(config, stage_index, stages);
  if (!config.checkpoint.path.empty()) {
    RM_ASSIGN_OR_RETURN(newest, checkpoint::loadNewestCheckpoint(dir, signature));
  }
  RM_ASSIGN_OR_RETURN(const std::vector<int64_t> steps,
                      gatherFromEveryRank(comm, newest ? newest->step : -1));
  const int64_t common = *std::min_element(steps.begin(), steps.end());
  const int64_t ahead = *std::max_element(steps.begin(), steps.end());
  if (ahead < 0) return Status::Ok();  // nothing to resume
  if (common < 0) {
    const int missing = static_cast<int>(std::find(steps.begin(), steps.end(), -1) - steps.begin());
    return core::invalidArgument(
        "pipeline: " + stageName(missing, stages) + " has no checkpoint under " +
        config.checkpoint.path + " while another stage has one at step " + std::to_string(ahead) +
        ": the stages' checkpoints are not from one run; use another checkpoint.path");
  }
  if (newest->step != common) {
    // Another stage did not finish writing this step: go back to the last one all have.
    const std::string file = dir + "/" + checkpoint::checkpointFileName(common);
    RM_ASSIGN_OR_RETURN(newest, checkpoint::readCheckpointFile(file));
    RM_LOG(INFO, CKPT) << "pipeline " << stageName(stage_index, stages) << ": back to step "
                       << common << ", the newest every stage holds";
  }
  const checkpoint::Checkpoint& ck = *newest;
  auto state = optimizer.state();
  bool compatible = ck.model_signature == signature && ck.params.size() == stage.params().size() &&
                    ck.optimizer_type == optimizer.type() &&
                    ck.optimizer_state.size() == state.size();
  for (size_t i = 0; compatible && i < state.size(); ++i) {
    compatible = ck.optimizer_state[i].size() == state[i]->size();
  }
  if (!compatible) {
    return core::invalidArgument("pipeline " + stageName(stage_index, stages) + ": checkpoint " +
                                 dir + " step " + std::to_string(ck.step) + " was written for '" +
                                 ck.model_signature + "' with optimizer '" + ck.optimizer_type +
                                 "' and cannot resume '" + signature + "' with '" +
                                 optimizer.type() + "': use another checkpoint.path");
  }
  std::copy(ck.params.begin(), ck.params.end(), stage.params().begin());
  for (size_t i = 0; i < state.size(); ++i) *state[i] = ck.optimizer_state[i];
  optimizer.setStepCount(ck.optimizer_step);
  *pos = {ck.epoch, ck.step, ck.step_in_epoch};
  *resumed_from = ck.step;
  RM_LOG(INFO, CKPT) << "pipeline " << stageName(stage_index, stages)
                     << ": resumed from checkpoint at step " << ck.step;
  return Status::Ok();
}

}  // namespace

Result<TrainSummary> trainPipelineStage(const TrainerConfig& config, const TrainerContext& ctx,
                                        std::vector<float>* stage_params) {
  _mm_setcsr(_mm_getcsr() | 0x8040);  // flush denormals, as the data-parallel trainer does
  comm::Communicator& comm = *ctx.comm;
  const int stages = config.pipeline.stages;
  const int stage_index = comm.rank();
  if (comm.size() != stages) {
    return core::invalidArgument("parallelism.pipeline.stages: " + std::to_string(stages) +
                                 " stages need a world of " + std::to_string(stages) +
                                 " ranks (one per stage), got " + std::to_string(comm.size()));
  }
  const int micro_batches = config.pipeline.micro_batches;
  if (micro_batches < 1 || config.batch_size % micro_batches != 0) {
    return core::invalidArgument(
        "parallelism.pipeline.microBatches: " + std::to_string(micro_batches) +
        " must divide batchSize " + std::to_string(config.batch_size));
  }
  const int micro_rows = static_cast<int>(config.batch_size / micro_batches);
  RM_ASSIGN_OR_RETURN(const pipeline::ScheduleKind kind,
                      pipeline::parseScheduleKind(config.pipeline.schedule));
  RM_ASSIGN_OR_RETURN(const pipeline::StageStarts starts,
                      choosePartition(config, comm, micro_rows));
  RM_ASSIGN_OR_RETURN(const int layers, model::ModelStage::layerCount(config.model));
  const int first = starts[stage_index];
  const int end = stage_index + 1 < stages ? starts[stage_index + 1] : layers;
  RM_ASSIGN_OR_RETURN(const int slots, pipeline::StageExecutor::slotsNeeded(kind, stage_index,
                                                                            stages, micro_batches));
  RM_ASSIGN_OR_RETURN(auto stage, model::ModelStage::create(config.model, config.seed, micro_rows,
                                                            first, end, slots));
  if (stage->isFirst() && stage->inputSize() != ctx.train->featureSize()) {
    return core::invalidArgument("model expects " + std::to_string(stage->inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(ctx.train->featureSize()));
  }
  RM_ASSIGN_OR_RETURN(auto optimizer,
                      optim::Optimizer::create(config.optimizer, stage->params().size()));

  // A stage's checkpoint holds its layers only: its signature names them.
  RM_ASSIGN_OR_RETURN(auto whole, model::Model::create(config.model, config.seed, 1));
  const std::string signature = whole->signature() + " layers [" + std::to_string(first) + ", " +
                                std::to_string(end) + ") of " + std::to_string(layers);
  whole.reset();

  TrainSummary summary;
  summary.world_size = comm.size();
  summary.backend = comm.backend();
  summary.model_signature = signature;
  Position pos;
  RM_RETURN_IF_ERROR(restoreStage(config, comm, *stage, *optimizer, signature, stage_index, stages,
                                  &pos, &summary.resumed_from_step));

  pipeline::StageLinks links;
  links.comm = &comm;
  links.prev = stage_index > 0 ? stage_index - 1 : -1;
  links.next = stage_index + 1 < stages ? stage_index + 1 : -1;
  links.timeout = std::chrono::seconds(config.comm_timeout_seconds);
  pipeline::StageExecutor executor(*stage, kind, stage_index, stages, micro_batches, links);
  RM_LOG(INFO, STEP) << "pipeline " << stageName(stage_index, stages) << ": layers [" << first
                     << ", " << end << ") of " << layers << ", " << stage->params().size()
                     << " parameters, " << micro_batches << " micro-batches of " << micro_rows
                     << " (" << config.pipeline.schedule << ", " << slots << " in flight), backend "
                     << comm.backend();

  PipelineEngine engine(config, ctx, *stage, *optimizer, executor, stage_index, stages, signature);
  RM_RETURN_IF_ERROR(runTrainingLoop(config,
                                     {.rank = stage_index,
                                      .world = stages,
                                      .data_replicas = 1,
                                      .checkpoint_writer = true,
                                      .stop = ctx.stop,
                                      .metrics = ctx.metrics},
                                     engine, pos, &summary));
  if (stage_params != nullptr) {
    stage_params->assign(stage->params().begin(), stage->params().end());
  }
  return summary;
}

}  // namespace ringmaster::trainer
