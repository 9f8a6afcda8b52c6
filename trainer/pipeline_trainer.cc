#include "trainer/pipeline_trainer.h"

#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ringmaster/core/log.h"
#include "trainer/autotune/tuning_session.h"
#include "trainer/autotuner.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/model/model_stage.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline/partition.h"
#include "trainer/pipeline/resume_plan.h"
#include "trainer/pipeline/stage_executor.h"
#include "trainer/training_loop.h"

namespace ringmaster::trainer {
namespace {

using Clock = std::chrono::steady_clock;
using core::Result;
using core::Status;

// Forward + backward timings are noisy; the fastest of a few runs is what the layer costs.
constexpr int kProfileRepeats = 3;

// The pipeline library's name for the contract's schedule.
pipeline::ScheduleKind scheduleKind(contract::PipelineSchedule schedule) {
  switch (schedule) {
    case contract::PipelineSchedule::kGPipe:
      return pipeline::ScheduleKind::kGPipe;
    case contract::PipelineSchedule::kOneFOneB:
      return pipeline::ScheduleKind::kOneFOneB;
    case contract::PipelineSchedule::kPipeDream:
      return pipeline::ScheduleKind::kPipeDream;
  }
  return pipeline::ScheduleKind::kOneFOneB;  // not reached: every schedule is above
}

std::string stageName(int stage, int stages) {
  return "stage " + std::to_string(stage) + " of " + std::to_string(stages);
}

// Where this rank sits in a world of D x S x T ranks: rank ((d * S) + s) * T + t is tensor rank
// t of stage s of replica d. Tensor groups are neighbouring ranks (a pod, with procsPerReplica
// T), then stages, then replicas; stage s, tensor rank t of every replica form a data-parallel
// group.
struct Layout {
  int stages = 1, replicas = 1, tensor = 1;
  int stage = 0, replica = 0, tensor_rank = 0;
  int rank = 0;
  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
};

std::string stageDirectory(const contract::TrainerSettings& settings, const Layout& layout) {
  std::string dir = settings.checkpoint.path + "/stage-" + std::to_string(layout.stage) + "-of-" +
                    std::to_string(layout.stages);
  if (layout.tensor > 1) {
    dir += "-tensor-" + std::to_string(layout.tensor_rank) + "-of-" + std::to_string(layout.tensor);
  }
  return dir;
}

// The first layer of every stage: the user's cut, or rank 0's measured and balanced one,
// broadcast so that every stage builds from the same numbers.
Result<pipeline::StageStarts> choosePartition(const contract::TrainerSettings& settings,
                                              const model::ModelConfig& model_config,
                                              comm::Communicator& comm, int micro_rows) {
  const int stages = settings.pipeline.stages;
  RM_ASSIGN_OR_RETURN(const int layers, model::ModelStage::layerCount(model_config));
  if (!settings.pipeline.partition.empty()) {
    pipeline::StageStarts starts(settings.pipeline.partition.begin(),
                                 settings.pipeline.partition.end());
    RM_RETURN_IF_ERROR(pipeline::checkPartition(starts, layers));
    if (static_cast<int>(starts.size()) != stages) {
      return core::invalidArgument(
          "parallelism.pipeline.partition: " + std::to_string(starts.size()) + " starts for " +
          std::to_string(stages) + " stages");
    }
    return starts;
  }
  if (stages == 1) return pipeline::StageStarts{0};  // tensor parallelism alone: nothing to cut
  std::vector<int32_t> cut(stages, 0);
  if (comm.rank() == 0) {
    RM_ASSIGN_OR_RETURN(
        auto whole, model::ModelStage::create(model_config, settings.seed, micro_rows, 0, layers,
                                              /*slots=*/1));
    const std::vector<double> seconds = whole->measureLayerSeconds(kProfileRepeats);
    // With tensor parallelism a stage holds whole layer pairs: cut the pairs, then map back.
    const size_t unit = settings.tensor > 1 ? 2 : 1;
    std::vector<double> unit_seconds((seconds.size() + unit - 1) / unit, 0.0);
    for (size_t i = 0; i < seconds.size(); ++i) unit_seconds[i / unit] += seconds[i];
    RM_ASSIGN_OR_RETURN(pipeline::StageStarts starts,
                        pipeline::balancedPartition(unit_seconds, stages));
    for (int& start : starts) start *= static_cast<int>(unit);
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

// What a tensor-parallel stage's reducer spent summing over its group, counted as the step runs
// (the reducer is called inside forward and backward, which the executor times as compute).
struct TensorSums {
  double seconds = 0;
  uint64_t bytes = 0;
};

class PipelineEngine final : public StepEngine {
 public:
  // `group`: the stage's data-parallel replicas (null with one replica). `tensor_sums`: what the
  // stage's tensor-parallel reducer adds up (never null; zero without tensor parallelism).
  // `device`: the stage's GPU copy that the executor runs (null on the CPU); `stage` then holds
  // the master weights the optimizer updates.
  PipelineEngine(const contract::TrainerSettings& settings, const TrainerContext& ctx,
                 model::ModelStage& stage, DeviceStage* device, optim::Optimizer& optimizer,
                 pipeline::StageExecutor& executor, const Layout& layout, comm::Communicator* group,
                 std::string signature, const TensorSums* tensor_sums)
      : settings_(settings),
        tensor_sums_(tensor_sums),
        ctx_(ctx),
        comm_(*ctx.comm),
        group_(group),
        stage_(&stage),
        device_(device),
        optimizer_(optimizer),
        executor_(&executor),
        layout_(layout),
        stage_index_(layout.stage),
        stages_(layout.stages),
        last_(layout.last()),
        signature_(std::move(signature)),
        train_(*ctx.train),
        test_(*ctx.test),
        batch_(static_cast<int>(settings.batch_size)),
        // One sampler per replica, the same for all of its stages: every stage of a replica takes
        // the same mini-batch, and the replicas take the strided shards data parallelism takes.
        sampler_(train_.size(), layout.replica, layout.replicas, settings.seed),
        total_steps_(static_cast<double>(settings.epochs) *
                     static_cast<double>(sampler_.numBatches(batch_))),
        x_(static_cast<size_t>(batch_) * train_.featureSize()),
        y_(static_cast<size_t>(batch_)) {}

  int64_t batchesPerEpoch() const override {
    return static_cast<int64_t>(sampler_.numBatches(batch_));
  }

  // From the next step on the stage and its executor are these (autotune rebuilt them for
  // another micro-batch count, with this stage's parameters).
  void rebind(model::ModelStage& stage, pipeline::StageExecutor& executor) {
    stage_ = &stage;
    executor_ = &executor;
  }
  void setAutotuner(Autotuner* autotuner) { autotuner_ = autotuner; }

  Status beginEpoch(int64_t epoch, int64_t first_batch) override {
    sampler_.setEpoch(epoch);
    loss_sum_ = 0;
    epoch_stats_ = {};
    if (!pipedream_) return Status::Ok();
    // PipeDream streams the epoch's micro-batches: how many, from where it starts.
    const int64_t shard = static_cast<int64_t>(sampler_.indices().size());
    int64_t micro_batches = 0;
    for (int64_t b = first_batch; b < batchesPerEpoch(); ++b) {
      const int64_t rows = std::min<int64_t>(batch_, shard - b * batch_);
      micro_batches += std::min<int64_t>(settings_.pipeline.micro_batches, rows);
    }
    return executor_->beginStream(micro_batches);
  }

  Result<int> step(int64_t epoch, int64_t b, int64_t steps_done) override {
    const int n = data::gatherShardBatch(train_, sampler_, b, batch_, x_.data(), y_.data());
    const int64_t step = steps_done + 1;

    const auto t0 = Clock::now();
    const TensorSums tensor_before = *tensor_sums_;
    optimizer_.setLearningRate(learningRateAt(settings_.optimizer, steps_done, total_steps_));
    pipeline::StepStats stats;
    if (pipedream_) {
      RM_ASSIGN_OR_RETURN(stats,
                          executor_->runStream({x_.data(), y_.data(), n}, step, applyEach(step)));
      if (b + 1 == batchesPerEpoch()) {
        RM_ASSIGN_OR_RETURN(const pipeline::StepStats drained, drain(step));
        stats.add(drained);
      }
    } else {
      RM_ASSIGN_OR_RETURN(stats, executor_->run({x_.data(), y_.data(), n}, step));
      if (device_ != nullptr) RM_RETURN_IF_ERROR(device_->downloadGrads(stage_->grads()));
      if (group_ != nullptr) RM_RETURN_IF_ERROR(averageOverReplicas(step));
      optimizer_.step(stage_->params(), stage_->grads());
      if (device_ != nullptr) RM_RETURN_IF_ERROR(device_->uploadParams(stage_->params()));
    }
    RM_RETURN_IF_ERROR(apply_status_);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (autotuner_ != nullptr) RM_RETURN_IF_ERROR(autotuner_->afterStep(seconds, step));
    // The bubble is the schedule's idle time: tensor sums are work, not idleness. The compute
    // metric leaves them out so that the two add up to what the stage did.
    const double tensor_seconds = tensor_sums_->seconds - tensor_before.seconds;
    const uint64_t tensor_bytes = tensor_sums_->bytes - tensor_before.bytes;
    epoch_stats_.add(stats);
    if (TrainerMetrics* metrics = ctx_.metrics) {
      metrics->samples->Increment(n);
      metrics->steps->Increment();
      metrics->step_seconds->Observe(seconds);
      const TrainerMetrics::Pipeline& p = metrics->pipeline;
      if (p.compute_seconds != nullptr) {
        // A device stage's calls only enqueue: the host's clock does not see its passes or
        // waits, so those stay unreported rather than wrong.
        if (device_ == nullptr) {
          p.compute_seconds->Increment(std::max(0.0, stats.busySeconds() - tensor_seconds));
          p.send_wait_seconds->Increment(stats.send_wait_seconds);
          p.recv_wait_seconds->Increment(stats.recv_wait_seconds);
        }
        p.tensor_sum_seconds->Increment(tensor_seconds);
        p.tensor_sum_bytes->Increment(static_cast<double>(tensor_bytes));
        p.send_bytes->Increment(static_cast<double>(stats.bytes_sent));
        p.recv_bytes->Increment(static_cast<double>(stats.bytes_received));
        p.activation_bytes->Set(static_cast<double>(activationBytes()));
      }
    }
    if (last_) {
      const double loss = stats.loss_sum / n;
      loss_sum_ += loss;
      if (!std::isfinite(loss)) {
        return core::invalidArgument(
            "pipeline " + stageName(stage_index_, stages_) + ": loss became " +
            std::to_string(loss) + " at step " + std::to_string(step) + " (learning rate " +
            std::to_string(settings_.optimizer.learning_rate) + " too high?)");
      }
      if (settings_.log_every_steps > 0 && step % settings_.log_every_steps == 0) {
        RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << step << " loss " << loss;
      }
    }
    return n;
  }

  Result<EpochMeasures> endEpoch(int64_t epoch, int64_t steps) override {
    // A run that stops inside an epoch (maxSteps) still applies what it forwarded.
    if (pipedream_ && !executor_->streamDrained()) {
      RM_RETURN_IF_ERROR(drain(0).status());
      RM_RETURN_IF_ERROR(apply_status_);
    }
    EpochMeasures m;
    m.train_loss_sum = last_ ? loss_sum_ : 0;
    m.comm_bytes = epoch_stats_.bytes_sent + epoch_stats_.bytes_received;
    // Of the time inside the schedule: data loading and the optimizer step are not the bubble.
    const double bubble = epoch_stats_.bubble();
    if (device_ == nullptr && ctx_.metrics != nullptr &&
        ctx_.metrics->pipeline.bubble_ratio != nullptr) {
      ctx_.metrics->pipeline.bubble_ratio->Set(bubble);
    }
    char bubble_text[64];
    if (device_ == nullptr) {
      std::snprintf(bubble_text, sizeof bubble_text, "bubble %.1f%% of the schedule's time",
                    100.0 * bubble);
    } else {
      std::snprintf(bubble_text, sizeof bubble_text, "bubble not measured on the GPU");
    }
    char line[192];
    std::snprintf(line, sizeof line,
                  "pipeline %s: epoch %lld, %lld steps, %s, activations %.1f MiB",
                  stageName(stage_index_, stages_).c_str(), static_cast<long long>(epoch + 1),
                  static_cast<long long>(steps), bubble_text,
                  static_cast<double>(activationBytes()) / (1 << 20));
    RM_LOG(INFO, STEP) << line;
    return m;
  }

  Result<EpochTotals> evaluate(double train_loss_sum, int64_t train_steps,
                               const std::string& what) override {
    // Replica d scores test samples d, d + D, d + 2D, ...
    const std::vector<uint32_t> mine =
        data::stridedIndices(test_.size(), layout_.replica, layout_.replicas);
    const int rows = static_cast<int>(mine.size());
    std::vector<float> x;
    std::vector<int32_t> y;
    if (layout_.first() || last_) {
      x.resize(mine.size() * test_.featureSize());
      y.resize(mine.size());
      data::gatherBatch(test_, mine.data(), mine.size(), x.data(), y.data());
    }
    RM_ASSIGN_OR_RETURN(const pipeline::EvaluationStats stats,
                        executor_->evaluate(x.data(), y.data(), rows, what));
    if (device_ != nullptr) RM_RETURN_IF_ERROR(device_->wait());
    // Only the last stage scores (its tensor rank 0: the others hold the same numbers); every
    // other rank adds zeros to the sum.
    const bool scores = last_ && layout_.tensor_rank == 0;
    EpochTotals totals(scores ? stats.correct : 0, scores ? stats.loss_sum : 0, scores ? rows : 0,
                       scores ? train_loss_sum : 0, scores ? static_cast<double>(train_steps) : 0);
    comm::AllreduceOptions opts;
    opts.timeout = std::chrono::seconds(settings_.comm_timeout_seconds);
    opts.tag = "epoch totals";
    RM_RETURN_IF_ERROR_CTX(comm_.allreduceSum(totals.values, EpochTotals::kCount, opts),
                           "pipeline " + stageName(stage_index_, stages_) + ": " + what);
    return totals;
  }

  Status saveCheckpoint(const Position& at) override {
    if (pipedream_ && !executor_->streamEnded()) {
      // Micro-batches are in flight between the stages: no step here is one all of them share.
      RM_LOG(INFO, CKPT) << "pipeline " << stageName(stage_index_, stages_) << ": no checkpoint at "
                         << "step " << at.step << " inside a pipedream epoch (it checkpoints at "
                         << "epoch ends)";
      return Status::Ok();
    }
    return writeTrainingCheckpoint(settings_, stageDirectory(settings_, layout_), signature_,
                                   stage_->params(), optimizer_, at, ctx_.metrics)
        .withContext("pipeline " + stageName(stage_index_, stages_));
  }

  uint64_t allreduceCalls() const override {
    return group_ != nullptr ? group_->stats().allreduce_calls : 0;
  }
  uint64_t allreduceBytes() const override {
    return group_ != nullptr ? group_->stats().allreduce_bytes : 0;
  }

  Status finish(const TrainSummary&, double) override { return Status::Ok(); }

 private:
  // PipeDream: after each micro-batch's backward, its gradient (averaged over the replicas)
  // steps the optimizer. The first failure stops further updates and fails the step.
  pipeline::StageExecutor::Apply applyEach(int64_t step) {
    return [this, step](std::span<const float> newest, std::span<float> next) {
      if (apply_status_.ok() && group_ != nullptr) apply_status_ = averageOverReplicas(step);
      if (!apply_status_.ok()) return false;
      optimizer_.stepInto(newest, next, stage_->grads());
      return true;
    };
  }
  size_t activationBytes() const {
    return device_ != nullptr ? device_->activationBytes() : stage_->activationBytes();
  }
  Result<pipeline::StepStats> drain(int64_t step) {
    return executor_->drainStream(step, applyEach(step));
  }

  // The replicas' gradients of this stage, averaged: each replica's are its own mini-batch's
  // mean, so the average is the mean over all of them, as one rank with their union would have.
  Status averageOverReplicas(int64_t step) {
    comm::AllreduceOptions opts;
    opts.timeout = std::chrono::seconds(settings_.comm_timeout_seconds);
    opts.tag = "stage " + std::to_string(stage_index_) + " gradients";
    auto grads = stage_->grads();
    RM_RETURN_IF_ERROR_CTX(group_->allreduceSum(grads.data(), grads.size(), opts),
                           "pipeline " + stageName(stage_index_, stages_) + ", replica " +
                               std::to_string(layout_.replica) + ", step " + std::to_string(step));
    const float scale = 1.0f / static_cast<float>(layout_.replicas);
    for (float& g : grads) g *= scale;
    return Status::Ok();
  }

  const contract::TrainerSettings& settings_;
  const TensorSums* tensor_sums_;
  const TrainerContext& ctx_;
  comm::Communicator& comm_;
  comm::Communicator* group_;
  model::ModelStage* stage_;
  DeviceStage* const device_;
  optim::Optimizer& optimizer_;
  pipeline::StageExecutor* executor_;
  Autotuner* autotuner_ = nullptr;  // while autotune runs
  const Layout layout_;
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
  const bool pipedream_ = settings_.pipeline.schedule == contract::PipelineSchedule::kPipeDream;
  Status apply_status_;  // PipeDream: the first failed update
  double loss_sum_ = 0;
  pipeline::StepStats epoch_stats_;  // the epoch's steps' measures, summed
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

// What a rank tells the others about its stage's directory.
constexpr int64_t kNoCheckpoint = -1;
constexpr int64_t kNotReading = -2;  // replicas other than the first read none
constexpr int64_t kNoRunMarker = 0;  // run markers are drawn from 1 up

// "stage 1 of 2" (", tensor rank 0 of 2" added when layers are split): replica 0's rank `rank`.
std::string directoryOwner(int rank, const Layout& layout) {
  std::string name = stageName(rank / layout.tensor, layout.stages);
  if (layout.tensor > 1) {
    name += ", tensor rank " + std::to_string(rank % layout.tensor) + " of " +
            std::to_string(layout.tensor);
  }
  return name;
}

// Rank 0 draws a run marker, every reading rank writes it into its stage's directory, and no
// rank goes on before all have: a stage may only save checkpoints once every stage is marked.
// `prepared` is how this rank's work before the marker went; a failure there, like one in
// writing the marker, reaches every rank here instead of leaving them waiting for this one.
Status markRun(comm::Communicator& comm, bool reads, const std::string& dir, Status prepared) {
  int64_t run = 0;
  if (comm.rank() == 0) {
    run = static_cast<int64_t>(checkpoint::drawRunMarker());
  }
  RM_RETURN_IF_ERROR_CTX(comm.broadcast(&run, sizeof run, 0), "pipeline: run marker");
  Status marked = std::move(prepared);
  if (marked.ok() && reads) marked = checkpoint::writeRunMarker(dir, static_cast<uint64_t>(run));
  RM_ASSIGN_OR_RETURN(const std::vector<int64_t> failed,
                      gatherFromEveryRank(comm, marked.ok() ? 0 : 1));
  RM_RETURN_IF_ERROR(marked);
  for (int r = 0; r < comm.size(); ++r) {
    if (failed[r] != 0) {
      return core::unavailable("pipeline: rank " + std::to_string(r) +
                               " could not clear or mark its checkpoint directory (see its log)");
    }
  }
  return Status::Ok();
}

// Replica 0's stage `layout.stage` loads its checkpoint at the newest step every stage holds;
// nothing when no stage has one, or when a stage of this run never saved one (then the others'
// are dropped and the run starts over). Sets *found.
Status loadStage(const contract::TrainerSettings& settings, comm::Communicator& comm,
                 const Layout& layout, const std::string& signature,
                 std::optional<checkpoint::Checkpoint>* found) {
  std::optional<checkpoint::Checkpoint> newest;
  std::optional<uint64_t> run;
  const std::string dir = stageDirectory(settings, layout);
  const bool reads = layout.replica == 0 && !settings.checkpoint.path.empty();
  if (reads) {
    RM_ASSIGN_OR_RETURN(newest, checkpoint::loadNewestCheckpoint(dir, signature));
    RM_ASSIGN_OR_RETURN(run, checkpoint::readRunMarker(dir));
  }
  RM_ASSIGN_OR_RETURN(const std::vector<int64_t> steps,
                      gatherFromEveryRank(comm, !reads   ? kNotReading
                                                : newest ? newest->step
                                                         : kNoCheckpoint));
  RM_ASSIGN_OR_RETURN(const std::vector<int64_t> runs,
                      gatherFromEveryRank(comm, run ? static_cast<int64_t>(*run) : kNoRunMarker));
  if (settings.checkpoint.path.empty()) return Status::Ok();

  std::vector<pipeline::StageCheckpoints> stages;  // replica 0's, in rank order
  for (int r = 0; r < comm.size(); ++r) {
    if (steps[r] == kNotReading) continue;
    stages.push_back({directoryOwner(r, layout),
                      steps[r] >= 0 ? std::optional<int64_t>(steps[r]) : std::nullopt,
                      runs[r] != kNoRunMarker ? std::optional<uint64_t>(runs[r]) : std::nullopt});
  }
  RM_ASSIGN_OR_RETURN(const pipeline::ResumePlan plan,
                      pipeline::planResume(stages, settings.checkpoint.path));
  const std::string who = "pipeline " + stageName(layout.stage, layout.stages);
  switch (plan.action) {
    case pipeline::ResumeAction::kStartOver: {
      Status removed = Status::Ok();
      if (newest) {
        RM_LOG(WARN, CKPT) << who << ": " << plan.without << " never saved a checkpoint of this "
                           << "run (the newest another stage saved is step " << plan.others_newest
                           << "): removing this stage's checkpoints under " << dir
                           << " and starting over from step 0";
        removed = checkpoint::removeCheckpoints(dir);
      }
      return markRun(comm, reads, dir, std::move(removed));
    }
    case pipeline::ResumeAction::kStartFresh:
      return markRun(comm, reads, dir, Status::Ok());
    case pipeline::ResumeAction::kResume:
      break;
  }
  if (!reads) return Status::Ok();
  if (newest->step != plan.step) {
    // Another stage did not finish writing this step: go back to the last one all have.
    const std::string file = dir + "/" + checkpoint::checkpointFileName(plan.step);
    RM_ASSIGN_OR_RETURN(newest, checkpoint::readCheckpointFile(file));
    RM_LOG(INFO, CKPT) << who << ": back to step " << plan.step << ", the newest every stage holds";
  }
  *found = std::move(newest);
  return Status::Ok();
}

// Restores this stage at the newest step every stage holds, or leaves the fresh parameters
// (the same on every replica: they come from the seed) when there is none. Replica 0 reads;
// its stage's other replicas receive what it read over `group`. Sets *pos and *resumed_from
// after a resume.
Status restoreStage(const contract::TrainerSettings& settings, comm::Communicator& comm,
                    comm::Communicator* group, const Layout& layout, model::ModelStage& stage,
                    optim::Optimizer& optimizer, const std::string& signature, Position* pos,
                    int64_t* resumed_from) {
  std::optional<checkpoint::Checkpoint> ck;
  RM_RETURN_IF_ERROR(loadStage(settings, comm, layout, signature, &ck));
  const std::string who = "pipeline " + stageName(layout.stage, layout.stages);
  auto state = optimizer.state();
  if (ck) {
    if (ck->model_signature != signature ||
        !checkpointFits(*ck, stage.params().size(), optimizer)) {
      return core::invalidArgument(who + ": checkpoint " + stageDirectory(settings, layout) +
                                   " step " + std::to_string(ck->step) + " was written for '" +
                                   ck->model_signature + "' with optimizer '" + ck->optimizer_type +
                                   "' and cannot resume '" + signature + "' with '" +
                                   optimizer.type() + "': use another checkpoint.path");
    }
    std::copy(ck->params.begin(), ck->params.end(), stage.params().begin());
    for (size_t i = 0; i < state.size(); ++i) *state[i] = ck->optimizer_state[i];
  }
  // found, epoch, step, step in epoch, optimizer step
  int64_t header[5] = {ck ? 1 : 0, 0, 0, 0, 0};
  if (ck) {
    header[1] = ck->epoch;
    header[2] = ck->step;
    header[3] = ck->step_in_epoch;
    header[4] = ck->optimizer_step;
  }
  if (group != nullptr) {
    RM_RETURN_IF_ERROR_CTX(group->broadcast(header, sizeof header, 0), who + ": resume header");
    if (header[0] != 0) {
      auto params = stage.params();
      RM_RETURN_IF_ERROR_CTX(group->broadcast(params.data(), params.size_bytes(), 0),
                             who + ": resumed parameters");
      for (auto* buffer : state) {
        RM_RETURN_IF_ERROR_CTX(group->broadcast(buffer->data(), buffer->size() * sizeof(float), 0),
                               who + ": resumed optimizer state");
      }
    }
  }
  if (header[0] == 0) return Status::Ok();
  optimizer.setStepCount(header[4]);
  *pos = {header[1], header[2], header[3]};
  *resumed_from = header[2];
  RM_LOG(INFO, CKPT) << who << ": resumed from checkpoint at step " << header[2];
  return Status::Ok();
}

}  // namespace

bool splitsModel(const contract::TrainerSettings& settings) {
  return settings.pipeline.stages > 1 || settings.tensor > 1;
}

int pipelineStageOf(const contract::TrainerSettings& settings, int rank) {
  if (!splitsModel(settings)) return -1;
  return rank / settings.tensor % settings.pipeline.stages;
}

Result<TrainSummary> trainPipelineStage(const contract::TrainerSettings& settings,
                                        const TrainerContext& ctx,
                                        std::vector<float>* stage_params) {
  _mm_setcsr(_mm_getcsr() | 0x8040);  // flush denormals, as the data-parallel trainer does
  comm::Communicator& comm = *ctx.comm;
  const int stages = settings.pipeline.stages, tensor = settings.tensor;
  if (stages < 1 || tensor < 1 || comm.size() % (stages * tensor) != 0) {
    return core::invalidArgument(
        "parallelism: " + std::to_string(stages) + " stages x " + std::to_string(tensor) +
        " tensor ranks need a world that is a multiple of " + std::to_string(stages * tensor) +
        " ranks (one replica of the model each), got " + std::to_string(comm.size()));
  }
  Layout layout;
  layout.stages = stages;
  layout.tensor = tensor;
  layout.replicas = comm.size() / (stages * tensor);
  layout.rank = comm.rank();
  layout.tensor_rank = comm.rank() % tensor;
  layout.stage = comm.rank() / tensor % stages;
  layout.replica = comm.rank() / (tensor * stages);
  const int stage_index = layout.stage;
  if ((layout.replicas > 1 || tensor > 1) && !ctx.make_group) {
    return core::invalidArgument("pipeline: " + std::to_string(layout.replicas) + " replicas x " +
                                 std::to_string(tensor) +
                                 " tensor ranks need a way to build their groups");
  }
  // The stage's data-parallel replicas, and this stage's tensor group.
  std::unique_ptr<comm::Communicator> group, tensor_group;
  if (layout.replicas > 1) {
    std::string name = "pipeline-stage-" + std::to_string(stage_index);
    if (tensor > 1) name += "-tensor-" + std::to_string(layout.tensor_rank);
    RM_ASSIGN_OR_RETURN(group, ctx.make_group(name, layout.replica, layout.replicas));
  }
  if (tensor > 1) {
    RM_ASSIGN_OR_RETURN(tensor_group,
                        ctx.make_group("tensor-replica-" + std::to_string(layout.replica) +
                                           "-stage-" + std::to_string(stage_index),
                                       layout.tensor_rank, tensor));
  }
  const int micro_batches = settings.pipeline.micro_batches;
  if (micro_batches < 1 || settings.batch_size % micro_batches != 0) {
    return core::invalidArgument(
        "parallelism.pipeline.microBatches: " + std::to_string(micro_batches) +
        " must divide batchSize " + std::to_string(settings.batch_size));
  }
  const int micro_rows = static_cast<int>(settings.batch_size / micro_batches);
  const pipeline::ScheduleKind kind = scheduleKind(settings.pipeline.schedule);
  const model::ModelConfig model_config = modelConfig(settings.model);
  RM_ASSIGN_OR_RETURN(const pipeline::StageStarts starts,
                      choosePartition(settings, model_config, comm, micro_rows));
  RM_ASSIGN_OR_RETURN(const int layers, model::ModelStage::layerCount(model_config));
  const int first = starts[stage_index];
  const int end = stage_index + 1 < stages ? starts[stage_index + 1] : layers;
  RM_ASSIGN_OR_RETURN(
      int slots, pipeline::StageExecutor::slotsNeeded(kind, stage_index, stages, micro_batches));
  // PipeDream's stream keeps one micro-batch per later stage in flight, across mini-batches.
  if (kind == pipeline::ScheduleKind::kPipeDream) slots = stages - stage_index;
  // On a GPU the host stage keeps the master weights only and never runs a micro-batch.
  const bool on_device = static_cast<bool>(ctx.make_device_stage);
  if (on_device && kind == pipeline::ScheduleKind::kPipeDream) {
    return core::invalidArgument(
        "parallelism.pipeline.schedule: pipedream stages train on the CPU (their weight versions "
        "are host memory); use gpipe or 1f1b on the GPU");
  }
  const bool tunes = settings.autotune.enabled;
  if (tunes && (on_device || tensor > 1 || kind == pipeline::ScheduleKind::kPipeDream)) {
    return core::invalidArgument(
        "trainer.autotune: tunes the micro-batches of a gpipe or 1f1b pipeline on the CPU without "
        "tensor parallelism");
  }
  TensorSums tensor_sums;  // outlives the stage's reducer and the engine, which use it
  RM_ASSIGN_OR_RETURN(
      auto stage, model::ModelStage::create(model_config, settings.seed, micro_rows, first, end,
                                            on_device ? 1 : slots, {layout.tensor_rank, tensor}));
  if (tensor_group != nullptr) {
    comm::AllreduceOptions opts;
    opts.timeout = std::chrono::seconds(settings.comm_timeout_seconds);
    opts.tag = "tensor-parallel sum";
    stage->setTensorReducer(
        [group = tensor_group.get(), opts, &tensor_sums](float* data, size_t count) {
          const auto t0 = Clock::now();
          Status summed = group->allreduceSum(data, count, opts);
          tensor_sums.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
          tensor_sums.bytes += count * sizeof(float);
          return summed;
        });
  }
  if (stage->isFirst() && stage->inputSize() != ctx.train->featureSize()) {
    return core::invalidArgument("model expects " + std::to_string(stage->inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(ctx.train->featureSize()));
  }
  RM_ASSIGN_OR_RETURN(auto optimizer, optim::Optimizer::create(optimizerConfig(settings.optimizer),
                                                               stage->params().size()));

  // A stage's checkpoint holds its layers only: its signature names them.
  const std::string signature = stage->networkSignature() + " layers [" + std::to_string(first) +
                                ", " + std::to_string(end) + ") of " + std::to_string(layers);

  TrainSummary summary;
  summary.world_size = comm.size();
  summary.backend = comm.backend();
  summary.model_signature = signature;
  Position pos;
  RM_RETURN_IF_ERROR(restoreStage(settings, comm, group.get(), layout, *stage, *optimizer,
                                  signature, &pos, &summary.resumed_from_step));

  std::unique_ptr<DeviceStage> device;
  if (on_device) {
    RM_ASSIGN_OR_RETURN(device, ctx.make_device_stage(*stage, slots));
    RM_RETURN_IF_ERROR(device->uploadParams(stage->params()));  // what restoreStage left there
    summary.device = "cuda";
  }
  pipeline::StageLinks links;
  links.comm = &comm;
  links.prev = layout.first() ? -1 : layout.rank - tensor;
  links.next = layout.last() ? -1 : layout.rank + tensor;
  links.timeout = std::chrono::seconds(settings.comm_timeout_seconds);
  links.stream = device != nullptr ? device->stream() : nullptr;
  auto executor =
      std::make_unique<pipeline::StageExecutor>(device != nullptr ? device->compute() : *stage,
                                                kind, stage_index, stages, micro_batches, links);
  RM_LOG(INFO, STEP) << "pipeline " << stageName(stage_index, stages) << ": layers [" << first
                     << ", " << end << ") of " << layers << ", " << stage->params().size()
                     << " parameters, " << micro_batches << " micro-batches of " << micro_rows
                     << " (" << contract::name(settings.pipeline.schedule) << ", " << slots
                     << " in flight), backend " << comm.backend()
                     << (tensor > 1 ? ", tensor rank " + std::to_string(layout.tensor_rank) +
                                          " of " + std::to_string(tensor)
                                    : std::string())
                     << (layout.replicas > 1 ? ", replica " + std::to_string(layout.replica) +
                                                   " of " + std::to_string(layout.replicas)
                                             : std::string())
                     << (device != nullptr ? "; on the GPU: " + device->describe() : std::string());

  PipelineEngine engine(settings, ctx, *stage, device.get(), *optimizer, *executor, layout,
                        group.get(), signature, &tensor_sums);
  // Autotune's micro-batch counts: each one a stage of its micro-batch's rows and the slots its
  // schedule needs, holding this stage's parameters, and an executor over it; the old ones go
  // (their sends all finished at the end of the step before).
  std::unique_ptr<Autotuner> autotuner;
  if (tunes) {
    auto rebuild = [&, current = micro_batches](const AutotuneValues& values) mutable -> Status {
      const auto count = values.find(autotune::kMicroBatchesKnob);
      if (count == values.end() || static_cast<int>(count->second) == current) return Status::Ok();
      const int m = static_cast<int>(count->second);
      RM_ASSIGN_OR_RETURN(const int need,
                          pipeline::StageExecutor::slotsNeeded(kind, stage_index, stages, m));
      RM_ASSIGN_OR_RETURN(
          auto next, model::ModelStage::create(model_config, settings.seed,
                                               static_cast<int>(settings.batch_size / m), first,
                                               end, need, {layout.tensor_rank, tensor}));
      std::copy(stage->params().begin(), stage->params().end(), next->params().begin());
      auto next_executor =
          std::make_unique<pipeline::StageExecutor>(*next, kind, stage_index, stages, m, links);
      engine.rebind(*next, *next_executor);
      executor = std::move(next_executor);  // before the stage it runs over
      stage = std::move(next);
      current = m;
      return Status::Ok();
    };
    RM_ASSIGN_OR_RETURN(autotuner, Autotuner::start(settings, comm, microBatchSpace(settings),
                                                    ctx.blas_cores, rebuild, ctx.metrics));
    if (autotuner->tuning()) engine.setAutotuner(autotuner.get());
  }
  RM_RETURN_IF_ERROR(runTrainingLoop(settings,
                                     {.rank = layout.rank,
                                      .world = comm.size(),
                                      .data_replicas = layout.replicas,
                                      .checkpoint_writer = layout.replica == 0,
                                      .stop = ctx.stop,
                                      .metrics = ctx.metrics},
                                     engine, pos, &summary));
  if (autotuner) summary.autotune = autotuner->choice();
  if (stage_params != nullptr) {
    stage_params->assign(stage->params().begin(), stage->params().end());
  }
  return summary;
}

}  // namespace ringmaster::trainer
