// A pipeline-parallel run is the single-rank run cut into stages: the same parameters after two
// epochs (fp32 rounding apart), the same test figures, and a resume from per-stage checkpoints
// that lands where an uninterrupted run does, even when one stage wrote a step the others did
// not. Ranks are threads over inproc communicators; the data is synthetic. The GPU path's
// engine (a device stage runs the executor, the host stage keeps the master weights) runs here
// over a device stage whose device is a second host stage.

#include "trainer/pipeline_trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "trainer/autotune/tuning_session.h"
#include "trainer/comm/inproc_communicator.h"
#include "trainer/model/model_stage.h"
#include "trainer/tests/synthetic_data.h"
#include "trainer/trainer.h"
#include "trainer/trainer_metrics.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

namespace fs = std::filesystem;
using Schedule = contract::PipelineSchedule;

// A DeviceStage whose device is a second host stage of the same layers: the pipeline trainer's
// GPU path (gradients down and parameters up around every host update) without a GPU. Counts
// the copies.
class HostDeviceStage final : public DeviceStage {
 public:
  struct Copies {
    std::atomic<int> downloads{0}, uploads{0};
  };
  HostDeviceStage(std::unique_ptr<model::ModelStage> copy, Copies* copies)
      : copy_(std::move(copy)), copies_(copies) {}
  model::StageCompute& compute() override { return *copy_; }
  void* stream() override { return nullptr; }
  core::Status downloadGrads(std::span<float> grads) override {
    ++copies_->downloads;
    const auto mine = copy_->grads();
    if (mine.size() != grads.size()) return core::internalError("gradients differ in size");
    std::copy(mine.begin(), mine.end(), grads.begin());
    return core::Status::Ok();
  }
  core::Status uploadParams(std::span<const float> params) override {
    ++copies_->uploads;
    const auto mine = copy_->params();
    if (mine.size() != params.size()) return core::internalError("parameters differ in size");
    std::copy(params.begin(), params.end(), mine.begin());
    return core::Status::Ok();
  }
  core::Status wait() override { return copy_->status(); }
  size_t activationBytes() const override { return copy_->activationBytes(); }
  std::string describe() const override { return "a host stage standing in for a GPU"; }

 private:
  std::unique_ptr<model::ModelStage> copy_;
  Copies* copies_;
};

struct RunResult {
  std::vector<core::Result<TrainSummary>> summaries;
  std::vector<std::vector<float>> per_rank;
  std::vector<float> params;  // replica 0's stages', in stage order
};

class PipelineTrainer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm-pipeline-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static contract::TrainerSettings config(int stages, int micro, Schedule schedule) {
    contract::TrainerSettings c = defaultTrainerSettings();
    c.model.hidden = {32, 24};  // three layers
    c.epochs = 2;
    c.batch_size = 48;  // 512 samples: 10 full steps and a short one of 32 per epoch
    c.optimizer.learning_rate = 0.05;
    c.optimizer.momentum = 0.9;
    c.pipeline.stages = stages;
    c.pipeline.micro_batches = micro;
    c.pipeline.schedule = schedule;
    return c;
  }

  // `world` ranks as threads; with more ranks than stages, each stage's replicas get an inproc
  // group of their own through make_group.
  // `metrics`: one per rank, or null.
  // `copies`: set, every rank's stage runs on a HostDeviceStage that counts its copies there.
  RunResult run(const contract::TrainerSettings& c, int world,
                std::vector<TrainerMetrics>* metrics = nullptr,
                HostDeviceStage::Copies* copies = nullptr) {
    auto group = std::make_shared<comm::InProcGroup>(world);
    std::vector<std::unique_ptr<comm::Communicator>> comms;
    for (int r = 0; r < world; ++r) {
      comms.push_back(std::make_unique<comm::InProcCommunicator>(group, r));
    }
    // Groups by name, made by the first member that asks.
    std::mutex groups_mu;
    std::map<std::string, std::vector<std::unique_ptr<comm::Communicator>>> groups;
    const int model_ranks = c.pipeline.stages * c.tensor;
    RunResult out;
    out.summaries.assign(world, core::internalError("not run"));
    out.per_rank.resize(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        TrainerContext ctx;
        ctx.comm = comms[r].get();
        ctx.train = &train_;
        ctx.test = &test_;
        if (metrics != nullptr) ctx.metrics = &(*metrics)[r];
        ctx.make_group = [&](const std::string& name, int rank,
                             int size) -> core::Result<std::unique_ptr<comm::Communicator>> {
          std::lock_guard lock(groups_mu);
          auto& members = groups[name];
          if (members.empty()) members = comm::makeInProcCommunicators(size);
          EXPECT_EQ(members.size(), static_cast<size_t>(size)) << name;
          EXPECT_TRUE(members[rank] != nullptr) << name << " rank " << rank << " asked twice";
          return std::move(members[rank]);
        };
        if (copies != nullptr) {
          ctx.make_device_stage = [&c, copies](
                                      model::ModelStage& host,
                                      int slots) -> core::Result<std::unique_ptr<DeviceStage>> {
            RM_ASSIGN_OR_RETURN(auto copy, model::ModelStage::create(
                                               modelConfig(c.model), c.seed + 1, host.microBatch(),
                                               host.firstLayer(), host.endLayer(), slots));
            return std::unique_ptr<DeviceStage>(new HostDeviceStage(std::move(copy), copies));
          };
        }
        Trainer t(c, ctx);
        out.summaries[r] = t.run();
        out.per_rank[r] = t.parameters();
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < model_ranks && r < world; ++r) {
      out.params.insert(out.params.end(), out.per_rank[r].begin(), out.per_rank[r].end());
    }
    return out;
  }

  static double relativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(double(b[i])));
    }
    return diff / scale;
  }

  void resumeAtTheCommonStep(int world, int64_t common);

  fs::path dir_;
  data::Dataset train_ = testing::syntheticSet(512, 1);
  data::Dataset test_ = testing::syntheticSet(300, 2);
};

TEST_F(PipelineTrainer, StagesTrainTheSameModelAsOneRank) {
  const RunResult one = run(config(1, 1, Schedule::kOneFOneB), 1);
  ASSERT_TRUE(one.summaries[0].ok()) << one.summaries[0].status().toString();
  for (auto [stages, micro, schedule] :
       {std::tuple{3, 4, Schedule::kOneFOneB}, std::tuple{2, 8, Schedule::kGPipe},
        std::tuple{3, 1, Schedule::kGPipe}}) {
    SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(micro) + " micro-batches, " +
                 contract::name(schedule));
    const RunResult piped = run(config(stages, micro, schedule), stages);
    for (const auto& s : piped.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_LE(relativeDifference(piped.params, one.params), 1e-5);
    const TrainSummary& a = *piped.summaries[0];
    const TrainSummary& b = *one.summaries[0];
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.epochs, 2);
    ASSERT_TRUE(a.test_accuracy && b.test_accuracy);
    EXPECT_NEAR(*a.test_accuracy, *b.test_accuracy, 1.0 / 300 + 1e-9);
    ASSERT_TRUE(a.final_train_loss && b.final_train_loss);
    EXPECT_NEAR(*a.final_train_loss, *b.final_train_loss, 1e-4);
    EXPECT_NE(a.model_signature.find("layers [0, "), std::string::npos) << a.model_signature;
  }
}

// Autotune of the micro-batch count: every stage rebuilds itself for each count rank 0 names,
// between the same two steps, and the run trains what the untuned run trains (the mini-batch's
// gradient is the same mean, up to float rounding), in the same steps. The choice is every
// stage's, in the CSV log and beside the checkpoints, where a longer run takes it instead of
// tuning again.
TEST_F(PipelineTrainer, AutotuneRebuildsTheStagesForEachMicroBatchCountAndTrainsTheSameModel) {
  const contract::TrainerSettings plain = config(2, 2, Schedule::kOneFOneB);
  contract::TrainerSettings tuned = plain;
  tuned.autotune.enabled = true;
  tuned.autotune.max_samples = 4;
  tuned.autotune.warmup_steps = 1;
  tuned.autotune.measure_steps = 2;
  tuned.autotune.log = (dir_ / "autotune.csv").string();
  tuned.checkpoint.path = (dir_ / "ckpt").string();
  tuned.checkpoint.every_steps = 0;
  fs::create_directories(dir_);

  const RunResult untuned = run(plain, 2);
  for (const auto& s : untuned.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_FALSE(untuned.summaries[0]->autotune.has_value());
  const RunResult piped = run(tuned, 2);
  for (const auto& s : piped.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  ASSERT_TRUE(piped.summaries[0]->autotune.has_value());
  const AutotuneChoice& a = *piped.summaries[0]->autotune;
  EXPECT_GE(a.samples, 2);  // the configured count and at least one other
  EXPECT_LE(a.samples, 4);
  ASSERT_EQ(a.values.size(), 1u);
  const double chosen = a.value(autotune::kMicroBatchesKnob);
  EXPECT_TRUE(chosen == 1 || chosen == 2 || chosen == 4 || chosen == 8) << chosen;
  ASSERT_TRUE(piped.summaries[1]->autotune.has_value());
  EXPECT_EQ(piped.summaries[1]->autotune->values, a.values);  // every stage trains on it
  EXPECT_EQ(piped.summaries[0]->steps, untuned.summaries[0]->steps);
  EXPECT_LE(relativeDifference(piped.params, untuned.params), 1e-5);

  // The samples: the configured count first, then another, which the stages were rebuilt for.
  std::ifstream csv(dir_ / "autotune.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), static_cast<size_t>(a.samples) + 1);
  EXPECT_EQ(lines[0], "sample,step,microBatches,median_step_seconds,best");
  EXPECT_EQ(lines[1].substr(0, 6), "1,3,2,");
  EXPECT_EQ(lines[2].substr(0, 6), "2,6,4,");  // the search steps up from the configured count
  ASSERT_TRUE(fs::exists(dir_ / "ckpt" / kAutotuneChoiceFile));

  contract::TrainerSettings longer = tuned;
  longer.epochs = 3;
  const RunResult resumed = run(longer, 2);
  for (const auto& s : resumed.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  ASSERT_TRUE(resumed.summaries[0]->autotune.has_value());
  EXPECT_TRUE(resumed.summaries[0]->autotune->from_checkpoint);
  EXPECT_EQ(resumed.summaries[0]->autotune->values, a.values);
}

// D x S = 2 x 2: two replicas of a two-stage pipeline, batch b each, train what one rank does on
// their union (batch 2b), and the replicas stay identical.
TEST_F(PipelineTrainer, ReplicasOfAPipelineTrainAsOneRankOnTheirUnion) {
  contract::TrainerSettings one_rank = config(1, 1, Schedule::kOneFOneB);
  one_rank.batch_size = 96;
  const RunResult one = run(one_rank, 1);
  ASSERT_TRUE(one.summaries[0].ok()) << one.summaries[0].status().toString();
  const RunResult replicas = run(config(2, 4, Schedule::kOneFOneB), 4);
  for (const auto& s : replicas.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_LE(relativeDifference(replicas.params, one.params), 1e-5);
  EXPECT_EQ(replicas.per_rank[2], replicas.per_rank[0]) << "replica 1's stage 0 diverged";
  EXPECT_EQ(replicas.per_rank[3], replicas.per_rank[1]) << "replica 1's stage 1 diverged";
  const TrainSummary& a = *replicas.summaries[0];
  const TrainSummary& b = *one.summaries[0];
  EXPECT_EQ(a.steps, b.steps);
  ASSERT_TRUE(a.test_accuracy && b.test_accuracy);
  EXPECT_NEAR(*a.test_accuracy, *b.test_accuracy, 1.0 / 300 + 1e-9);
  EXPECT_GT(a.allreduce_calls, 0u) << "the replicas must have averaged their gradients";
}

// The GPU path's engine: each stage's executor runs on the device stage, the host stage keeps
// the master weights (gradients down, the host optimizer, parameters up), for gpipe and 1f1b,
// with and without replicas. The device copy starts from other weights (another seed), so only
// the upload before the first step makes it land bitwise where the host path lands.
TEST_F(PipelineTrainer, StagesOnADeviceTrainWhatHostStagesTrain) {
  for (auto [world, micro, schedule] :
       {std::tuple{2, 4, Schedule::kOneFOneB}, std::tuple{2, 2, Schedule::kGPipe},
        std::tuple{4, 4, Schedule::kOneFOneB}}) {
    SCOPED_TRACE(std::to_string(world) + " ranks, " + std::to_string(micro) + " micro-batches, " +
                 contract::name(schedule));
    const contract::TrainerSettings c = config(2, micro, schedule);
    const RunResult host = run(c, world);
    HostDeviceStage::Copies copies;
    const RunResult device = run(c, world, nullptr, &copies);
    for (const auto& s : device.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
    for (int r = 0; r < world; ++r) EXPECT_EQ(device.per_rank[r], host.per_rank[r]) << "rank " << r;
    const TrainSummary& a = *device.summaries[0];
    EXPECT_EQ(a.device, "cuda");
    // Every step: one download and one upload per rank, and one upload before the first.
    EXPECT_EQ(copies.downloads.load(), world * a.steps);
    EXPECT_EQ(copies.uploads.load(), world * (a.steps + 1));
    ASSERT_TRUE(a.test_accuracy && host.summaries[0]->test_accuracy);
    EXPECT_EQ(*a.test_accuracy, *host.summaries[0]->test_accuracy);
  }
}

TEST_F(PipelineTrainer, PipeDreamOnADeviceIsRefusedNamingTheSchedule) {
  HostDeviceStage::Copies copies;
  const RunResult refused = run(config(2, 2, Schedule::kPipeDream), 2, nullptr, &copies);
  for (const auto& s : refused.summaries) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("parallelism.pipeline.schedule: pipedream stages train "
                                        "on the CPU"),
              std::string::npos)
        << s.status().message();
  }
  EXPECT_EQ(copies.uploads.load(), 0);
}

// Tensor parallelism through the trainer: T = 2 alone, and 2 stages x 2 tensor ranks, train what
// one rank does (the parts hold the same numbers in another order, so compare the test figures
// and the last layer's bias, which every tensor rank of the last stage holds whole).
TEST_F(PipelineTrainer, TensorRanksTrainTheSameModelAsOneRank) {
  contract::TrainerSettings c1 = config(1, 1, Schedule::kOneFOneB);
  c1.model.hidden = {32, 24, 16};  // two layer pairs, so that two stages can hold one each
  const RunResult whole = run(c1, 1);
  ASSERT_TRUE(whole.summaries[0].ok()) << whole.summaries[0].status().toString();
  for (auto [stages, tensor] : {std::pair{1, 2}, std::pair{2, 2}}) {
    SCOPED_TRACE(std::to_string(stages) + " stages x " + std::to_string(tensor) + " tensor ranks");
    contract::TrainerSettings c = config(stages, 4, Schedule::kOneFOneB);
    c.model.hidden = {32, 24, 16};
    c.tensor = tensor;
    const RunResult split = run(c, stages * tensor);
    for (const auto& s : split.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
    const TrainSummary& a = *split.summaries[0];
    const TrainSummary& b = *whole.summaries[0];
    EXPECT_EQ(a.steps, b.steps);
    ASSERT_TRUE(a.test_accuracy && b.test_accuracy);
    EXPECT_NEAR(*a.test_accuracy, *b.test_accuracy, 1.0 / 300 + 1e-9);
    ASSERT_TRUE(a.final_train_loss && b.final_train_loss);
    EXPECT_NEAR(*a.final_train_loss, *b.final_train_loss, 1e-4);
    // The last layer is row-parallel (the second of the second pair): its bias, the last 10
    // numbers of the last rank's part, is whole there and must match the one rank's.
    const std::vector<float>& last = split.per_rank.back();
    const std::vector<float>& ref = whole.per_rank[0];
    for (size_t k = 1; k <= 10; ++k) {
      EXPECT_NEAR(last[last.size() - k], ref[ref.size() - k], 1e-5) << "bias " << 10 - k;
    }
  }
}

// A tensor-parallel stage's sums over its group are measured on their own and left out of its
// compute time; a stage of whole layers reports none.
TEST_F(PipelineTrainer, TensorSumsAreMeasuredApartFromCompute) {
  for (auto [stages, tensor] : {std::pair{1, 2}, std::pair{2, 1}}) {
    SCOPED_TRACE(std::to_string(stages) + " stages x " + std::to_string(tensor) + " tensor ranks");
    contract::TrainerSettings c = config(stages, 4, Schedule::kOneFOneB);
    c.model.hidden = {32, 24, 16};
    c.tensor = tensor;
    const int world = stages * tensor;
    std::vector<metrics::Registry> registries(world);
    std::vector<TrainerMetrics> metrics;
    for (int r = 0; r < world; ++r) {
      auto m = TrainerMetrics::create(registries[r], "inproc", r / tensor);
      ASSERT_TRUE(m.ok()) << m.status().message();
      metrics.push_back(std::move(*m));
    }
    const RunResult result = run(c, world, &metrics);
    for (const auto& s : result.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
    for (int r = 0; r < world; ++r) {
      const TrainerMetrics::Pipeline& p = metrics[r].pipeline;
      EXPECT_GT(p.compute_seconds->Value(), 0) << "rank " << r;
      if (tensor > 1) {
        // Two layer pairs: each step sums activations forward and gradients back, per micro-batch.
        EXPECT_GT(p.tensor_sum_bytes->Value(), 0) << "rank " << r;
        EXPECT_GT(p.tensor_sum_seconds->Value(), 0) << "rank " << r;
      } else {
        EXPECT_EQ(p.tensor_sum_bytes->Value(), 0) << "rank " << r;
        EXPECT_EQ(p.tensor_sum_seconds->Value(), 0) << "rank " << r;
      }
    }
  }
}

// PipeDream trains (the loss falls), writes checkpoints at epoch ends only (between them
// micro-batches are in flight), and a run stopped inside an epoch by maxSteps drains its stream
// instead of leaving a stage waiting.
TEST_F(PipelineTrainer, PipeDreamTrainsCheckpointsAtEpochEndsAndDrainsAtMaxSteps) {
  contract::TrainerSettings c = config(2, 4, Schedule::kPipeDream);
  c.checkpoint.path = dir_.string();
  c.checkpoint.every_steps = 4;
  const RunResult run1 = run(c, 2);
  for (const auto& s : run1.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  const TrainSummary& a = *run1.summaries[0];
  EXPECT_EQ(a.steps, 22);  // 11 steps an epoch
  ASSERT_TRUE(a.final_train_loss && a.test_accuracy);
  EXPECT_LT(*a.final_train_loss, 2.2) << "the loss did not fall from ln(10) = 2.30";
  for (const char* stage : {"stage-0-of-2", "stage-1-of-2"}) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir_ / stage)) {
      files.push_back(e.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"ckpt-000000000011.rmck", "ckpt-000000000022.rmck",
                                               "run-marker.rmck"}))
        << stage;
  }
  contract::TrainerSettings stopped = config(2, 4, Schedule::kPipeDream);
  stopped.max_steps = 7;
  const RunResult run2 = run(stopped, 2);
  for (const auto& s : run2.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(run2.summaries[0]->steps, 7);
}

TEST_F(PipelineTrainer, ResumesEveryStageAtTheNewestStepAllOfThemHold) {
  // Checkpoints every 4 steps and at the end of each epoch: one replica has 11 steps an epoch
  // (the last newest-before-7 is step 4), two have 6 (the end of epoch 1, step 6).
  for (auto [world, common] : {std::pair{2, 4}, std::pair{4, 6}}) {
    SCOPED_TRACE(std::to_string(world) + " ranks");
    fs::remove_all(dir_);
    resumeAtTheCommonStep(world, common);
  }
}

void PipelineTrainer::resumeAtTheCommonStep(int world, int64_t common) {
  const RunResult straight = run(config(2, 4, Schedule::kOneFOneB), world);
  for (const auto& s : straight.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();

  contract::TrainerSettings c = config(2, 4, Schedule::kOneFOneB);
  c.checkpoint.path = dir_.string();
  c.checkpoint.every_steps = 4;
  c.max_steps = 7;
  RunResult first = run(c, world);
  for (const auto& s : first.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  // Stage 1 "crashed" before writing step 7: both must go back to the step before.
  const fs::path stage1 = dir_ / "stage-1-of-2";
  ASSERT_TRUE(fs::exists(dir_ / "stage-0-of-2" / "ckpt-000000000007.rmck"));
  ASSERT_TRUE(fs::remove(stage1 / "ckpt-000000000007.rmck"));

  c.max_steps = 0;
  const RunResult resumed = run(c, world);
  for (const auto& s : resumed.summaries) {
    ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_EQ(s->resumed_from_step, common);
    EXPECT_EQ(s->steps, straight.summaries[0]->steps);
  }
  EXPECT_EQ(resumed.per_rank, straight.per_rank)
      << "a resumed pipeline must land where one run does";
}

TEST_F(PipelineTrainer, AStageOfThisRunWithoutCheckpointsMakesTheRunStartOver) {
  const RunResult straight = run(config(2, 4, Schedule::kOneFOneB), 2);
  for (const auto& s : straight.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();

  contract::TrainerSettings c = config(2, 4, Schedule::kOneFOneB);
  c.checkpoint.path = dir_.string();
  c.checkpoint.every_steps = 4;
  c.max_steps = 5;
  RunResult first = run(c, 2);
  for (const auto& s : first.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  // Stage 1 was killed before its first checkpoint was whole; stage 0 saved steps 4 and 5.
  const fs::path stage0 = dir_ / "stage-0-of-2", stage1 = dir_ / "stage-1-of-2";
  for (const auto& entry : fs::directory_iterator(stage1)) {
    if (entry.path().filename() != "run-marker.rmck") fs::remove(entry.path());
  }
  ASSERT_TRUE(fs::exists(stage0 / "ckpt-000000000005.rmck"));

  c.max_steps = 0;
  ::testing::internal::CaptureStderr();
  const RunResult again = run(c, 2);
  const std::string log = ::testing::internal::GetCapturedStderr();
  for (const auto& s : again.summaries) {
    ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_EQ(s->resumed_from_step, -1);
    EXPECT_EQ(s->steps, straight.summaries[0]->steps);
  }
  EXPECT_EQ(again.per_rank, straight.per_rank) << "starting over must land where one run does";
  EXPECT_NE(log.find("stage 1 of 2 never saved a checkpoint of this run (the newest another "
                     "stage saved is step 5): removing this stage's checkpoints under " +
                     stage0.string() + " and starting over from step 0"),
            std::string::npos)
      << log;
  // The fresh start saved both stages again, from one new run.
  EXPECT_TRUE(fs::exists(stage1 / "ckpt-000000000022.rmck"));
  EXPECT_TRUE(fs::exists(stage0 / "ckpt-000000000022.rmck"));
  EXPECT_FALSE(fs::exists(stage0 / "ckpt-000000000005.rmck"));
}

TEST_F(PipelineTrainer, AStageWithoutCheckpointsBesideOneWithThemIsAnError) {
  contract::TrainerSettings c = config(2, 4, Schedule::kOneFOneB);
  c.checkpoint.path = dir_.string();
  c.max_steps = 3;
  RunResult first = run(c, 2);
  for (const auto& s : first.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  fs::remove_all(dir_ / "stage-1-of-2");
  const RunResult again = run(c, 2);
  ASSERT_FALSE(again.summaries[0].ok());
  EXPECT_NE(again.summaries[0].status().message().find("stage 1 of 2 has no checkpoint under " +
                                                       dir_.string()),
            std::string::npos)
      << again.summaries[0].status().message();
}

TEST_F(PipelineTrainer, TheWorldMustHoldWholeReplicasOfThePipeline) {
  const RunResult r = run(config(3, 4, Schedule::kOneFOneB), 2);
  ASSERT_FALSE(r.summaries[0].ok());
  EXPECT_NE(r.summaries[0].status().message().find(
                "3 stages x 1 tensor ranks need a world that is a multiple of 3 ranks"),
            std::string::npos)
      << r.summaries[0].status().message();
}

// Rank ((d * S) + s) * T + t is tensor rank t of stage s of replica d.
TEST(PipelineLayout, EachRankKnowsItsStage) {
  struct Case {
    int32_t stages, tensor;
    std::vector<int> want;  // by rank
  };
  const Case cases[] = {
      {1, 1, {-1, -1, -1}},              // not split: no stage
      {2, 1, {0, 1, 0, 1}},              // two replicas of two stages
      {1, 2, {0, 0, 0, 0}},              // tensor ranks alone: one stage
      {2, 2, {0, 0, 1, 1, 0, 0, 1, 1}},  // tensor groups, then stages, then replicas
      {3, 1, {0, 1, 2, 0, 1, 2}},
  };
  for (const Case& c : cases) {
    contract::TrainerSettings s = defaultTrainerSettings();
    s.pipeline.stages = c.stages;
    s.tensor = c.tensor;
    EXPECT_EQ(splitsModel(s), c.stages > 1 || c.tensor > 1);
    std::vector<int> stages;
    for (int rank = 0; rank < static_cast<int>(c.want.size()); ++rank) {
      stages.push_back(pipelineStageOf(s, rank));
    }
    EXPECT_EQ(stages, c.want) << c.stages << " stages x " << c.tensor << " tensor ranks";
  }
}

}  // namespace
}  // namespace ringmaster::trainer
