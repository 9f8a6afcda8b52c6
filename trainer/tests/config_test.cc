#include "trainer/config.h"

#include <gtest/gtest.h>

namespace ringmaster::trainer {
namespace {

TEST(TrainerConfig, ParsesSpecTrainerShape) {
  auto c = parseTrainerConfig(R"(
model: {type: mlp, hidden: [256, 128]}
dataset: {name: fashion-mnist, path: /data/fmnist}
epochs: 3
batchSize: 64
optimizer: {type: adam, learningRate: 0.001, weightDecay: 0.0001}
bucketCapMB: 4
checkpoint: {path: /ckpt, everySteps: 100}
)",
                              "job.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const contract::TrainerSettings& s = c->settings;
  EXPECT_EQ(s.model.hidden, (std::vector<int32_t>{256, 128}));
  EXPECT_EQ(s.dataset.path, "/data/fmnist");
  EXPECT_EQ(s.epochs, 3);
  EXPECT_EQ(s.batch_size, 64);
  EXPECT_EQ(s.optimizer.type, contract::OptimizerType::kAdam);
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(s.bucket_cap_mb, 4);
  EXPECT_EQ(s.checkpoint.path, "/ckpt");
  EXPECT_EQ(s.checkpoint.every_steps, 100);
  // The process's own options are not spec.trainer's.
  EXPECT_EQ(c->backend, "auto");
  EXPECT_EQ(c->metrics_port, -1);
}

TEST(TrainerConfig, AcceptsATopLevelTrainerKey) {
  auto c = parseTrainerConfig("trainer:\n  epochs: 2\n", "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->settings.epochs, 2);
}

TEST(TrainerConfig, DefaultsAreTheContracts) {
  auto c = parseTrainerConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->settings, contract::trainerSettings({}));
  EXPECT_EQ(c->settings, defaultTrainerSettings());
  EXPECT_EQ(c->settings.model.type, contract::ModelType::kMlp);
  EXPECT_EQ(c->settings.model.hidden, (std::vector<int32_t>{512, 512}));
  EXPECT_EQ(c->settings.batch_size, 128);
  EXPECT_DOUBLE_EQ(c->settings.bucket_cap_mb, 25);
  EXPECT_EQ(c->settings.epochs, 5);
}

TEST(TrainerConfig, DescribeIsTheStartUpLine) {
  struct Case {
    const char* yaml;
    const char* backend;
    std::string line;
  };
  const Case cases[] = {
      {"", "auto",
       "model=mlp hidden=[512,512] epochs=5 batchSize=128 optimizer=sgd lr=0.1 schedule=constant "
       "momentum=0.9 weightDecay=0 bucketCapMB=25 backend=auto device=auto precision=fp32 seed=42 "
       "blasThreads=1 data=/usr/share/datasets/fashion-mnist checkpoint=off"},
      {"model: {type: cnn, channels: [8, 16]}\n"
       "optimizer: {type: adam, learningRate: 0.001, schedule: cosine}\n"
       "checkpoint: {path: /ckpt}\ndevice: cpu\n"
       "parallelism: {pipeline: {stages: 2, microBatches: 4, schedule: gpipe}}\n",
       "tcp",
       "model=cnn channels=[8,16] epochs=5 batchSize=128 optimizer=adam "
       "lr=0.001 schedule=cosine momentum=0.9 weightDecay=0 bucketCapMB=25 backend=tcp device=cpu "
       "precision=fp32 seed=42 blasThreads=1 data=/usr/share/datasets/fashion-mnist "
       "checkpoint=/ckpt "
       "pipeline=2 stages x 4 micro-batches (gpipe)"},
      {"parallelism: {tensor: 2}\n", "gloo",
       "model=mlp hidden=[512,512] epochs=5 batchSize=128 optimizer=sgd lr=0.1 schedule=constant "
       "momentum=0.9 weightDecay=0 bucketCapMB=25 backend=gloo device=auto precision=fp32 seed=42 "
       "blasThreads=1 data=/usr/share/datasets/fashion-mnist checkpoint=off tensor=2"},
      {"globalBatchSize: 256\nmodel: {hidden: [64]}\nprecision: bf16\nseed: 7\n", "nccl",
       "model=mlp hidden=[64] epochs=5 batchSize=128 globalBatchSize=256 optimizer=sgd lr=0.1 "
       "schedule=constant momentum=0.9 weightDecay=0 bucketCapMB=25 backend=nccl device=auto "
       "precision=bf16 seed=7 blasThreads=1 data=/usr/share/datasets/fashion-mnist checkpoint=off"},
  };
  for (const Case& c : cases) {
    auto config = parseTrainerConfig(c.yaml, "job.yaml");
    ASSERT_TRUE(config.ok()) << c.yaml << ": " << config.status().message();
    config->backend = c.backend;
    EXPECT_EQ(describe(*config), c.line) << c.yaml;
  }
}

TEST(TrainerConfig, ResolveBatchSizeSplitsTheGlobalBatch) {
  struct Case {
    int64_t batch, global;
    int world;
    int64_t want;  // -1: an error
  };
  const Case cases[] = {
      {64, 0, 4, 64},    // no global batch: the per-rank batch as given
      {64, 256, 4, 64},  // 256 over 4 ranks
      {64, 256, 8, 32},  // the same step over 8 ranks
      {64, 256, 3, -1},  // does not split evenly
      {64, 256, 0, -1},  // no world
  };
  for (const Case& c : cases) {
    contract::TrainerSettings s = defaultTrainerSettings();
    s.batch_size = c.batch;
    s.global_batch_size = c.global;
    core::Status status = resolveBatchSize(s, c.world);
    if (c.want < 0) {
      EXPECT_EQ(status.code(), core::Code::kInvalidArgument) << c.global << "/" << c.world;
      EXPECT_NE(status.message().find("trainer.globalBatchSize"), std::string::npos);
    } else {
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(s.batch_size, c.want) << c.global << "/" << c.world;
    }
  }
}

TEST(TrainerConfig, TheLayersConfigurationsComeFromTheSettings) {
  contract::TrainerSettings s = defaultTrainerSettings();
  s.model.type = contract::ModelType::kCnn;
  s.model.channels = {8, 16};
  s.model.cnn_hidden = 32;
  const model::ModelConfig cnn = modelConfig(s.model);
  EXPECT_EQ(cnn.type, model::ModelKind::kCnn);
  EXPECT_EQ(cnn.conv_channels, (std::vector<int>{8, 16}));
  EXPECT_EQ(cnn.cnn_hidden, 32);
  EXPECT_EQ(cnn.hidden, (std::vector<int>{512, 512}));
  EXPECT_EQ(modelConfig(defaultTrainerSettings().model).type, model::ModelKind::kMlp);

  s.optimizer.type = contract::OptimizerType::kAdam;
  s.optimizer.learning_rate = 0.002;
  s.optimizer.weight_decay = 0.01;
  s.optimizer.beta1 = 0.8;
  s.optimizer.beta2 = 0.99;
  s.optimizer.epsilon = 1e-6;
  const optim::OptimizerConfig adam = optimizerConfig(s.optimizer);
  EXPECT_EQ(adam.type, optim::OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(adam.learning_rate, 0.002);
  EXPECT_DOUBLE_EQ(adam.weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(adam.beta1, 0.8);
  EXPECT_DOUBLE_EQ(adam.beta2, 0.99);
  EXPECT_DOUBLE_EQ(adam.epsilon, 1e-6);
  s.optimizer = defaultTrainerSettings().optimizer;
  s.optimizer.nesterov = true;
  const optim::OptimizerConfig sgd = optimizerConfig(s.optimizer);
  EXPECT_EQ(sgd.type, optim::OptimizerKind::kSgd);
  EXPECT_DOUBLE_EQ(sgd.momentum, s.optimizer.momentum);
  EXPECT_TRUE(sgd.nesterov);
}

TEST(TrainerConfig, UnknownKeyIsAnErrorNamingItsPath) {
  auto c = parseTrainerConfig("optimizer: {type: sgd, momentm: 0.9}\n", "job.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("job.yaml: trainer.optimizer.momentm: unknown field"),
            std::string::npos)
      << c.status().message();
}

TEST(TrainerConfig, WrongTypeNamesKeyAndValue) {
  auto c = parseTrainerConfig("epochs: five\n", "job.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "job.yaml: trainer.epochs: expected integer, got string");
  auto h = parseTrainerConfig("model: {hidden: [512, x]}\n", "job.yaml");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("trainer.model.hidden[1]"), std::string::npos);
}

TEST(TrainerConfig, OutOfRangeAndEnumErrorsNameTheKey) {
  struct Case {
    const char* yaml;
    const char* key;
  } cases[] = {
      {"batchSize: 0", "trainer.batchSize"},
      {"optimizer: {momentum: 1.5}", "trainer.optimizer.momentum"},
      {"optimizer: {type: rmsprop}", "trainer.optimizer.type"},
      {"model: {type: transformer}", "trainer.model.type"},
      {"backend: gloo", "trainer.backend"},
      {"bucketCapMB: -1", "trainer.bucketCapMB"},
      {"model: {type: cnn, channels: [8]}", "trainer.model.channels"},
      {"optimizer: {schedule: linear}", "trainer.optimizer.schedule"},
  };
  for (const auto& c : cases) {
    auto r = parseTrainerConfig(c.yaml, "job.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.status().message().find(c.key), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().exitCode(), 1);
  }
}

TEST(TrainerConfig, InvalidYamlNamesTheLine) {
  auto c = parseTrainerConfig("epochs: 1\nmodel: [unclosed\n", "job.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("job.yaml"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("job.yaml: line 3, column 1: "), std::string::npos)
      << c.status().message();
}

TEST(TrainerConfig, MissingFileIsNamed) {
  auto c = loadTrainerSpec("/nonexistent/job.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/job.yaml"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::trainer
