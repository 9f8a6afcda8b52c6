// The GPU trainer end to end on Fashion-MNIST through the nccl backend (a world of one): the
// accuracy target in fp32 and bf16, graph replay against eager steps, checkpoint and resume.
// Skips without a GPU or without the data set.

#include "trainer/gpu/gpu_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "trainer/comm/factory.h"
#include "trainer/gpu/tests/gpu_test_util.h"

namespace ringmaster::trainer::gpu {
namespace {

struct Data {
  data::Dataset train, test;
};

// Loaded once for the whole binary.
const Data* fashionMnist() {
  static const Data* data = [] {
    auto train = data::loadFashionMnist(testing::fashionMnistDir(), data::Split::kTrain);
    auto test = data::loadFashionMnist(testing::fashionMnistDir(), data::Split::kTest);
    if (!train.ok() || !test.ok()) return static_cast<Data*>(nullptr);
    return new Data{std::move(train).value(), std::move(test).value()};
  }();
  return data;
}

#define RM_REQUIRE_DATA()                                                         \
  do {                                                                            \
    if (fashionMnist() == nullptr)                                                \
      GTEST_SKIP() << "Fashion-MNIST not found in " << testing::fashionMnistDir() \
                   << " (set RM_FASHION_MNIST)";                                  \
  } while (0)

contract::TrainerSettings mlpConfig(contract::Precision precision) {
  contract::TrainerSettings c = defaultTrainerSettings();
  c.model.type = contract::ModelType::kMlp;
  c.model.hidden = {512, 512};
  c.epochs = 5;
  c.batch_size = 128;
  c.optimizer.learning_rate = 0.05;
  c.optimizer.momentum = 0.9;
  c.optimizer.schedule = contract::LrSchedule::kCosine;
  c.device = contract::Device::kCuda;
  c.precision = precision;
  return c;
}

struct TrainRun {
  core::Result<TrainSummary> summary = core::internalError("not run");
  std::vector<float> params;
};

TrainRun train(const contract::TrainerSettings& config) {
  comm::CommConfig cc;
  cc.backend = "auto";
  cc.device = "cuda";
  cc.world_size = 1;
  cc.make_nccl = comm::makeNcclCommunicator;
  auto comm = comm::makeCommunicator(cc);
  TrainRun run;
  if (!comm.ok()) {
    run.summary = comm.status();
    return run;
  }
  TrainerContext ctx;
  ctx.comm = comm->get();
  ctx.train = &fashionMnist()->train;
  ctx.test = &fashionMnist()->test;
  GpuTrainer trainer(config, ctx);
  run.summary = trainer.run();
  run.params = trainer.parameters();
  return run;
}

TEST(GpuTrainer, Fp32MlpReaches88PercentIn5EpochsOverNccl) {
  RM_REQUIRE_GPU();
  RM_REQUIRE_DATA();
  TrainRun run = train(mlpConfig(contract::Precision::kFp32));
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().message();
  const TrainSummary& s = *run.summary;
  EXPECT_GE(s.test_accuracy.value_or(0), 0.88);
  EXPECT_EQ(s.backend, "nccl");
  EXPECT_EQ(s.device, "cuda");
  EXPECT_EQ(s.epochs, 5);
  EXPECT_GT(s.allreduce_seconds, 0) << "timed steps measured the allreduce";
  EXPECT_GE(s.overlap_ratio, 0.0);
  EXPECT_LE(s.overlap_ratio, 1.0);
  EXPECT_GT(s.steady_samples_per_second.value_or(0), 0);
  std::printf("fp32: accuracy %.4f, %.0f samples/s steady, allreduce %.3f ms total, overlap %.2f\n",
              s.test_accuracy.value_or(0), s.steady_samples_per_second.value_or(0),
              s.allreduce_seconds * 1e3, s.overlap_ratio);
}

TEST(GpuTrainer, Bf16MlpReaches88PercentIn5Epochs) {
  RM_REQUIRE_GPU();
  RM_REQUIRE_DATA();
  TrainRun run = train(mlpConfig(contract::Precision::kBf16));
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().message();
  EXPECT_GE(run.summary->test_accuracy.value_or(0), 0.88);
  EXPECT_EQ(run.summary->precision, "bf16");
  std::printf("bf16: accuracy %.4f, %.0f samples/s steady\n",
              run.summary->test_accuracy.value_or(0),
              run.summary->steady_samples_per_second.value_or(0));
}

TEST(GpuTrainer, CnnReaches90PercentIn5Epochs) {
  RM_REQUIRE_GPU();
  RM_REQUIRE_DATA();
  // The CPU training test's CNN run (2 ranks x batch 32) as one rank of batch 64.
  contract::TrainerSettings c = mlpConfig(contract::Precision::kFp32);
  c.model.type = contract::ModelType::kCnn;
  c.batch_size = 64;
  c.optimizer.learning_rate = 0.02;
  TrainRun run = train(c);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().message();
  EXPECT_GE(run.summary->test_accuracy.value_or(0), 0.90);
  std::printf("cnn fp32: accuracy %.4f, %.0f samples/s steady\n",
              run.summary->test_accuracy.value_or(0),
              run.summary->steady_samples_per_second.value_or(0));
}

TEST(GpuTrainer, GraphReplayComputesWhatEagerStepsCompute) {
  RM_REQUIRE_GPU();
  RM_REQUIRE_DATA();
  contract::TrainerSettings c = mlpConfig(contract::Precision::kFp32);
  c.epochs = 1;
  c.max_steps = 120;
  c.cuda_graph = true;
  TrainRun graph = train(c);
  c.cuda_graph = false;
  TrainRun eager = train(c);
  ASSERT_TRUE(graph.summary.ok()) << graph.summary.status().message();
  ASSERT_TRUE(eager.summary.ok()) << eager.summary.status().message();
  ASSERT_EQ(graph.params.size(), eager.params.size());
  ASSERT_FALSE(graph.params.empty());
  double worst = 0;
  for (size_t i = 0; i < graph.params.size(); ++i)
    worst = std::max(worst, std::fabs(double(graph.params[i]) - eager.params[i]));
  EXPECT_LE(worst, 1e-6) << "same kernels, same order: the replayed steps must match";
}

TEST(GpuTrainer, ResumesFromItsOwnCheckpoint) {
  RM_REQUIRE_GPU();
  RM_REQUIRE_DATA();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("rm-gpu-ckpt-" + std::to_string(std::random_device{}()));
  contract::TrainerSettings c = mlpConfig(contract::Precision::kBf16);
  c.epochs = 2;
  c.max_steps = 300;
  c.checkpoint.path = dir.string();
  TrainRun first = train(c);
  ASSERT_TRUE(first.summary.ok()) << first.summary.status().message();
  EXPECT_EQ(first.summary->steps, 300);
  c.max_steps = 0;
  TrainRun second = train(c);
  ASSERT_TRUE(second.summary.ok()) << second.summary.status().message();
  EXPECT_EQ(second.summary->resumed_from_step, 300);
  EXPECT_EQ(second.summary->epochs, 2);
  EXPECT_GE(second.summary->test_accuracy.value_or(0), 0.8);
  // Once more over the finished checkpoint: nothing to train, the restored model evaluated.
  TrainRun third = train(c);
  ASSERT_TRUE(third.summary.ok()) << third.summary.status().message();
  EXPECT_EQ(third.summary->resumed_from_step, second.summary->steps);
  EXPECT_EQ(third.summary->steps, second.summary->steps);
  EXPECT_EQ(third.summary->epochs, 2);
  EXPECT_FALSE(third.summary->samples_per_second.has_value());
  EXPECT_FALSE(third.summary->final_train_loss.has_value());
  ASSERT_TRUE(third.summary->test_accuracy.has_value());
  EXPECT_NEAR(*third.summary->test_accuracy, second.summary->test_accuracy.value_or(-1), 1e-6);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::trainer::gpu
