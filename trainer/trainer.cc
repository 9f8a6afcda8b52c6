#include "trainer/trainer.h"

#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ringmaster/contract/trainer_summary.h"
#include "ringmaster/core/log.h"
#include "trainer/autotune/tuning_session.h"
#include "trainer/autotuner.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/gradient_buckets.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline_trainer.h"
#include "trainer/resume.h"
#include "trainer/run_report.h"
#include "trainer/training_loop.h"

namespace ringmaster::trainer {

using Clock = std::chrono::steady_clock;
using core::Result;
using core::Status;

namespace {

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void drawProgressBar(int64_t epoch, int64_t epochs, int64_t done, int64_t total, double loss,
                     double samples_per_second) {
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  std::printf("\repoch %lld/%lld [%s] %3d%% loss %.4f %.0f samples/s ", (long long)epoch,
              (long long)epochs, bar.c_str(), total > 0 ? (int)(100 * done / total) : 100, loss,
              samples_per_second);
  std::fflush(stdout);
}

}  // namespace

namespace {

// A data-parallel step on the CPU: gather the batch, forward and loss, backward with the
// gradient buckets allreduced as they fill, one optimizer step.
class CpuEngine final : public StepEngine {
 public:
  CpuEngine(const contract::TrainerSettings& settings, const TrainerContext& ctx,
            model::Model& model, optim::Optimizer& optimizer,
            const comm::AllreduceOptions& ar_options)
      : settings_(settings),
        ctx_(ctx),
        comm_(*ctx.comm),
        rank_(comm_.rank()),
        world_(comm_.size()),
        train_(*ctx.train),
        test_(*ctx.test),
        batch_(static_cast<int>(settings.batch_size)),
        model_(model),
        optimizer_(optimizer),
        optimizer_settings_(settings.optimizer),
        ar_options_(ar_options),
        sampler_(train_.size(), rank_, world_, settings.seed),
        // Every epoch has the same number of steps, so the schedule is a function of the step
        // alone and a resumed run follows it exactly.
        total_steps_(static_cast<double>(settings.epochs) *
                     static_cast<double>(sampler_.numBatches(batch_))),
        x_(static_cast<size_t>(batch_) * train_.featureSize()),
        y_(static_cast<size_t>(batch_)) {}

  // Cuts the gradients into buckets of these caps (MiB) from the next step on: the configured
  // caps at the start, autotune's candidates and choice later.
  Status planBuckets(double first_cap_mb, double cap_mb) {
    buckets_.reset();  // its communication thread ends first
    buckets_ = std::make_unique<GradientBuckets>(
        &comm_, model_.grads().data(),
        trainer::planBuckets(model_.paramViews(), static_cast<size_t>(first_cap_mb * (1 << 20)),
                             static_cast<size_t>(cap_mb * (1 << 20))),
        ar_options_);
    // Each bucket's allreduce series, by the algorithm its size takes; every series is there
    // from the start, at zero.
    series_.clear();
    if (ctx_.metrics == nullptr) return Status::Ok();
    for (const Bucket& bucket : buckets_->buckets()) {
      series_.push_back(
          &ctx_.metrics->allreduce(comm_.allreduceAlgorithm(bucket.count * sizeof(float))));
    }
    return Status::Ok();
  }
  const GradientBuckets& buckets() const { return *buckets_; }
  void setAutotuner(Autotuner* autotuner) { autotuner_ = autotuner; }
  // Autotune's caps and transport threshold from the next step on: a new bucket plan when they
  // change (a bucket's series name the algorithm its size takes). A knob left out of the search
  // (one value) keeps the configured value.
  Status applyTuned(const AutotuneValues& plan) {
    if (plan == tuned_plan_) return Status::Ok();
    tuned_plan_ = plan;
    if (const auto kib = plan.find(autotune::kTcpDoublingKnob); kib != plan.end()) {
      RM_RETURN_IF_ERROR(comm_.setDoublingMaxBytes(static_cast<size_t>(kib->second * 1024)));
    }
    const auto value = [&plan](const char* knob, double configured) {
      const auto it = plan.find(knob);
      return it != plan.end() ? it->second : configured;
    };
    return planBuckets(value(autotune::kFirstBucketCapKnob, settings_.first_bucket_cap_mb),
                       value(autotune::kBucketCapKnob, settings_.bucket_cap_mb));
  }

  int64_t batchesPerEpoch() const override {
    return static_cast<int64_t>(sampler_.numBatches(batch_));
  }

  Status beginEpoch(int64_t epoch, int64_t first_batch) override {
    sampler_.setEpoch(epoch);
    first_batch_ = first_batch;
    loss_sum_ = 0;
    loss_count_ = 0;
    epoch_comm_ = epoch_exposed_ = 0;
    epoch_bytes_ = 0;
    epoch_start_ = last_bar_ = Clock::now();
    return Status::Ok();
  }

  Result<int> step(int64_t epoch, int64_t b, int64_t steps_done) override {
    const int n = data::gatherShardBatch(train_, sampler_, b, batch_, x_.data(), y_.data());

    const auto t0 = Clock::now();
    int correct = 0;
    const float loss = model_.forwardLoss(x_.data(), y_.data(), n, &correct);
    buckets_->beginStep();
    model_.backward([&](size_t offset, size_t count) { buckets_->onGradsReady(offset, count); });
    RM_RETURN_IF_ERROR_CTX(buckets_->finishStep(), "rank " + std::to_string(rank_) + ": step " +
                                                       std::to_string(steps_done + 1));
    optimizer_.setLearningRate(learningRateAt(optimizer_settings_, steps_done, total_steps_));
    optimizer_.step(model_.params(), model_.grads());
    const auto t1 = Clock::now();
    const double step_seconds = secondsBetween(t0, t1);
    train_seconds_ += step_seconds;
    const int64_t step = steps_done + 1;

    loss_sum_ += loss;
    ++loss_count_;
    const StepCommTiming& timing = buckets_->lastStep();
    epoch_comm_ += timing.comm_seconds;
    epoch_exposed_ += timing.exposed_seconds;
    epoch_bytes_ += timing.bytes;
    comm_bytes_ += timing.bytes;
    comm_calls_ += timing.bucket_seconds.size();
    if (TrainerMetrics* metrics = ctx_.metrics) {
      metrics->samples->Increment(n);
      metrics->steps->Increment();
      metrics->step_seconds->Observe(step_seconds);
      for (size_t i = 0; i < timing.bucket_seconds.size(); ++i) {
        const size_t b = timing.bucket_order[i];
        series_[b]->seconds->Observe(timing.bucket_seconds[i]);
        series_[b]->bytes->Increment(
            static_cast<double>(buckets_->buckets()[b].count * sizeof(float)));
      }
    }
    if (autotuner_ != nullptr) RM_RETURN_IF_ERROR(autotuner_->afterStep(step_seconds, step));
    if (!std::isfinite(loss))
      return core::invalidArgument(
          "rank " + std::to_string(rank_) + ": loss became " + std::to_string(loss) + " at step " +
          std::to_string(step) + " (learning rate " +
          std::to_string(settings_.optimizer.learning_rate) + " too high?)");
    if (settings_.log_every_steps > 0 && step % settings_.log_every_steps == 0 && rank_ == 0)
      RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << step << " loss " << loss;
    if (ctx_.progress_bar && rank_ == 0 && secondsBetween(last_bar_, t1) > 0.2) {
      last_bar_ = t1;
      const double elapsed = secondsBetween(epoch_start_, t1);
      drawProgressBar(epoch + 1, settings_.epochs, b + 1, batchesPerEpoch(),
                      loss_sum_ / static_cast<double>(loss_count_),
                      elapsed > 0 ? (b + 1 - first_batch_) * batch_ * world_ / elapsed : 0);
    }
    return n;
  }

  Result<EpochMeasures> endEpoch(int64_t, int64_t) override {
    if (ctx_.progress_bar && rank_ == 0) std::printf("\n");
    EpochMeasures m;
    m.train_loss_sum = loss_sum_;
    m.comm_seconds = epoch_comm_;
    m.exposed_seconds = epoch_exposed_;
    m.comm_bytes = epoch_bytes_;
    return m;
  }

  Result<EpochTotals> evaluate(double train_loss_sum, int64_t train_steps,
                               const std::string& what) override {
    const std::vector<uint32_t> test_idx = data::stridedIndices(test_.size(), rank_, world_);
    double test_loss_sum = 0;
    int64_t test_correct = 0;
    for (size_t begin = 0; begin < test_idx.size(); begin += batch_) {
      const int n = static_cast<int>(std::min<size_t>(batch_, test_idx.size() - begin));
      data::gatherBatch(test_, test_idx.data() + begin, n, x_.data(), y_.data());
      test_correct += model_.evaluate(x_.data(), y_.data(), n, &test_loss_sum);
    }
    EpochTotals totals(static_cast<double>(test_correct), test_loss_sum,
                       static_cast<double>(test_idx.size()), train_loss_sum,
                       static_cast<double>(train_steps));
    if (world_ > 1) {
      comm::AllreduceOptions opts = ar_options_;
      opts.tag = "epoch totals";
      RM_RETURN_IF_ERROR_CTX(comm_.allreduceSum(totals.values, EpochTotals::kCount, opts),
                             "rank " + std::to_string(rank_) + ": " + what);
    }
    return totals;
  }

  Status saveCheckpoint(const Position& at) override {
    return trainer::saveCheckpoint(settings_, model_, optimizer_, at, ctx_.metrics);
  }

  Result<std::string> writeMemberCheckpoint(const std::string& dir, const Position& at) override {
    RM_RETURN_IF_ERROR(writeTrainingCheckpoint(settings_, dir, model_.signature(), model_.params(),
                                               optimizer_, at, ctx_.metrics));
    return dir + "/" + checkpoint::checkpointFileName(at.step);
  }

  Status exploit(const std::string& file,
                 const contract::TrainerSettings::Optimizer& optimizer) override {
    RM_ASSIGN_OR_RETURN(checkpoint::Checkpoint ck, checkpoint::readCheckpointFile(file));
    if (ck.model_signature != model_.signature() || ck.params.size() != model_.params().size() ||
        ck.optimizer_type != optimizer_.type()) {
      return core::invalidArgument(file + " holds " + ck.model_signature + " with " +
                                   ck.optimizer_type + " state, not this member's " +
                                   model_.signature() + " with " + optimizer_.type());
    }
    // The new values first: they may need state the old ones did not (momentum from 0).
    optimizer_settings_ = optimizer;
    optimizer_.setHyperparameters(optimizerConfig(optimizer));
    std::copy(ck.params.begin(), ck.params.end(), model_.params().begin());
    // The source's state where it has some (of the same size), zeros where it had none: its
    // momentum was 0, so its update carried no history.
    std::vector<std::vector<float>*> state = optimizer_.state();
    for (size_t i = 0; i < state.size(); ++i) {
      if (i < ck.optimizer_state.size() && ck.optimizer_state[i].size() == state[i]->size()) {
        *state[i] = ck.optimizer_state[i];
      } else {
        std::fill(state[i]->begin(), state[i]->end(), 0.0f);
      }
    }
    optimizer_.setStepCount(ck.optimizer_step);
    return Status::Ok();
  }

  uint64_t allreduceCalls() const override { return comm_calls_; }
  uint64_t allreduceBytes() const override { return comm_bytes_; }

  Status finish(const TrainSummary&, double train_seconds) override {
    if (rank_ == 0 && train_seconds > 0)
      RM_LOG(DEBUG, STEP) << "time inside steps " << train_seconds_ << " s of " << train_seconds
                          << " s";
    return Status::Ok();
  }

 private:
  const contract::TrainerSettings& settings_;
  const TrainerContext& ctx_;
  comm::Communicator& comm_;
  const int rank_, world_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  const int batch_;
  model::Model& model_;
  optim::Optimizer& optimizer_;
  // The optimizer's values this run trains on: the spec's, until a pbt exploit swaps them.
  contract::TrainerSettings::Optimizer optimizer_settings_;
  std::unique_ptr<GradientBuckets> buckets_;        // planBuckets()
  std::vector<TrainerMetrics::Allreduce*> series_;  // by bucket; empty without metrics
  Autotuner* autotuner_ = nullptr;                  // while autotune runs
  AutotuneValues tuned_plan_;  // the caps and threshold autotune last planned buckets for
  const comm::AllreduceOptions ar_options_;
  data::ShardedSampler sampler_;
  const double total_steps_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
  // This epoch.
  int64_t first_batch_ = 0;
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  double epoch_comm_ = 0, epoch_exposed_ = 0;
  uint64_t epoch_bytes_ = 0;
  Clock::time_point epoch_start_, last_bar_;
  // The run.
  double train_seconds_ = 0;  // inside steps
  uint64_t comm_calls_ = 0, comm_bytes_ = 0;
};

}  // namespace

struct Trainer::State {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::vector<float> stage_params;  // a pipeline stage's, after run()
};

Trainer::Trainer(contract::TrainerSettings settings, TrainerContext context)
    : settings_(std::move(settings)), ctx_(context), state_(std::make_unique<State>()) {}
Trainer::~Trainer() = default;

std::vector<float> Trainer::parameters() const {
  if (!state_->model) return state_->stage_params;
  auto p = state_->model->params();
  return {p.begin(), p.end()};
}

Result<TrainSummary> Trainer::run() {
  if (splitsModel(settings_)) {
    return trainPipelineStage(settings_, ctx_, &state_->stage_params);
  }
  // Flush denormals to zero (FTZ | DAZ, per thread): late in training tiny gradients otherwise
  // slow steps by ~25%.
  _mm_setcsr(_mm_getcsr() | 0x8040);
  comm::Communicator& comm = *ctx_.comm;
  const int rank = comm.rank();
  const int world = comm.size();
  const data::Dataset& train = *ctx_.train;
  RM_RETURN_IF_ERROR(resolveBatchSize(settings_, world));
  const auto batch = static_cast<int>(settings_.batch_size);

  RM_ASSIGN_OR_RETURN(state_->model,
                      model::Model::create(modelConfig(settings_.model), settings_.seed, batch));
  model::Model& model = *state_->model;
  if (model.inputSize() != train.featureSize())
    return core::invalidArgument("model expects " + std::to_string(model.inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(train.featureSize()));
  RM_ASSIGN_OR_RETURN(
      state_->optimizer,
      optim::Optimizer::create(optimizerConfig(settings_.optimizer), model.params().size()));
  optim::Optimizer& optimizer = *state_->optimizer;

  TrainSummary summary;
  summary.world_size = world;
  summary.backend = comm.backend();
  summary.model_signature = model.signature();
  Position pos;
  RM_RETURN_IF_ERROR(
      restoreOrSync(settings_, comm, model, optimizer, &pos, &summary.resumed_from_step));

  comm::AllreduceOptions ar_options;
  ar_options.timeout = std::chrono::seconds(settings_.comm_timeout_seconds);
  CpuEngine engine(settings_, ctx_, model, optimizer, ar_options);
  RM_RETURN_IF_ERROR(engine.planBuckets(settings_.first_bucket_cap_mb, settings_.bucket_cap_mb));
  if (rank == 0)
    RM_LOG(INFO, STEP) << model.signature() << ": " << model.params().size() << " parameters in "
                       << engine.buckets().buckets().size() << " gradient bucket(s); world size "
                       << world << ", backend " << comm.backend();
  std::unique_ptr<Autotuner> autotuner;
  if (settings_.autotune.enabled) {
    // One rank exchanges no gradients: its bucket caps and transport do not matter.
    std::vector<autotune::Knob> knobs;
    if (world > 1) {
      knobs = bucketSpace(settings_, model.grads().size_bytes());
      for (autotune::Knob& knob : transportSpace(settings_, comm)) knobs.push_back(std::move(knob));
    }
    RM_ASSIGN_OR_RETURN(autotuner, Autotuner::start(
                                       settings_, comm, std::move(knobs), ctx_.blas_cores,
                                       [&engine](const AutotuneValues& values) {
                                         return engine.applyTuned(values);
                                       },
                                       ctx_.metrics));
    if (autotuner->tuning()) engine.setAutotuner(autotuner.get());
  }
  std::unique_ptr<pbt::Member> member;
  if (settings_.pbt.enabled()) {
    if (world != 1) {
      return core::invalidArgument("trainer.pbt: a member trains on one rank, this run has " +
                                   std::to_string(world));
    }
    member = std::make_unique<pbt::Member>(settings_.pbt, settings_.optimizer);
    RM_LOG(INFO, STEP) << "pbt: member " << settings_.pbt.member << " of "
                       << settings_.pbt.population.size() << " in " << settings_.pbt.directory
                       << ", starting with " << search::describe(member->parameters());
    // A replaced member (its pod lost or restarted) takes its rounds again from the directory
    // and continues where the last one left it, unless its own checkpoint is further on.
    RM_ASSIGN_OR_RETURN(std::optional<pbt::Replay> replay, member->replay(ctx_.stop));
    if (replay && replay->round > pos.epoch) {
      RM_RETURN_IF_ERROR_CTX(
          engine.exploit(replay->checkpoint,
                         pbt::withValues(settings_.optimizer, member->parameters())),
          "pbt: resuming after round " + std::to_string(replay->round));
      pos = Position{replay->round, replay->step, 0};
      RM_LOG(INFO, STEP) << "pbt: member " << member->name() << " resumes after round "
                         << replay->round << " (step " << replay->step << ") from "
                         << replay->checkpoint << " with " << search::describe(member->parameters())
                         << " (" << member->lineage().size() << " exploits so far)";
    }
  }
  LoopContext loop = LoopContext::dataParallel(rank, world, ctx_.stop, ctx_.metrics);
  loop.pbt = member.get();
  RM_RETURN_IF_ERROR(runTrainingLoop(settings_, loop, engine, pos, &summary));
  if (autotuner) summary.autotune = autotuner->choice();
  if (member) {
    summary.pbt_member = member->name();
    summary.pbt_lineage = member->lineage();
    summary.pbt_parameters = member->parameters();
  }
  return summary;
}

Status writeSummaryJson(const TrainSummary& s, const std::string& path) {
  namespace key = contract::trainer_summary;
  nlohmann::json j = {
      {key::kEpochs, s.epochs},
      {key::kSteps, s.steps},
      {key::kResumedFromStep, s.resumed_from_step},
      {key::kDevice, s.device},
      {key::kPrecision, s.precision},
      {key::kWorldSize, s.world_size},
      {key::kBackend, s.backend},
      {key::kModel, s.model_signature},
      {key::kTrainSeconds, s.train_seconds},
      {key::kAllreduce,
       {{key::kAllreduceCalls, s.allreduce_calls},
        {key::kAllreduceBytes, s.allreduce_bytes},
        {key::kAllreduceSeconds, s.allreduce_seconds},
        {key::kAllreduceBusBandwidth, s.allreduce_bus_bandwidth},
        {key::kAllreduceHiddenSeconds, s.comm_hidden_seconds},
        {key::kAllreduceExposedSeconds, s.comm_exposed_seconds},
        {key::kAllreduceOverlapRatio, s.overlap_ratio}}},
  };
  // What nothing measured stays out of the summary: a reader must not take it for a zero.
  auto optional = [&j](const char* key, const std::optional<double>& value) {
    if (value) j[key] = *value;
  };
  optional(key::kSamplesPerSecond, s.samples_per_second);
  optional(key::kSteadySamplesPerSecond, s.steady_samples_per_second);
  optional(key::kFinalTrainLoss, s.final_train_loss);
  optional(key::kTestAccuracy, s.test_accuracy);
  optional(key::kTestLoss, s.test_loss);
  if (const auto& a = s.autotune) {
    nlohmann::json& tuned =
        j[key::kAutotune] = {{key::kAutotuneSamples, a->samples},
                             {key::kAutotuneDefaultStepSeconds, a->default_seconds},
                             {key::kAutotuneBestStepSeconds, a->best_seconds},
                             {key::kAutotuneFromCheckpoint, a->from_checkpoint}};
    for (const auto& [knob, value] : a->values) tuned[knob] = value;
  }
  if (!s.pbt_member.empty()) {
    j[key::kPbt] =
        pbt::summaryJson(s.pbt_member, s.pbt_parameters, s.pbt_lineage, s.pbt_round_seconds);
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return core::errnoError("summary " + tmp, errno);
    out << j.dump(2) << "\n";
    if (!out) return core::errnoError("writing summary " + tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return core::errnoError("rename " + tmp + " -> " + path, errno);
  return Status::Ok();
}

}  // namespace ringmaster::trainer
