#include "ringmaster/contract/trainer_spec.h"

#include <algorithm>
#include <sstream>
#include <tuple>

#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/spelling.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::contract {
namespace {

// The defaults of spec.trainer, one place for all of them.
constexpr const char* kDefaultDataset = "fashion-mnist";
constexpr const char* kDefaultDatasetPath = "/usr/share/datasets/fashion-mnist";
const std::vector<int32_t> kDefaultHidden = {512, 512};
const std::vector<int32_t> kDefaultChannels = {16, 32};
constexpr int64_t kDefaultEpochs = 5;
constexpr int64_t kDefaultBatchSize = 128;
constexpr double kDefaultLearningRate = 0.1;
constexpr double kDefaultMomentum = 0.9;
constexpr double kDefaultBeta1 = 0.9, kDefaultBeta2 = 0.999, kDefaultEpsilon = 1e-8;
constexpr double kDefaultBucketCapMB = 25.0;
// DDP's small first bucket: its allreduce starts while most of backward remains.
constexpr double kDefaultFirstBucketCapMB = 1.0;
// Autotune's budget: 20 samples of 3 + 10 steps is about one epoch of the README's job on two
// ranks, where the search's cost is a few percent of a five-epoch run.
constexpr int32_t kDefaultAutotuneSamples = 20;
constexpr int32_t kDefaultAutotuneWarmupSteps = 3;
constexpr int32_t kDefaultAutotuneMeasureSteps = 10;
constexpr int64_t kDefaultCheckpointEverySteps = 500;
constexpr int64_t kDefaultCheckpointKeep = 3;
constexpr uint64_t kDefaultSeed = 42;
constexpr int64_t kDefaultCommTimeoutSeconds = 300;
// Ray Tune's PBT: the bottom and top quarters, a fresh draw a quarter of the time.
constexpr double kDefaultPbtQuantile = 0.25;
constexpr double kDefaultPbtResampleProbability = 0.25;
// How long a member waits for the others after an epoch: members train the same steps, so they
// arrive together unless one restarted.
constexpr int32_t kDefaultPbtWaitSeconds = 300;

constexpr ModelType kModelTypes[] = {ModelType::kMlp, ModelType::kCnn};
constexpr OptimizerType kOptimizerTypes[] = {OptimizerType::kSgd, OptimizerType::kAdam};
constexpr LrSchedule kSchedules[] = {LrSchedule::kConstant, LrSchedule::kCosine};
constexpr Device kDevices[] = {Device::kAuto, Device::kCpu, Device::kCuda};
constexpr Precision kPrecisions[] = {Precision::kFp32, Precision::kBf16};
constexpr PipelineSchedule kPipelineSchedules[] = {
    PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kPipeDream};
// More stages (or tensor ranks) than this would leave most ranks idle on any model the trainer
// builds.
constexpr int32_t kMaxPipelineStages = 64;
// The most samples one step may spread over all ranks (16 Mi, past any data set's size).
constexpr int32_t kMaxGlobalBatchSize = 1 << 24;
constexpr int32_t kMaxTensorRanks = 64;
constexpr PsConsistency kPsConsistencies[] = {PsConsistency::kSync, PsConsistency::kAsync,
                                              PsConsistency::kBounded};
// SSP's usual bound: loose enough to ride out a straggler, tight enough to stay near sync.
constexpr int32_t kDefaultStaleness = 4;
// Servers beyond this would each hold a sliver of any model the trainer builds.
constexpr int32_t kMaxParameterServers = 64;
constexpr int32_t kMaxStaleness = 1 << 20;

// fp32 weights, gradients and optimizer moments: about 16 bytes a parameter on every rank.
std::string gigabytes(int64_t parameters) {
  const int64_t tenths = parameters * 16 / 100'000'000;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GB";
}

void validateParameterServer(const kube::TrainerSpec& t, const std::string& p, FieldErrors& e) {
  const kube::ParameterServerSpec& ps = *t.parallelism->parameter_server;
  e.unknownFields(p, ps.extra);
  e.inRange(p + ".servers", ps.servers, 1, kMaxParameterServers);
  if (!ps.servers) e.add(p + ".servers", "required: how many of the ranks serve parameters");
  e.oneOf(p + ".consistency", ps.consistency, spellings(kPsConsistencies));
  e.inRange(p + ".staleness", ps.staleness, 0, kMaxStaleness);
  // Cross-field problems name the parameter servers: each field alone is within its bounds.
  if (ps.staleness && ps.consistency.value_or("sync") != "bounded") {
    e.add(p, "staleness applies to consistency bounded only");
  }
  // What the parameter servers' workers run (trainer/ps): the CPU, data parallel.
  if (t.device == "cuda") {
    e.add(p, "parameter servers and their workers train on the CPU; use device cpu or auto");
  }
  if ((t.parallelism->pipeline && t.parallelism->pipeline->stages.value_or(1) > 1) ||
      t.parallelism->tensor.value_or(1) > 1) {
    e.add(p, "parameter servers take a data-parallel model, not pipeline or tensor parallelism");
  }
  if (t.global_batch_size) {
    e.add(p, "each worker trains batchSize samples a step against the servers; set batchSize");
  }
  if (t.tcp_doubling_max_kb) {
    e.add(p,
          "workers and servers move parameters over connections of their own, with no "
          "allreduce to take tcpDoublingMaxKB; leave it unset");
  }
}

void validateModel(const kube::ModelSpec& m, const std::string& p, FieldErrors& e) {
  e.unknownFields(p, m.extra);
  e.oneOf(p + ".type", m.type, spellings(kModelTypes));
  for (size_t i = 0; i < m.hidden.size(); ++i) {
    e.inRange(p + ".hidden[" + std::to_string(i) + "]", std::optional<int32_t>(m.hidden[i]), 1,
              65536);
  }
  if (!m.channels.empty() && m.channels.size() != 2) {
    e.add(p + ".channels", "the cnn has exactly two conv layers: give two channel counts, got " +
                               std::to_string(m.channels.size()));
  }
  for (size_t i = 0; i < m.channels.size(); ++i) {
    e.inRange(p + ".channels[" + std::to_string(i) + "]", std::optional<int32_t>(m.channels[i]), 1,
              1024);
  }
  e.inRange(p + ".cnnHidden", m.cnn_hidden, 0, 65536);
  if (const int64_t n = modelParameters(m); n > kMaxModelParameters) {
    const std::string field = m.type.value_or("mlp") == "cnn" ? "channels, cnnHidden" : "hidden";
    e.add(p, "the model has " + std::to_string(n) + " parameters (~" + gigabytes(n) +
                 " per rank for weights, gradients and optimizer state), more than the " +
                 std::to_string(kMaxModelParameters) + " allowed; make " + field + " smaller");
  }
}

void validateOptimizer(const kube::OptimizerSpec& o, const std::string& p, FieldErrors& e) {
  e.unknownFields(p, o.extra);
  e.oneOf(p + ".type", o.type, spellings(kOptimizerTypes));
  e.oneOf(p + ".schedule", o.schedule, spellings(kSchedules));
  e.above(p + ".learningRate", o.learning_rate, 0);
  e.inInterval(p + ".momentum", o.momentum, 0, false, 1, true);
  e.atLeast(p + ".weightDecay", o.weight_decay, 0.0);
  e.inInterval(p + ".beta1", o.beta1, 0, false, 1, true);
  e.inInterval(p + ".beta2", o.beta2, 0, false, 1, true);
  e.above(p + ".epsilon", o.epsilon, 0);
}

// Tensor parallelism splits the MLP's layer pairs: the first layer of each pair is cut by its
// output width, which the tensor ranks must divide.
void validateTensor(const kube::TrainerSpec& t, const std::string& p, FieldErrors& e) {
  e.inRange(p, t.parallelism->tensor, 1, kMaxTensorRanks);
  const int32_t tensor = *t.parallelism->tensor;
  if (tensor <= 1) return;
  const kube::ModelSpec model = t.model.value_or(kube::ModelSpec{});
  if (model.type.value_or("mlp") != "mlp") {
    e.add(p, invalidValue(std::to_string(tensor),
                          "splits an mlp's dense layers; the cnn's conv layers cannot be split"));
    return;
  }
  const auto& hidden = model.hidden.empty() ? kDefaultHidden : model.hidden;
  const size_t layers = hidden.size() + 1;
  for (size_t i = 0; i + 1 < layers; i += 2) {
    if (hidden[i] >= 1 && hidden[i] % tensor != 0) {
      e.add(p, invalidValue(std::to_string(tensor),
                            "must divide model.hidden[" + std::to_string(i) + "] (" +
                                std::to_string(hidden[i]) + "), the width it splits"));
    }
  }
}

void validatePipeline(const kube::TrainerSpec& t, const std::string& p, FieldErrors& e) {
  const kube::PipelineSpec& pipe = *t.parallelism->pipeline;
  e.unknownFields(p, pipe.extra);
  e.inRange(p + ".stages", pipe.stages, 1, kMaxPipelineStages);
  e.oneOf(p + ".schedule", pipe.schedule, spellings(kPipelineSchedules));
  const int32_t stages = std::clamp(pipe.stages.value_or(1), 1, kMaxPipelineStages);
  const int32_t layers = modelLayers(t.model.value_or(kube::ModelSpec{}));
  const bool split = t.parallelism->tensor.value_or(1) > 1;
  // With tensor parallelism a stage starts at an even layer (a layer pair stays together).
  const int32_t units = split ? (layers + 1) / 2 : layers;
  // Cross-field problems name the pipeline itself: the field alone is within its bounds.
  if (stages > units) {
    e.add(p, "stages " + std::to_string(stages) + " is more than the model's " +
                 std::to_string(layers) + " layers allow (every stage needs at least one" +
                 (split ? " pair of layers, with tensor parallelism)" : ")"));
  }
  const int64_t batch = t.batch_size.value_or(kDefaultBatchSize);
  e.inRange(p + ".microBatches", pipe.micro_batches, 1, 65536);
  const int32_t micro = pipe.micro_batches.value_or(stages);
  if (micro >= 1 && batch % micro != 0) {
    e.add(p, "microBatches " + std::to_string(micro) +
                 (pipe.micro_batches ? "" : " (unset: one per stage)") +
                 " does not divide batchSize " + std::to_string(batch));
  }
  if (!pipe.partition.empty()) {
    if (static_cast<int32_t>(pipe.partition.size()) != stages) {
      e.add(p + ".partition", "gives " + std::to_string(pipe.partition.size()) +
                                  " stage starts for " + std::to_string(stages) + " stages");
    } else if (pipe.partition[0] != 0) {
      e.add(p + ".partition[0]",
            invalidValue(std::to_string(pipe.partition[0]), "the first stage starts at layer 0"));
    }
    for (size_t i = 1; i < pipe.partition.size(); ++i) {
      const int32_t start = pipe.partition[i];
      if (start <= pipe.partition[i - 1] || start >= layers) {
        e.add(p + ".partition[" + std::to_string(i) + "]",
              invalidValue(std::to_string(start),
                           "must be above " + std::to_string(pipe.partition[i - 1]) +
                               " and below " + std::to_string(layers) + " (the model's layers)"));
      } else if (split && start % 2 != 0) {
        e.add(p + ".partition[" + std::to_string(i) + "]",
              invalidValue(std::to_string(start),
                           "must be even with tensor parallelism (layers 2k and 2k+1 are split "
                           "as a pair and stay in one stage)"));
      }
    }
  }
}

}  // namespace

const char* name(ModelType value) { return value == ModelType::kCnn ? "cnn" : "mlp"; }
const char* name(OptimizerType value) { return value == OptimizerType::kAdam ? "adam" : "sgd"; }
const char* name(LrSchedule value) { return value == LrSchedule::kCosine ? "cosine" : "constant"; }
const char* name(Device value) {
  switch (value) {
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
    case Device::kAuto:
      break;
  }
  return "auto";
}
const char* name(Precision value) { return value == Precision::kBf16 ? "bf16" : "fp32"; }
const char* name(PsConsistency value) {
  switch (value) {
    case PsConsistency::kAsync:
      return "async";
    case PsConsistency::kBounded:
      return "bounded";
    case PsConsistency::kSync:
      break;
  }
  return "sync";
}
const char* name(PipelineSchedule value) {
  switch (value) {
    case PipelineSchedule::kGPipe:
      return "gpipe";
    case PipelineSchedule::kPipeDream:
      return "pipedream";
    case PipelineSchedule::kOneFOneB:
      break;
  }
  return "1f1b";
}

int32_t modelLayers(const kube::ModelSpec& model) {
  if (model.type.value_or("mlp") == "cnn") return model.cnn_hidden.value_or(0) > 0 ? 4 : 3;
  const auto& hidden = model.hidden.empty() ? kDefaultHidden : model.hidden;
  return static_cast<int32_t>(hidden.size()) + 1;
}

int64_t modelParameters(const kube::ModelSpec& model) {
  constexpr int64_t kInputs = 28 * 28, kClasses = 10;  // Fashion-MNIST
  auto dense = [](int64_t in, int64_t out) { return in * out + out; };
  // Widths are clamped as validateTrainer bounds them (an out-of-range one is its own error), so
  // that nothing here overflows.
  if (model.type.value_or("mlp") == "cnn") {
    // Two conv(5x5) blocks, each halving the 28x28 image.
    const auto& channels = model.channels.size() == 2 ? model.channels : kDefaultChannels;
    const int64_t c1 = std::clamp(channels[0], 1, 1024);
    const int64_t c2 = std::clamp(channels[1], 1, 1024);
    int64_t n = (25 * c1 + c1) + (25 * c1 * c2 + c2);
    const int64_t flat = 7 * 7 * c2;
    const int64_t fc = std::clamp(model.cnn_hidden.value_or(0), 0, 65536);
    n += fc > 0 ? dense(flat, fc) + dense(fc, kClasses) : dense(flat, kClasses);
    return n;
  }
  const auto& hidden = model.hidden.empty() ? kDefaultHidden : model.hidden;
  int64_t n = 0, in = kInputs;
  for (int32_t width : hidden) {
    const int64_t w = std::clamp(width, 1, 65536);
    n += dense(in, w);
    in = w;
  }
  return n + dense(in, kClasses);
}

namespace {

// spec.trainer.autotune: a budget the search can spend, a space holding the run's own setting
// (where the search starts), and what it can tune today: on the CPU, data parallelism's gradient
// bucket caps, or a flushed pipeline's micro-batch count, and either's BLAS threads.
void validateAutotune(const kube::TrainerSpec& t, const std::string& p, FieldErrors& e) {
  const kube::AutotuneSpec& a = *t.autotune;
  e.unknownFields(p, a.extra);
  e.inRange(p + ".maxSamples", a.max_samples, 1, 100);
  e.inRange(p + ".warmupSteps", a.warmup_steps, 0, 1000);
  e.inRange(p + ".measureSteps", a.measure_steps, 1, 10000);
  const double cap = t.bucket_cap_mb.value_or(kDefaultBucketCapMB);
  const double first = t.first_bucket_cap_mb.value_or(kDefaultFirstBucketCapMB);
  for (auto [field, space, given, top] :
       {std::tuple{".bucketCapMB", &a.bucket_cap_mb, cap, "bucketCapMB"},
        std::tuple{".firstBucketCapMB", &a.first_bucket_cap_mb, first, "firstBucketCapMB"}}) {
    if (space->empty()) continue;
    for (double v : *space) {
      if (!(v > 0 && v <= 4096)) {
        e.add(p + field, "values must be in (0, 4096] MiB, got " + std::to_string(v));
        break;
      }
    }
    if (std::find(space->begin(), space->end(), given) == space->end()) {
      std::ostringstream text;
      text << "must hold the run's " << top << " (" << given
           << "), where the search starts and which it must be able to keep";
      e.add(p + field, text.str());
    }
  }
  const kube::ParallelismSpec parallelism = t.parallelism.value_or(kube::ParallelismSpec{});
  const std::optional<kube::PipelineSpec>& pipe = parallelism.pipeline;
  const bool pipeline = pipe && pipe->stages.value_or(1) > 1;
  if (parallelism.tensor.value_or(1) > 1 || parallelism.parameter_server) {
    e.add(p,
          "tunes data parallelism's gradient bucket caps and a pipeline's micro-batches; tensor "
          "parallelism's and parameter servers' knobs are not tuned yet");
  } else if (pipeline) {
    if (pipe->schedule == "pipedream") {
      e.add(p,
            "a pipedream pipeline updates after every micro-batch, so its micro-batch count "
            "changes what it trains and is not tuned; gpipe and 1f1b are");
    }
    if (!a.bucket_cap_mb.empty() || !a.first_bucket_cap_mb.empty()) {
      e.add(p + (a.bucket_cap_mb.empty() ? ".firstBucketCapMB" : ".bucketCapMB"),
            "a pipeline sums each stage's gradients in one allreduce, without buckets: tune "
            "its microBatches");
    }
    const int64_t batch = t.batch_size.value_or(kDefaultBatchSize);
    const int32_t given = pipe->micro_batches.value_or(pipe->stages.value_or(1));
    for (int32_t m : a.micro_batches) {
      if (m < 1 || batch % m != 0) {
        e.add(p + ".microBatches", "values must divide batchSize " + std::to_string(batch) +
                                       ", got " + std::to_string(m));
        break;
      }
    }
    if (!a.micro_batches.empty() &&
        std::find(a.micro_batches.begin(), a.micro_batches.end(), given) == a.micro_batches.end()) {
      e.add(p + ".microBatches", "must hold the run's microBatches (" + std::to_string(given) +
                                     "), where the search starts and which it must be able "
                                     "to keep");
    }
  } else if (!a.micro_batches.empty()) {
    e.add(p + ".microBatches",
          "tunes a pipeline's micro-batches; this run has no pipeline "
          "(parallelism.pipeline.stages above 1)");
  }
  for (double kib : a.tcp_doubling_max_kb) {
    if (!(kib > 0 && kib <= 1 << 20)) {
      e.add(p + ".tcpDoublingMaxKB",
            "values must be in (0, 1048576] KiB, got " + std::to_string(kib));
      break;
    }
  }
  if (!a.blas_threads.empty()) {
    const int32_t given = t.blas_threads.value_or(1);
    for (int32_t n : a.blas_threads) {
      if (n < 1 || n > 256) {
        e.add(p + ".blasThreads", "values must be in [1, 256], got " + std::to_string(n));
        break;
      }
    }
    if (std::find(a.blas_threads.begin(), a.blas_threads.end(), given) == a.blas_threads.end()) {
      e.add(p + ".blasThreads", "must hold the run's blasThreads (" + std::to_string(given) +
                                    "), where the search starts and which it must be able to "
                                    "keep");
    }
  }
  if (t.device == "cuda") {
    e.add(p, "tunes training on the CPU; the GPU engine's knobs are not tuned yet");
  }
}

}  // namespace

std::string envParameterText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

namespace {

// spec.trainer.pbt: a population this run belongs to, a space of optimizer fields an exploit
// can swap in place, and what it can do today: one rank of data-parallel training on the CPU.
// With `intervals`, the member is a program of the user's own that the launcher runs once per
// interval: its space is environment variables (env.NAME), and the trainer's limits are not its.
void validatePbt(const kube::TrainerSpec& t, const std::string& p, FieldErrors& e) {
  const kube::PbtSpec& pbt = *t.pbt;
  const bool own_program = pbt.intervals.has_value();
  e.atLeast(p + ".intervals", pbt.intervals, 2);
  e.unknownFields(p, pbt.extra);
  if (!pbt.directory || pbt.directory->empty() || pbt.directory->front() != '/') {
    e.add(p + ".directory",
          "required: an absolute path on a volume every member mounts, where they meet");
  } else if (kube::hasBackstep(*pbt.directory)) {
    e.add(p + ".directory", invalidValue(*pbt.directory, "must not contain '..'"));
  }
  if (pbt.population.size() < 2) {
    e.add(p + ".population", "must name at least 2 members, this one among them");
  }
  std::vector<std::string> seen;
  for (const std::string& m : pbt.population) {
    if (m.empty() || m.find('/') != std::string::npos || m == "." || m == "..") {
      e.add(p + ".population", invalidValue(m, "a member's name is a file name in the directory"));
    } else if (std::find(seen.begin(), seen.end(), m) != seen.end()) {
      e.add(p + ".population", invalidValue(m, "is named twice"));
    }
    seen.push_back(m);
  }
  if (!pbt.member) {
    e.add(p + ".member", "required: this run's name in the population");
  } else if (std::find(pbt.population.begin(), pbt.population.end(), *pbt.member) ==
             pbt.population.end()) {
    e.add(p + ".member", invalidValue(*pbt.member, "is not in the population"));
  }
  for (FieldError& err : search::spaceOf(pbt.parameters, p + ".parameters", false, nullptr)) {
    e.add(std::move(err.field), std::move(err.message));
  }
  for (size_t i = 0; i < pbt.parameters.size(); ++i) {
    const std::string path = pbt.parameters[i].path.value_or("");
    if (own_program && !path.empty() && !path.starts_with(kEnvParameterPrefix)) {
      e.add(p + ".parameters[" + std::to_string(i) + "].path",
            invalidValue(path,
                         "a program of your own (intervals) explores its environment: env.NAME"));
    } else if (!own_program && !path.empty() &&
               std::find(kPbtFields.begin(), kPbtFields.end(), path) == kPbtFields.end()) {
      e.add(p + ".parameters[" + std::to_string(i) + "].path",
            invalidValue(path,
                         "an exploit swaps optimizer fields in place (optimizer.learningRate, "
                         "momentum, weightDecay, beta1, beta2); the weights it copies must fit "
                         "the model and the data stay as they are"));
    }
  }
  e.inInterval(p + ".quantile", pbt.quantile, 0, true, 0.5, false);
  e.inInterval(p + ".resampleProbability", pbt.resample_probability, 0, false, 1, false);
  e.oneOf(p + ".metric", pbt.metric, {"testAccuracy", "loss"});
  e.oneOf(p + ".goal", pbt.goal, {"maximize", "minimize"});
  e.inRange(p + ".waitSeconds", pbt.wait_seconds, 1, 86400);
  e.atLeast(p + ".seed", pbt.seed, int64_t{0});
  if (own_program) return;  // the rest is the built-in trainer's
  if (t.epochs.value_or(kDefaultEpochs) < 2) {
    e.add(p, "members meet after every epoch but the last: train at least 2 epochs");
  }
  const kube::ParallelismSpec parallelism = t.parallelism.value_or(kube::ParallelismSpec{});
  if ((parallelism.pipeline && parallelism.pipeline->stages.value_or(1) > 1) ||
      parallelism.tensor.value_or(1) > 1 || parallelism.parameter_server) {
    e.add(p,
          "a member trains data-parallel; a pipeline, tensor parallelism and parameter "
          "servers are not members yet");
  }
  if (t.device == "cuda") e.add(p, "a member trains on the CPU; the GPU engine is not one yet");
}

}  // namespace

std::vector<FieldError> validateTrainer(const kube::TrainerSpec& t, const std::string& p) {
  FieldErrors e;
  e.unknownFields(p, t.extra);
  if (t.model) validateModel(*t.model, p + ".model", e);
  if (t.dataset) {
    e.unknownFields(p + ".dataset", t.dataset->extra);
    e.oneOf(p + ".dataset.name", t.dataset->name, {kDefaultDataset});
    if (t.dataset->path && t.dataset->path->empty())
      e.add(p + ".dataset.path", "must not be empty");
  }
  if (t.optimizer) validateOptimizer(*t.optimizer, p + ".optimizer", e);
  if (t.checkpoint) {
    e.unknownFields(p + ".checkpoint", t.checkpoint->extra);
    // A relative path resolves against the trainer's working directory: ".." could leave it.
    if (t.checkpoint->path && kube::hasBackstep(*t.checkpoint->path)) {
      e.add(p + ".checkpoint.path", invalidValue(*t.checkpoint->path, "must not contain '..'"));
    }
    e.atLeast(p + ".checkpoint.everySteps", t.checkpoint->every_steps, 0);
    e.atLeast(p + ".checkpoint.keep", t.checkpoint->keep, 1);
  }
  e.inRange(p + ".epochs", t.epochs, 1, 100000);
  e.inRange(p + ".batchSize", t.batch_size, 1, 65536);
  e.inRange(p + ".globalBatchSize", t.global_batch_size, 1, kMaxGlobalBatchSize);
  // Cross-field problems name the trainer: each field alone is within its bounds.
  if (t.global_batch_size) {
    if (t.batch_size) {
      e.add(p, "set batchSize (per rank) or globalBatchSize (over all ranks), not both");
    }
    if (t.parallelism &&
        ((t.parallelism->pipeline && t.parallelism->pipeline->stages.value_or(1) > 1) ||
         t.parallelism->tensor.value_or(1) > 1)) {
      e.add(p,
            "globalBatchSize splits a batch among data-parallel ranks; a split model takes "
            "batchSize per replica");
    }
  }
  e.inInterval(p + ".bucketCapMB", t.bucket_cap_mb, 0, true, 4096, false);
  e.inInterval(p + ".tcpDoublingMaxKB", t.tcp_doubling_max_kb, 0, true, 1 << 20, false);
  e.above(p + ".firstBucketCapMB", t.first_bucket_cap_mb, 0);
  e.atLeast(p + ".seed", t.seed, int64_t{0});
  e.inRange(p + ".metricsPort", t.metrics_port, 1, 65535);
  // The worker container's other ports: a second listener on one of them cannot bind.
  for (auto [port, what] : {std::pair{pod_env::kHealthPort, "the launcher's health port"},
                            std::pair{pod_env::kRendezvousPort, "the rendezvous port"},
                            std::pair{pod_env::kMasterPortDefault, "MASTER_PORT"},
                            std::pair{pod_env::kSshPort, "the MPI launcher's sshd port"}}) {
    if (t.metrics_port == port) {
      e.add(p + ".metricsPort", invalidValue(std::to_string(port), std::string("is ") + what));
    }
  }
  e.atLeast(p + ".maxSteps", t.max_steps, int64_t{0});
  e.atLeast(p + ".logEverySteps", t.log_every_steps, 0);
  e.atLeast(p + ".commTimeoutSeconds", t.comm_timeout_seconds, 1);
  e.inRange(p + ".blasThreads", t.blas_threads, 1, 256);
  if (t.autotune) validateAutotune(t, p + ".autotune", e);
  if (t.pbt) validatePbt(t, p + ".pbt", e);
  e.oneOf(p + ".device", t.device, spellings(kDevices));
  e.oneOf(p + ".precision", t.precision, spellings(kPrecisions));
  if (t.precision == "bf16" && t.device == "cpu") {
    e.add(p + ".precision", "bf16 runs on the GPU only (device cpu trains in fp32)");
  }
  if (t.parallelism) {
    e.unknownFields(p + ".parallelism", t.parallelism->extra);
    if (t.parallelism->tensor) validateTensor(t, p + ".parallelism.tensor", e);
    if (t.parallelism->pipeline) {
      validatePipeline(t, p + ".parallelism.pipeline", e);
      if (t.parallelism->pipeline->stages.value_or(1) > 1 && t.device == "cuda") {
        // What a GPU stage runs (trainer/gpu/gpu_stage.h): an MLP's dense layers in fp32, under
        // a schedule that flushes (PipeDream's weight versions live in host memory).
        const kube::ModelSpec model = t.model.value_or(kube::ModelSpec{});
        if (model.type.value_or("mlp") != "mlp") {
          e.add(p + ".device",
                "pipeline stages on the GPU run MLPs only; a cnn's stages train "
                "on the CPU (device cpu or auto)");
        }
        if (t.parallelism->pipeline->schedule == "pipedream") {
          e.add(p + ".parallelism.pipeline.schedule",
                "pipedream stages train on the CPU (device cpu or auto); the GPU runs gpipe and "
                "1f1b");
        }
        if (t.precision == "bf16") {
          e.add(p + ".precision", "pipeline stages on the GPU train in fp32");
        }
      }
    }
    if (t.parallelism->tensor.value_or(1) > 1 && t.device == "cuda") {
      e.add(p + ".device", "tensor-parallel ranks train on the CPU; use device cpu or auto");
    }
    if (t.parallelism->parameter_server) {
      validateParameterServer(t, p + ".parallelism.parameterServer", e);
    }
  }
  return e.take();
}

TrainerSettings trainerSettings(const kube::TrainerSpec& t) {
  TrainerSettings s;
  const kube::ModelSpec model = t.model.value_or(kube::ModelSpec{});
  s.model.type = parseSpelling(model.type, kModelTypes, ModelType::kMlp);
  s.model.hidden = model.hidden.empty() ? kDefaultHidden : model.hidden;
  s.model.channels = model.channels.empty() ? kDefaultChannels : model.channels;
  s.model.cnn_hidden = model.cnn_hidden.value_or(0);

  const kube::DatasetSpec dataset = t.dataset.value_or(kube::DatasetSpec{});
  s.dataset.name = dataset.name.value_or(kDefaultDataset);
  s.dataset.path = dataset.path.value_or(kDefaultDatasetPath);

  s.epochs = t.epochs.value_or(kDefaultEpochs);
  s.batch_size = t.batch_size.value_or(kDefaultBatchSize);
  s.global_batch_size = t.global_batch_size.value_or(0);

  const kube::OptimizerSpec o = t.optimizer.value_or(kube::OptimizerSpec{});
  s.optimizer.type = parseSpelling(o.type, kOptimizerTypes, OptimizerType::kSgd);
  s.optimizer.learning_rate = o.learning_rate.value_or(kDefaultLearningRate);
  s.optimizer.momentum = o.momentum.value_or(kDefaultMomentum);
  s.optimizer.weight_decay = o.weight_decay.value_or(0.0);
  s.optimizer.schedule = parseSpelling(o.schedule, kSchedules, LrSchedule::kConstant);
  s.optimizer.nesterov = o.nesterov.value_or(false);
  s.optimizer.beta1 = o.beta1.value_or(kDefaultBeta1);
  s.optimizer.beta2 = o.beta2.value_or(kDefaultBeta2);
  s.optimizer.epsilon = o.epsilon.value_or(kDefaultEpsilon);

  s.bucket_cap_mb = t.bucket_cap_mb.value_or(kDefaultBucketCapMB);
  s.tcp_doubling_max_kb = t.tcp_doubling_max_kb.value_or(0);
  s.first_bucket_cap_mb = t.first_bucket_cap_mb.value_or(kDefaultFirstBucketCapMB);

  const kube::CheckpointSpec c = t.checkpoint.value_or(kube::CheckpointSpec{});
  s.checkpoint.path = c.path.value_or("");
  s.checkpoint.every_steps = c.every_steps.value_or(kDefaultCheckpointEverySteps);
  s.checkpoint.keep = c.keep.value_or(kDefaultCheckpointKeep);

  s.seed = static_cast<uint64_t>(t.seed.value_or(static_cast<int64_t>(kDefaultSeed)));
  s.metrics_port = t.metrics_port.value_or(kDefaultMetricsPort);
  s.max_steps = t.max_steps.value_or(0);
  s.log_every_steps = t.log_every_steps.value_or(0);
  s.comm_timeout_seconds = t.comm_timeout_seconds.value_or(kDefaultCommTimeoutSeconds);
  s.blas_threads = t.blas_threads.value_or(1);
  s.device = parseSpelling(t.device, kDevices, Device::kAuto);
  s.precision = parseSpelling(t.precision, kPrecisions, Precision::kFp32);
  s.cuda_graph = t.cuda_graph.value_or(true);

  const kube::PipelineSpec pipe =
      t.parallelism.value_or(kube::ParallelismSpec{}).pipeline.value_or(kube::PipelineSpec{});
  s.pipeline.stages = pipe.stages.value_or(1);
  s.pipeline.micro_batches = pipe.micro_batches.value_or(s.pipeline.stages);
  s.pipeline.schedule =
      parseSpelling(pipe.schedule, kPipelineSchedules, PipelineSchedule::kOneFOneB);
  s.pipeline.partition = pipe.partition;
  s.tensor = t.parallelism.value_or(kube::ParallelismSpec{}).tensor.value_or(1);
  if (t.autotune) {
    const kube::AutotuneSpec& a = *t.autotune;
    s.autotune.enabled = true;
    s.autotune.max_samples = a.max_samples.value_or(kDefaultAutotuneSamples);
    s.autotune.warmup_steps = a.warmup_steps.value_or(kDefaultAutotuneWarmupSteps);
    s.autotune.measure_steps = a.measure_steps.value_or(kDefaultAutotuneMeasureSteps);
    s.autotune.bucket_caps = a.bucket_cap_mb;
    s.autotune.first_bucket_caps = a.first_bucket_cap_mb;
    s.autotune.micro_batches = a.micro_batches;
    s.autotune.blas_threads = a.blas_threads;
    s.autotune.tcp_doubling_max_kb = a.tcp_doubling_max_kb;
    s.autotune.log = a.log.value_or("");
    s.autotune.retune = a.retune.value_or(false);
  }
  if (t.pbt) {
    const kube::PbtSpec& pbt = *t.pbt;
    s.pbt.directory = pbt.directory.value_or("");
    s.pbt.member = pbt.member.value_or("");
    s.pbt.population = pbt.population;
    (void)search::spaceOf(pbt.parameters, "", false, &s.pbt.space);  // validated above
    s.pbt.seed = static_cast<uint64_t>(pbt.seed.value_or(0));
    s.pbt.quantile = pbt.quantile.value_or(kDefaultPbtQuantile);
    s.pbt.resample_probability = pbt.resample_probability.value_or(kDefaultPbtResampleProbability);
    s.pbt.loss = pbt.metric.value_or("testAccuracy") == "loss";
    s.pbt.maximize = pbt.goal ? *pbt.goal == "maximize" : !s.pbt.loss;
    s.pbt.wait_seconds = pbt.wait_seconds.value_or(kDefaultPbtWaitSeconds);
    s.pbt.intervals = pbt.intervals.value_or(0);
  }
  if (t.parallelism && t.parallelism->parameter_server) {
    const kube::ParameterServerSpec& ps = *t.parallelism->parameter_server;
    s.parameter_servers.servers = ps.servers.value_or(0);
    s.parameter_servers.consistency =
        parseSpelling(ps.consistency, kPsConsistencies, PsConsistency::kSync);
    s.parameter_servers.staleness = s.parameter_servers.consistency == PsConsistency::kBounded
                                        ? ps.staleness.value_or(kDefaultStaleness)
                                        : 0;
  }
  return s;
}

}  // namespace ringmaster::contract
