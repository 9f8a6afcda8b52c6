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
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/gradient_buckets.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"
#include "trainer/resume.h"
#include "trainer/run_report.h"

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

struct Trainer::State {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
};

Trainer::Trainer(TrainerConfig config, TrainerContext context)
    : config_(std::move(config)), ctx_(context), state_(std::make_unique<State>()) {}
Trainer::~Trainer() = default;

std::vector<float> Trainer::parameters() const {
  if (!state_->model) return {};
  auto p = state_->model->params();
  return {p.begin(), p.end()};
}

Result<TrainSummary> Trainer::run() {
  // Flush denormals to zero (FTZ | DAZ, per thread): late in training tiny gradients otherwise
  // slow steps by ~25%.
  _mm_setcsr(_mm_getcsr() | 0x8040);
  comm::Communicator& comm = *ctx_.comm;
  const int rank = comm.rank();
  const int world = comm.size();
  const data::Dataset& train = *ctx_.train;
  const data::Dataset& test = *ctx_.test;
  const auto batch = static_cast<int>(config_.batch_size);

  RM_ASSIGN_OR_RETURN(state_->model, model::Model::create(config_.model, config_.seed, batch));
  model::Model& model = *state_->model;
  if (model.inputSize() != train.featureSize())
    return core::invalidArgument("model expects " + std::to_string(model.inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(train.featureSize()));
  RM_ASSIGN_OR_RETURN(state_->optimizer,
                      optim::Optimizer::create(config_.optimizer, model.params().size()));
  optim::Optimizer& optimizer = *state_->optimizer;

  TrainSummary summary;
  summary.world_size = world;
  summary.backend = comm.backend();
  summary.model_signature = model.signature();
  Position pos;
  RM_RETURN_IF_ERROR(
      restoreOrSync(config_, comm, model, optimizer, &pos, &summary.resumed_from_step));

  comm::AllreduceOptions ar_options;
  ar_options.timeout = std::chrono::seconds(config_.comm_timeout_seconds);
  GradientBuckets buckets(
      &comm, model.grads().data(),
      planBuckets(model.paramViews(), static_cast<size_t>(config_.first_bucket_cap_mb * (1 << 20)),
                  static_cast<size_t>(config_.bucket_cap_mb * (1 << 20))),
      ar_options);
  if (rank == 0)
    RM_LOG(INFO, STEP) << model.signature() << ": " << model.params().size() << " parameters in "
                       << buckets.buckets().size() << " gradient bucket(s); world size " << world
                       << ", backend " << comm.backend();

  data::ShardedSampler sampler(train.size(), rank, world, config_.seed);
  // Every epoch has the same number of steps, so the schedule is a function of the step alone
  // and a resumed run follows it exactly.
  const double total_steps =
      static_cast<double>(config_.epochs) * static_cast<double>(sampler.numBatches(batch));
  const double base_lr = config_.optimizer.learning_rate;
  auto learningRateAt = [&](int64_t step) {
    if (config_.lr_schedule != "cosine" || total_steps <= 0) return base_lr;
    return base_lr * 0.5 * (1.0 + std::cos(M_PI * static_cast<double>(step) / total_steps));
  };
  const size_t features = train.featureSize();
  std::vector<float> x(static_cast<size_t>(batch) * features);
  std::vector<int32_t> y(batch);
  const int64_t max_steps = config_.max_steps;
  const bool checkpoints = !config_.checkpoint.path.empty();
  TrainerMetrics* metrics = ctx_.metrics;

  double train_seconds = 0;  // inside steps
  RunReport report(rank, world, config_.epochs, pos.epoch, metrics);
  uint64_t comm_bytes_total = 0, comm_calls_total = 0;
  bool reached_max_steps = false;  // in this run: the position then needs a checkpoint

  // Evaluates this rank's strided share of the test set and sums, over ranks, its counts with
  // the training loss of `train_steps` steps.
  auto evaluate = [&](double train_loss_sum, int64_t train_steps,
                      const std::string& what) -> Result<EpochTotals> {
    std::vector<uint32_t> test_idx;
    for (size_t i = rank; i < test.size(); i += world) test_idx.push_back(static_cast<uint32_t>(i));
    double test_loss_sum = 0;
    int64_t test_correct = 0;
    for (size_t begin = 0; begin < test_idx.size(); begin += batch) {
      const int n = static_cast<int>(std::min<size_t>(batch, test_idx.size() - begin));
      data::gatherBatch(test, test_idx.data() + begin, n, x.data(), y.data());
      test_correct += model.evaluate(x.data(), y.data(), n, &test_loss_sum);
    }
    EpochTotals totals(static_cast<double>(test_correct), test_loss_sum,
                       static_cast<double>(test_idx.size()), train_loss_sum,
                       static_cast<double>(train_steps));
    if (world > 1) {
      comm::AllreduceOptions opts = ar_options;
      opts.tag = "epoch totals";
      RM_RETURN_IF_ERROR_CTX(comm.allreduceSum(totals.values, EpochTotals::kCount, opts),
                             "rank " + std::to_string(rank) + ": " + what);
    }
    return totals;
  };
  if (trainingComplete(config_, pos)) {
    RM_ASSIGN_OR_RETURN(EpochTotals totals, evaluate(0, 0, "evaluating the restored model"));
    report.endRestored(pos, totals, &summary);
  }

  for (int64_t epoch = pos.epoch; !trainingComplete(config_, pos); ++epoch) {
    sampler.setEpoch(epoch);
    const std::vector<uint32_t>& shard = sampler.indices();
    const int64_t num_batches = static_cast<int64_t>(sampler.numBatches(batch));
    const int64_t first_batch = epoch == pos.epoch ? pos.step_in_epoch : 0;
    if (metrics) metrics->epoch->Set(static_cast<double>(epoch + 1));

    double loss_sum = 0;
    int64_t loss_count = 0;
    int64_t epoch_samples = 0;  // on all ranks
    double epoch_comm = 0, epoch_exposed = 0;
    uint64_t epoch_bytes = 0;
    const auto epoch_start = Clock::now();
    auto last_bar = epoch_start;

    for (int64_t b = first_batch; b < num_batches; ++b) {
      if (ctx_.stop && ctx_.stop->stopRequested()) {
        if (rank == 0 && checkpoints) {
          Position here{epoch, pos.step, b};
          RM_RETURN_IF_ERROR(saveCheckpoint(config_, model, optimizer, here, metrics));
          RM_LOG(INFO, CKPT) << "checkpoint written at step " << pos.step << " before stopping";
        }
        return core::cancelled(ctx_.stop->reason() + ": stopped at epoch " +
                               std::to_string(epoch + 1) + " step " + std::to_string(pos.step));
      }
      if (max_steps > 0 && pos.step >= max_steps) {
        reached_max_steps = true;
        break;
      }
      const size_t begin = static_cast<size_t>(b) * batch;
      const int n = static_cast<int>(std::min<size_t>(batch, shard.size() - begin));
      data::gatherBatch(train, shard.data() + begin, n, x.data(), y.data());

      const auto t0 = Clock::now();
      int correct = 0;
      const float loss = model.forwardLoss(x.data(), y.data(), n, &correct);
      buckets.beginStep();
      model.backward([&](size_t offset, size_t count) { buckets.onGradsReady(offset, count); });
      RM_RETURN_IF_ERROR_CTX(buckets.finishStep(), "rank " + std::to_string(rank) + ": step " +
                                                       std::to_string(pos.step + 1));
      optimizer.setLearningRate(learningRateAt(pos.step));
      optimizer.step(model.params(), model.grads());
      const auto t1 = Clock::now();
      const double step_seconds = secondsBetween(t0, t1);
      train_seconds += step_seconds;

      ++pos.step;
      pos.epoch = epoch;  // where a checkpoint taken now (max_steps, stop) resumes
      pos.step_in_epoch = b + 1;
      epoch_samples += static_cast<int64_t>(n) * world;
      loss_sum += loss;
      ++loss_count;
      const StepCommTiming& timing = buckets.lastStep();
      epoch_comm += timing.comm_seconds;
      epoch_exposed += timing.exposed_seconds;
      epoch_bytes += timing.bytes;
      comm_calls_total += timing.bucket_seconds.size();
      if (metrics) {
        metrics->samples->Increment(n);
        metrics->steps->Increment();
        metrics->step_seconds->Observe(step_seconds);
        for (double s : timing.bucket_seconds) metrics->allreduce_seconds->Observe(s);
        if (world > 1) metrics->allreduce_bytes->Increment(static_cast<double>(timing.bytes));
      }
      if (!std::isfinite(loss))
        return core::invalidArgument(
            "rank " + std::to_string(rank) + ": loss became " + std::to_string(loss) + " at step " +
            std::to_string(pos.step) + " (learning rate " +
            std::to_string(config_.optimizer.learning_rate) + " too high?)");
      if (config_.log_every_steps > 0 && pos.step % config_.log_every_steps == 0 && rank == 0)
        RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << pos.step << " loss " << loss;
      if (ctx_.progress_bar && rank == 0 && secondsBetween(last_bar, t1) > 0.2) {
        last_bar = t1;
        const double elapsed = secondsBetween(epoch_start, t1);
        drawProgressBar(epoch + 1, config_.epochs, b + 1, num_batches, loss_sum / loss_count,
                        elapsed > 0 ? (b + 1 - first_batch) * batch * world / elapsed : 0);
      }
      if (rank == 0 && checkpoints && config_.checkpoint.every_steps > 0 &&
          pos.step % config_.checkpoint.every_steps == 0 && b + 1 < num_batches) {
        RM_RETURN_IF_ERROR(
            saveCheckpoint(config_, model, optimizer, {epoch, pos.step, b + 1}, metrics));
      }
    }
    const double epoch_wall = secondsBetween(epoch_start, Clock::now());
    comm_bytes_total += epoch_bytes;

    RM_ASSIGN_OR_RETURN(EpochTotals totals,
                        evaluate(loss_sum, loss_count, "epoch " + std::to_string(epoch + 1)));
    if (ctx_.progress_bar && rank == 0) std::printf("\n");
    report.endEpoch(
        {epoch, epoch_wall, epoch_samples, loss_count, epoch_comm, epoch_exposed, epoch_bytes, ""},
        totals, &summary);
    if (!reached_max_steps) {
      pos = {epoch + 1, pos.step, 0};
      summary.epochs = epoch + 1;
    } else {
      summary.epochs = epoch;
    }
    if (rank == 0 && checkpoints && !reached_max_steps)
      RM_RETURN_IF_ERROR(saveCheckpoint(config_, model, optimizer, pos, metrics));
  }
  if (rank == 0 && checkpoints && reached_max_steps)
    RM_RETURN_IF_ERROR(saveCheckpoint(config_, model, optimizer, pos, metrics));

  report.finish(pos.step, comm_calls_total, comm_bytes_total, &summary);
  if (rank == 0 && report.trainSeconds() > 0)
    RM_LOG(DEBUG, STEP) << "time inside steps " << train_seconds << " s of "
                        << report.trainSeconds() << " s";
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
