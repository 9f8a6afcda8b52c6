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
  EXPECT_EQ(c->model.hidden, (std::vector<int>{256, 128}));
  EXPECT_EQ(c->dataset.path, "/data/fmnist");
  EXPECT_EQ(c->epochs, 3);
  EXPECT_EQ(c->batch_size, 64);
  EXPECT_EQ(c->optimizer.type, "adam");
  EXPECT_DOUBLE_EQ(c->optimizer.learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(c->bucket_cap_mb, 4);
  EXPECT_EQ(c->checkpoint.path, "/ckpt");
  EXPECT_EQ(c->checkpoint.every_steps, 100);
}

TEST(TrainerConfig, AcceptsATopLevelTrainerKey) {
  auto c = parseTrainerConfig("trainer:\n  epochs: 2\n", "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->epochs, 2);
}

TEST(TrainerConfig, DefaultsMatchTheDesign) {
  auto c = parseTrainerConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->model.type, "mlp");
  EXPECT_EQ(c->model.hidden, (std::vector<int>{512, 512}));
  EXPECT_EQ(c->batch_size, 128);
  EXPECT_DOUBLE_EQ(c->bucket_cap_mb, 25);
  EXPECT_EQ(c->epochs, 5);
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
