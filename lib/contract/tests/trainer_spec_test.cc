#include "ringmaster/contract/trainer_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringmaster::contract {
namespace {

kube::TrainerSpec decodeSpec(const nlohmann::json& json) {
  auto spec = kube::decode<kube::TrainerSpec>(json);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? *spec : kube::TrainerSpec{};
}

std::vector<std::string> fields(const std::vector<FieldError>& errors) {
  std::vector<std::string> out;
  for (const FieldError& e : errors) out.push_back(e.field);
  return out;
}

// A valid pbt member's spec.trainer.pbt, with `changes` merged over it (null removes a key).
nlohmann::json pbtMember(const nlohmann::json& changes = nlohmann::json::object()) {
  nlohmann::json pbt = {
      {"directory", "/pbt"},
      {"member", "a"},
      {"population", {"a", "b"}},
      {"parameters",
       {{{"path", "optimizer.learningRate"}, {"min", 0.001}, {"max", 0.5}, {"scale", "log"}}}}};
  pbt.merge_patch(changes);
  return pbt;
}

TEST(TrainerSpec, AnEmptySpecIsValidAndEveryDefaultIsSet) {
  EXPECT_THAT(validateTrainer({}, "trainer"), ::testing::IsEmpty());
  const TrainerSettings s = trainerSettings({});
  EXPECT_EQ(s.model.type, ModelType::kMlp);
  EXPECT_EQ(s.model.hidden, (std::vector<int32_t>{512, 512}));
  EXPECT_EQ(s.model.channels, (std::vector<int32_t>{16, 32}));
  EXPECT_EQ(s.model.cnn_hidden, 0);
  EXPECT_EQ(s.dataset.name, "fashion-mnist");
  EXPECT_EQ(s.dataset.path, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(s.epochs, 5);
  EXPECT_EQ(s.batch_size, 128);
  EXPECT_EQ(s.optimizer.type, OptimizerType::kSgd);
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.1);
  EXPECT_DOUBLE_EQ(s.optimizer.momentum, 0.9);
  EXPECT_EQ(s.optimizer.schedule, LrSchedule::kConstant);
  EXPECT_DOUBLE_EQ(s.optimizer.beta2, 0.999);
  EXPECT_DOUBLE_EQ(s.bucket_cap_mb, 25.0);
  EXPECT_DOUBLE_EQ(s.first_bucket_cap_mb, 1.0);
  EXPECT_EQ(s.checkpoint.path, "");
  EXPECT_EQ(s.checkpoint.every_steps, 500);
  EXPECT_EQ(s.checkpoint.keep, 3);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.metrics_port, kDefaultMetricsPort);
  EXPECT_EQ(s.comm_timeout_seconds, 300);
  EXPECT_EQ(s.blas_threads, 1);
  EXPECT_EQ(s.device, Device::kAuto);
  EXPECT_EQ(s.precision, Precision::kFp32);
  EXPECT_TRUE(s.cuda_graph);
  EXPECT_FALSE(s.autotune.enabled);
}

TEST(TrainerSpec, AutotuneOnWithTheDefaultsOrTheGivenBudgetAndSpace) {
  kube::TrainerSpec spec;
  spec.autotune.emplace();
  TrainerSettings s = trainerSettings(spec);
  EXPECT_TRUE(s.autotune.enabled);
  EXPECT_EQ(s.autotune.max_samples, 20);
  EXPECT_EQ(s.autotune.warmup_steps, 3);
  EXPECT_EQ(s.autotune.measure_steps, 10);
  EXPECT_TRUE(s.autotune.bucket_caps.empty());
  EXPECT_FALSE(s.autotune.retune);
  spec.autotune->max_samples = 30;
  spec.autotune->bucket_cap_mb = {4, 25, 64};
  spec.autotune->micro_batches = {1, 2};
  spec.autotune->blas_threads = {1, 2, 4};
  spec.autotune->log = "/tmp/tune.csv";
  spec.autotune->retune = true;
  s = trainerSettings(spec);
  EXPECT_EQ(s.autotune.max_samples, 30);
  EXPECT_EQ(s.autotune.bucket_caps, (std::vector<double>{4, 25, 64}));
  EXPECT_EQ(s.autotune.micro_batches, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(s.autotune.blas_threads, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(s.autotune.log, "/tmp/tune.csv");
  EXPECT_TRUE(s.autotune.retune);
}

TEST(TrainerSpec, APbtMembersDefaultsAreRayTunesAndTheSpaceIsLibSearchs) {
  const TrainerSettings off = trainerSettings(kube::TrainerSpec{});
  EXPECT_FALSE(off.pbt.enabled());
  auto spec = kube::decode<kube::TrainerSpec>(nlohmann::json{{"pbt", pbtMember()}});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();
  const TrainerSettings s = trainerSettings(*spec);
  ASSERT_TRUE(s.pbt.enabled());
  EXPECT_EQ(s.pbt.directory, "/pbt");
  EXPECT_EQ(s.pbt.member, "a");
  EXPECT_EQ(s.pbt.population, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(s.pbt.space.size(), 1u);
  EXPECT_EQ(s.pbt.space[0].scale, search::Scale::kLog);
  EXPECT_EQ(s.pbt.quantile, 0.25);
  EXPECT_EQ(s.pbt.resample_probability, 0.25);
  EXPECT_FALSE(s.pbt.loss);
  EXPECT_TRUE(s.pbt.maximize);
  EXPECT_EQ(s.pbt.wait_seconds, 300);
}

TEST(TrainerSpec, GivenValuesWinOverDefaults) {
  const TrainerSettings s = trainerSettings(decodeSpec({
      {"model", {{"type", "cnn"}, {"channels", {8, 16}}, {"cnnHidden", 64}}},
      {"dataset", {{"path", "/data"}}},
      {"epochs", 2},
      {"optimizer",
       {{"type", "adam"}, {"learningRate", 0.001}, {"schedule", "cosine"}, {"epsilon", 1e-6}}},
      {"checkpoint", {{"path", "/ckpt"}, {"everySteps", 0}}},
      {"metricsPort", 9400},
      {"device", "cuda"},
      {"precision", "bf16"},
      {"cudaGraph", false},
  }));
  EXPECT_EQ(s.model.type, ModelType::kCnn);
  EXPECT_EQ(s.model.channels, (std::vector<int32_t>{8, 16}));
  EXPECT_EQ(s.model.cnn_hidden, 64);
  EXPECT_EQ(s.dataset.path, "/data");
  EXPECT_EQ(s.epochs, 2);
  EXPECT_EQ(s.optimizer.type, OptimizerType::kAdam);
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.001);
  EXPECT_EQ(s.optimizer.schedule, LrSchedule::kCosine);
  EXPECT_DOUBLE_EQ(s.optimizer.epsilon, 1e-6);
  EXPECT_EQ(s.checkpoint.path, "/ckpt");
  EXPECT_EQ(s.checkpoint.every_steps, 0);
  EXPECT_EQ(s.metrics_port, 9400);
  EXPECT_EQ(s.device, Device::kCuda);
  EXPECT_EQ(s.precision, Precision::kBf16);
  EXPECT_FALSE(s.cuda_graph);
}

struct Row {
  const char* what;
  nlohmann::json spec;
  std::vector<std::string> fields;  // the fields complained about; empty: valid
};

class TrainerSpecRows : public ::testing::TestWithParam<Row> {};

TEST_P(TrainerSpecRows, ComplainsAboutExactlyTheseFields) {
  const Row& row = GetParam();
  std::vector<FieldError> errors = validateTrainer(decodeSpec(row.spec), "spec.trainer");
  EXPECT_EQ(fields(errors), row.fields) << describe(errors);
  for (const FieldError& e : errors) EXPECT_FALSE(e.message.empty()) << e.field;
}

INSTANTIATE_TEST_SUITE_P(
    Bounds, TrainerSpecRows,
    ::testing::Values(
        Row{"epochs at its bounds", {{"epochs", 1}}, {}},
        Row{"epochs 0", {{"epochs", 0}}, {"spec.trainer.epochs"}},
        Row{"epochs past the bound", {{"epochs", 100001}}, {"spec.trainer.epochs"}},
        Row{"batch 65536", {{"batchSize", 65536}}, {}},
        Row{"batch 0", {{"batchSize", 0}}, {"spec.trainer.batchSize"}},
        Row{"a global batch", {{"globalBatchSize", 1 << 24}}, {}},
        Row{"a global batch of 0", {{"globalBatchSize", 0}}, {"spec.trainer.globalBatchSize"}},
        Row{"a global batch past the bound",
            {{"globalBatchSize", (1 << 24) + 1}},
            {"spec.trainer.globalBatchSize"}},
        Row{"a global batch and a rank's batch",
            {{"globalBatchSize", 256}, {"batchSize", 64}},
            {"spec.trainer"}},
        Row{"a global batch of a pipeline",
            {{"globalBatchSize", 256}, {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {"spec.trainer"}},
        Row{"model type", {{"model", {{"type", "rnn"}}}}, {"spec.trainer.model.type"}},
        Row{"a hidden width of 0",
            {{"model", {{"hidden", {512, 0}}}}},
            {"spec.trainer.model.hidden[1]"}},
        Row{"one conv channel",
            {{"model", {{"type", "cnn"}, {"channels", {16}}}}},
            {"spec.trainer.model.channels"}},
        Row{"a model past 1B parameters",
            {{"model", {{"hidden", {65536, 65536}}}}},
            {"spec.trainer.model"}},
        Row{"the GPU benchmark's largest MLP, 140.7M parameters",
            {{"model", {{"hidden", {8192, 8192, 8192}}}}},
            {}},
        Row{"a dataset the trainer lacks",
            {{"dataset", {{"name", "cifar10"}}}},
            {"spec.trainer.dataset.name"}},
        Row{"an empty dataset path", {{"dataset", {{"path", ""}}}}, {"spec.trainer.dataset.path"}},
        Row{"learning rate 0",
            {{"optimizer", {{"learningRate", 0}}}},
            {"spec.trainer.optimizer.learningRate"}},
        Row{"momentum 1", {{"optimizer", {{"momentum", 1}}}}, {"spec.trainer.optimizer.momentum"}},
        Row{"momentum 0", {{"optimizer", {{"momentum", 0}}}}, {}},
        Row{"beta1 1", {{"optimizer", {{"beta1", 1}}}}, {"spec.trainer.optimizer.beta1"}},
        Row{"beta2 0.999", {{"optimizer", {{"beta2", 0.999}}}}, {}},
        Row{"epsilon 0", {{"optimizer", {{"epsilon", 0}}}}, {"spec.trainer.optimizer.epsilon"}},
        Row{"a negative weight decay",
            {{"optimizer", {{"weightDecay", -0.1}}}},
            {"spec.trainer.optimizer.weightDecay"}},
        Row{"schedule",
            {{"optimizer", {{"schedule", "step"}}}},
            {"spec.trainer.optimizer.schedule"}},
        Row{"bucket cap 0", {{"bucketCapMB", 0}}, {"spec.trainer.bucketCapMB"}},
        Row{"bucket cap 4096", {{"bucketCapMB", 4096}}, {}},
        Row{"first bucket cap 0", {{"firstBucketCapMB", 0}}, {"spec.trainer.firstBucketCapMB"}},
        Row{"checkpoint keep 0", {{"checkpoint", {{"keep", 0}}}}, {"spec.trainer.checkpoint.keep"}},
        Row{"a checkpoint path that climbs out",
            {{"checkpoint", {{"path", "ckpt/../../etc"}}}},
            {"spec.trainer.checkpoint.path"}},
        Row{"metrics port 0", {{"metricsPort", 0}}, {"spec.trainer.metricsPort"}},
        Row{"metrics port 65535", {{"metricsPort", 65535}}, {}},
        Row{"metrics port on the rendezvous port",
            {{"metricsPort", 29500}},
            {"spec.trainer.metricsPort"}},
        Row{"metrics port on the health port",
            {{"metricsPort", 8080}},
            {"spec.trainer.metricsPort"}},
        Row{"blas threads 0", {{"blasThreads", 0}}, {"spec.trainer.blasThreads"}},
        Row{"comm timeout 0", {{"commTimeoutSeconds", 0}}, {"spec.trainer.commTimeoutSeconds"}},
        Row{"device", {{"device", "tpu"}}, {"spec.trainer.device"}},
        Row{"bf16 on the CPU",
            {{"device", "cpu"}, {"precision", "bf16"}},
            {"spec.trainer.precision"}},
        Row{"two stages, four micro-batches",
            {{"parallelism", {{"pipeline", {{"stages", 2}, {"microBatches", 4}}}}}},
            {}},
        Row{"a stage per layer of the default MLP",
            {{"parallelism", {{"pipeline", {{"stages", 3}, {"microBatches", 8}}}}}},
            {}},
        Row{"more stages than layers",
            {{"parallelism", {{"pipeline", {{"stages", 4}, {"microBatches", 4}}}}}},
            {"spec.trainer.parallelism.pipeline"}},
        Row{"stages 0",
            {{"parallelism", {{"pipeline", {{"stages", 0}}}}}},
            {"spec.trainer.parallelism.pipeline.stages"}},
        Row{"micro-batches that do not divide the batch",
            {{"batchSize", 100},
             {"parallelism", {{"pipeline", {{"stages", 2}, {"microBatches", 8}}}}}},
            {"spec.trainer.parallelism.pipeline"}},
        Row{"a default micro-batch count that does not divide the batch",
            {{"batchSize", 100}, {"parallelism", {{"pipeline", {{"stages", 3}}}}}},
            {"spec.trainer.parallelism.pipeline"}},
        Row{"pipeline schedule",
            {{"parallelism", {{"pipeline", {{"schedule", "zero-bubble"}}}}}},
            {"spec.trainer.parallelism.pipeline.schedule"}},
        Row{"a partition of the wrong length",
            {{"parallelism", {{"pipeline", {{"stages", 2}, {"partition", {0}}}}}}},
            {"spec.trainer.parallelism.pipeline.partition"}},
        Row{"a partition not starting at 0",
            {{"parallelism", {{"pipeline", {{"stages", 2}, {"partition", {1, 2}}}}}}},
            {"spec.trainer.parallelism.pipeline.partition[0]"}},
        Row{"a partition past the last layer",
            {{"parallelism", {{"pipeline", {{"stages", 2}, {"partition", {0, 3}}}}}}},
            {"spec.trainer.parallelism.pipeline.partition[1]"}},
        Row{"a cnn in four stages",
            {{"model", {{"type", "cnn"}, {"cnnHidden", 64}}},
             {"parallelism", {{"pipeline", {{"stages", 4}}}}}},
            {}},
        Row{"pipeline stages of an MLP on the GPU",
            {{"device", "cuda"}, {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {}},
        Row{"a cnn's pipeline stages on the GPU",
            {{"device", "cuda"},
             {"model", {{"type", "cnn"}}},
             {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {"spec.trainer.device"}},
        Row{"pipedream stages on the GPU",
            {{"device", "cuda"},
             {"parallelism", {{"pipeline", {{"stages", 2}, {"schedule", "pipedream"}}}}}},
            {"spec.trainer.parallelism.pipeline.schedule"}},
        Row{"bf16 pipeline stages on the GPU",
            {{"device", "cuda"},
             {"precision", "bf16"},
             {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {"spec.trainer.precision"}},
        Row{"two tensor ranks", {{"parallelism", {{"tensor", 2}}}}, {}},
        Row{"tensor 0", {{"parallelism", {{"tensor", 0}}}}, {"spec.trainer.parallelism.tensor"}},
        Row{"tensor ranks that do not divide the split width",
            {{"model", {{"hidden", {512, 100, 30}}}}, {"parallelism", {{"tensor", 3}}}},
            {"spec.trainer.parallelism.tensor"}},
        Row{"tensor ranks that divide the split widths only",
            {{"model", {{"hidden", {96, 100, 30}}}}, {"parallelism", {{"tensor", 3}}}},
            {}},
        Row{"tensor parallelism on a cnn",
            {{"model", {{"type", "cnn"}}}, {"parallelism", {{"tensor", 2}}}},
            {"spec.trainer.parallelism.tensor"}},
        Row{"an odd stage start with tensor parallelism",
            {{"model", {{"hidden", {64, 64, 64}}}},
             {"parallelism",
              {{"tensor", 2}, {"pipeline", {{"stages", 2}, {"partition", {0, 1}}}}}}},
            {"spec.trainer.parallelism.pipeline.partition[1]"}},
        Row{"more stages than layer pairs",
            {{"parallelism", {{"tensor", 2}, {"pipeline", {{"stages", 3}, {"microBatches", 8}}}}}},
            {"spec.trainer.parallelism.pipeline"}},
        Row{"tensor ranks on the GPU",
            {{"device", "cuda"}, {"parallelism", {{"tensor", 2}}}},
            {"spec.trainer.device"}},
        Row{"an unknown key in parallelism",
            {{"parallelism", {{"tensors", 2}}}},
            {"spec.trainer.parallelism.tensors"}},
        Row{"autotune with the defaults", {{"autotune", nlohmann::json::object()}}, {}},
        Row{"autotune over a space holding the run's caps",
            {{"bucketCapMB", 8},
             {"autotune", {{"bucketCapMB", {2, 8, 32}}, {"firstBucketCapMB", {0.5, 1}}}}},
            {}},
        Row{"autotune with 0 samples",
            {{"autotune", {{"maxSamples", 0}}}},
            {"spec.trainer.autotune.maxSamples"}},
        Row{"autotune measuring no step",
            {{"autotune", {{"measureSteps", 0}}}},
            {"spec.trainer.autotune.measureSteps"}},
        Row{"an autotune space without the run's bucketCapMB",
            {{"autotune", {{"bucketCapMB", {2, 8, 32}}}}},
            {"spec.trainer.autotune.bucketCapMB"}},
        Row{"an autotune space without the run's firstBucketCapMB",
            {{"firstBucketCapMB", 2}, {"autotune", {{"firstBucketCapMB", {0.5, 1}}}}},
            {"spec.trainer.autotune.firstBucketCapMB"}},
        Row{"an autotune space with a cap of 0",
            {{"autotune", {{"bucketCapMB", {0, 25}}}}},
            {"spec.trainer.autotune.bucketCapMB"}},
        Row{"autotune of a pipeline",
            {{"autotune", nlohmann::json::object()},
             {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {}},
        Row{"autotune of a pipeline over a space holding its microBatches",
            {{"autotune", {{"microBatches", {2, 4, 8, 16}}}},
             {"parallelism", {{"pipeline", {{"stages", 2}, {"microBatches", 4}}}}}},
            {}},
        Row{"an autotune space without the pipeline's microBatches (one per stage unset)",
            {{"autotune", {{"microBatches", {4, 8}}}},
             {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {"spec.trainer.autotune.microBatches"}},
        Row{"an autotune micro-batch count that does not divide batchSize",
            {{"autotune", {{"microBatches", {2, 3}}}},
             {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {"spec.trainer.autotune.microBatches"}},
        Row{"autotune micro-batches without a pipeline",
            {{"autotune", {{"microBatches", {1, 2}}}}},
            {"spec.trainer.autotune.microBatches"}},
        Row{"autotune bucket caps of a pipeline",
            {{"autotune", {{"bucketCapMB", {25, 50}}}},
             {"parallelism", {{"pipeline", {{"stages", 2}}}}}},
            {"spec.trainer.autotune.bucketCapMB"}},
        Row{"autotune of a pipedream pipeline",
            {{"autotune", nlohmann::json::object()},
             {"parallelism", {{"pipeline", {{"stages", 2}, {"schedule", "pipedream"}}}}}},
            {"spec.trainer.autotune"}},
        Row{"autotune over BLAS threads holding the run's",
            {{"blasThreads", 2}, {"autotune", {{"blasThreads", {1, 2, 4}}}}},
            {}},
        Row{"an autotune space without the run's blasThreads (unset: 1)",
            {{"autotune", {{"blasThreads", {2, 4}}}}},
            {"spec.trainer.autotune.blasThreads"}},
        Row{"autotune over tcp's doubling threshold",
            {{"autotune", {{"tcpDoublingMaxKB", {8, 64}}}}},
            {}},
        Row{"a tcp doubling threshold of 0",
            {{"autotune", {{"tcpDoublingMaxKB", {0, 64}}}}},
            {"spec.trainer.autotune.tcpDoublingMaxKB"}},
        Row{"autotune of 0 BLAS threads",
            {{"autotune", {{"blasThreads", {0, 1}}}}},
            {"spec.trainer.autotune.blasThreads"}},
        Row{"autotune of tensor parallelism",
            {{"autotune", nlohmann::json::object()}, {"parallelism", {{"tensor", 2}}}},
            {"spec.trainer.autotune"}},
        Row{"autotune of parameter servers",
            {{"autotune", nlohmann::json::object()},
             {"parallelism", {{"parameterServer", {{"servers", 1}}}}}},
            {"spec.trainer.autotune"}},
        Row{"autotune on the GPU",
            {{"autotune", nlohmann::json::object()}, {"device", "cuda"}},
            {"spec.trainer.autotune"}},
        Row{"an unknown autotune key",
            {{"autotune", {{"samples", 3}}}},
            {"spec.trainer.autotune.samples"}},
        Row{"a pbt member", {{"pbt", pbtMember()}}, {}},
        Row{"a pbt member without a directory",
            {{"pbt", pbtMember({{"directory", nullptr}})}},
            {"spec.trainer.pbt.directory"}},
        Row{"a pbt directory that is relative",
            {{"pbt", pbtMember({{"directory", "pbt"}})}},
            {"spec.trainer.pbt.directory"}},
        Row{"a pbt member not in its population",
            {{"pbt", pbtMember({{"member", "c"}})}},
            {"spec.trainer.pbt.member"}},
        Row{"a pbt population of one",
            {{"pbt", pbtMember({{"population", {"a"}}, {"member", "a"}})}},
            {"spec.trainer.pbt.population"}},
        Row{"a pbt member named twice",
            {{"pbt", pbtMember({{"population", {"a", "b", "b"}}})}},
            {"spec.trainer.pbt.population"}},
        Row{"pbt exploring the model's widths",
            {{"pbt", pbtMember({{"parameters",
                                 {{{"path", "model.hidden"}, {"choices", {{128}, {256}}}}}}})}},
            {"spec.trainer.pbt.parameters[0].path"}},
        Row{"pbt exploring nothing",
            {{"pbt", pbtMember({{"parameters", nlohmann::json::array()}})}},
            {"spec.trainer.pbt.parameters"}},
        Row{"a pbt range through 0 on a log scale",
            {{"pbt", pbtMember({{"parameters",
                                 {{{"path", "optimizer.learningRate"},
                                   {"min", 0},
                                   {"max", 0.5},
                                   {"scale", "log"}}}}})}},
            {"spec.trainer.pbt.parameters[0].min"}},
        Row{"a pbt quantile past a half",
            {{"pbt", pbtMember({{"quantile", 0.6}})}},
            {"spec.trainer.pbt.quantile"}},
        Row{"a pbt wait of 0",
            {{"pbt", pbtMember({{"waitSeconds", 0}})}},
            {"spec.trainer.pbt.waitSeconds"}},
        Row{"pbt over one epoch", {{"pbt", pbtMember()}, {"epochs", 1}}, {"spec.trainer.pbt"}},
        Row{"pbt on the GPU", {{"pbt", pbtMember()}, {"device", "cuda"}}, {"spec.trainer.pbt"}},
        Row{"an unknown key", {{"learningRate", 0.1}}, {"spec.trainer.learningRate"}},
        Row{"an unknown key below", {{"optimizer", {{"lr", 0.1}}}}, {"spec.trainer.optimizer.lr"}}),
    [](const auto& info) {
      std::string name;
      for (char c : std::string(info.param.what)) name += std::isalnum(c) ? c : '_';
      return name;
    });

TEST(TrainerSpec, ModelParametersCountTheLayersWithTheDefaultsFilledIn) {
  // 784-512-512-10.
  EXPECT_EQ(modelParameters({}), 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  kube::ModelSpec cnn;
  cnn.type = "cnn";
  // conv 1->16 and 16->32 (5x5), then 7*7*32 -> 10.
  EXPECT_EQ(modelParameters(cnn), (25 * 16 + 16) + (25 * 16 * 32 + 32) + (7 * 7 * 32 * 10 + 10));
}

TEST(TrainerSpec, PipelineDefaultsToOneStageAndOneMicroBatchPerStage) {
  const TrainerSettings none = trainerSettings({});
  EXPECT_EQ(none.pipeline.stages, 1);
  EXPECT_EQ(none.pipeline.micro_batches, 1);
  const TrainerSettings two = trainerSettings(
      decodeSpec({{"parallelism", {{"pipeline", {{"stages", 2}, {"partition", {0, 2}}}}}}}));
  EXPECT_EQ(two.pipeline.stages, 2);
  EXPECT_EQ(two.pipeline.micro_batches, 2);
  EXPECT_EQ(two.pipeline.schedule, PipelineSchedule::kOneFOneB);
  EXPECT_EQ(two.pipeline.partition, (std::vector<int32_t>{0, 2}));
}

TEST(TrainerSpec, ModelLayersAreWhatStagesSplit) {
  EXPECT_EQ(modelLayers({}), 3);  // 784-512-512-10
  kube::ModelSpec cnn;
  cnn.type = "cnn";
  EXPECT_EQ(modelLayers(cnn), 3);
  cnn.cnn_hidden = 64;
  EXPECT_EQ(modelLayers(cnn), 4);
}

TEST(TrainerSpec, EnumNamesAreTheSpecsSpelling) {
  EXPECT_STREQ(name(PipelineSchedule::kGPipe), "gpipe");
  EXPECT_STREQ(name(PipelineSchedule::kPipeDream), "pipedream");
  EXPECT_STREQ(name(ModelType::kCnn), "cnn");
  EXPECT_STREQ(name(OptimizerType::kAdam), "adam");
  EXPECT_STREQ(name(LrSchedule::kCosine), "cosine");
  EXPECT_STREQ(name(Device::kCuda), "cuda");
  EXPECT_STREQ(name(Precision::kBf16), "bf16");
}

}  // namespace
}  // namespace ringmaster::contract
