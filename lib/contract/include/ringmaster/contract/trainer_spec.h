#pragma once
// What a TrainingJob's spec.trainer means: the built-in trainer's settings with every default
// applied, and the only home of those defaults and of their limits. The operator checks a job's
// spec.trainer here before it creates anything (field paths "spec.trainer.*"); the trainer reads
// the same YAML through the same codec (kube::TrainerSpec) and the same function (paths
// "trainer.*"), so that a spec the operator admits is one the trainer runs, and the CRD schema
// states the same bounds (operator/tests/crd_test.cc holds the two to each other).
//
// Thread-safety: pure functions over plain values. Failure: field errors, one per problem.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/contract/field_errors.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/search/space.h"

namespace ringmaster::contract {

enum class ModelType { kMlp, kCnn };
enum class OptimizerType { kSgd, kAdam };
enum class LrSchedule { kConstant, kCosine };
// Where the model trains: auto is the GPU when the build has CUDA and one is visible.
enum class Device { kAuto, kCpu, kCuda };
// GPU arithmetic: fp32 (no TF32), or bf16 GEMMs over fp32 master weights.
enum class Precision { kFp32, kBf16 };

// How a pipeline runs a mini-batch's micro-batches: all forwards then all backwards (gpipe), or
// one forward and one backward in turn once the pipeline is full (1f1b: fewer activations); or
// PipeDream's asynchronous 1f1b, never flushed, each micro-batch an update of its own computed on
// the weights its forward used (pipedream).
enum class PipelineSchedule { kGPipe, kOneFOneB, kPipeDream };

// How parameter servers take the workers' gradients: one step for all of them (sync: the same
// model as allreduce), each as it comes (async), or each as it comes while no worker is more
// than `staleness` steps ahead of the slowest (bounded: stale synchronous parallel).
enum class PsConsistency { kSync, kAsync, kBounded };

// Bounds the model's size: weights, gradients and optimizer state (~16 bytes a parameter)
// live on every rank; 1B parameters is ~16 GB each, what one data-parallel GPU rank can hold
// beside its activations.
inline constexpr int64_t kMaxModelParameters = 1'000'000'000;
// Port of local rank 0's /metrics in a worker pod (local rank k serves port + k).
inline constexpr int32_t kDefaultMetricsPort = 9090;

struct TrainerSettings {
  struct Model {
    ModelType type = ModelType::kMlp;
    std::vector<int32_t> hidden;    // MLP hidden widths
    std::vector<int32_t> channels;  // the CNN's two conv layers
    int32_t cnn_hidden = 0;         // the CNN's dense layer before the classes; 0: none
    bool operator==(const Model&) const = default;
  };
  struct Dataset {
    std::string name;
    std::string path;
    bool operator==(const Dataset&) const = default;
  };
  struct Optimizer {
    OptimizerType type = OptimizerType::kSgd;
    double learning_rate = 0;
    double momentum = 0;
    double weight_decay = 0;
    LrSchedule schedule = LrSchedule::kConstant;  // cosine: decay to 0 at the last step
    bool nesterov = false;
    double beta1 = 0, beta2 = 0, epsilon = 0;  // Adam
    bool operator==(const Optimizer&) const = default;
  };
  // Layers split into `stages` stages, each on its own rank; 1: no pipeline.
  struct Pipeline {
    int32_t stages = 1;
    int32_t micro_batches = 1;  // per mini-batch; divides batch_size
    PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
    std::vector<int32_t> partition;  // first layer of each stage; empty: balanced by the trainer
    bool operator==(const Pipeline&) const = default;
  };
  struct Checkpoint {
    std::string path;  // empty: no checkpoints
    int64_t every_steps = 0;
    int64_t keep = 0;
    bool operator==(const Checkpoint&) const = default;
  };

  Model model;
  Dataset dataset;
  int64_t epochs = 0;
  int64_t batch_size = 0;  // per data-parallel replica (every stage of a pipeline sees it)
  // > 0: the samples of a step over all ranks, batch_size being each rank's share of it (the
  // trainer divides it by the world it finds); 0: batch_size as given.
  int64_t global_batch_size = 0;
  Optimizer optimizer;
  double bucket_cap_mb = 0;
  double first_bucket_cap_mb = 0;  // small, so communication starts early in backward
  // The tcp transport's recursive-doubling threshold (KiB); 0: the transport's own.
  double tcp_doubling_max_kb = 0;
  Checkpoint checkpoint;
  uint64_t seed = 0;
  int32_t metrics_port = 0;
  int64_t max_steps = 0;        // 0: no limit
  int64_t log_every_steps = 0;  // 0: one line per epoch
  int64_t comm_timeout_seconds = 0;
  int64_t blas_threads = 0;
  Device device = Device::kAuto;
  Precision precision = Precision::kFp32;
  bool cuda_graph = false;
  Pipeline pipeline;
  // Ranks that split each pair of the MLP's dense layers (column- then row-parallel, Megatron's
  // MLP); 1: none. A world is D x stages x tensor ranks.
  int32_t tensor = 1;
  // The last `servers` ranks hold the parameters and apply the optimizer, the others train
  // against them; 0: no parameter servers (allreduce).
  struct ParameterServers {
    int32_t servers = 0;
    PsConsistency consistency = PsConsistency::kSync;
    int32_t staleness = 0;  // bounded only
    bool operator==(const ParameterServers&) const = default;
  };
  ParameterServers parameter_servers;
  // Autotune of the data-parallel engine's gradient bucket caps, or of a pipeline's micro-batch
  // count (trainer/autotune).
  struct Autotune {
    bool enabled = false;
    int32_t max_samples = 0;
    int32_t warmup_steps = 0;
    int32_t measure_steps = 0;
    std::vector<double> bucket_caps, first_bucket_caps;  // empty: the default grid
    std::vector<int32_t> micro_batches;                  // a pipeline's; empty: the default
    std::vector<int32_t> blas_threads;                   // empty: the default
    std::vector<double> tcp_doubling_max_kb;             // tcp's; empty: the default
    std::string log;                                     // CSV path; empty: none
    bool retune = false;
    bool operator==(const Autotune&) const = default;
  };
  Autotune autotune;
  // Population-based training: this run is `member` of `population`, which meets in `directory`
  // after every epoch (trainer/pbt). Off when member is empty.
  struct Pbt {
    std::string directory;
    std::string member;
    std::vector<std::string> population;
    std::vector<search::Parameter> space;  // optimizer fields, swapped in place
    uint64_t seed = 0;
    double quantile = 0;
    double resample_probability = 0;
    bool loss = false;  // the objective: the test loss, else the test accuracy
    bool maximize = true;
    int32_t wait_seconds = 0;
    // A program of the user's own that the launcher runs this many times (its space env.NAME
    // variables); 0: the built-in trainer, meeting after every epoch.
    int32_t intervals = 0;
    bool enabled() const { return !member.empty(); }
    bool operator==(const Pbt&) const = default;
  };
  Pbt pbt;
  bool operator==(const TrainerSettings&) const = default;
};

// A search parameter (or a pbt member's) that is the environment variable NAME: "env.NAME".
inline constexpr std::string_view kEnvParameterPrefix = "env.";
// The text such a variable carries for `value`: a string as it is, a number or a bool as JSON
// writes it (the shortest text that reads back as the same double).
std::string envParameterText(const nlohmann::json& value);

// The optimizer fields a pbt member may explore: what an exploit can change between two steps
// without touching the weights' shapes or the data.
inline const std::vector<std::string> kPbtFields = {"optimizer.learningRate", "optimizer.momentum",
                                                    "optimizer.weightDecay", "optimizer.beta1",
                                                    "optimizer.beta2"};

// Problems of `spec` (an unset field is fine: its default applies), each named under `prefix`
// ("spec.trainer" in the operator, "trainer" in the trainer).
std::vector<FieldError> validateTrainer(const kube::TrainerSpec& spec, const std::string& prefix);

// `spec` with every default applied. Meaningful only for a spec validateTrainer accepts.
TrainerSettings trainerSettings(const kube::TrainerSpec& spec);

// Parameters of the model `model` describes, built for Fashion-MNIST with the defaults for what
// it leaves out.
int64_t modelParameters(const kube::ModelSpec& model);

// Layers of the model `model` describes (what pipeline stages split): an MLP's hidden layers
// and its classifier; the CNN's two conv blocks, its optional dense layer and its classifier.
int32_t modelLayers(const kube::ModelSpec& model);

// The spelling in spec.trainer of each enum value ("mlp", "adam", "cuda", ...).
const char* name(ModelType value);
const char* name(OptimizerType value);
const char* name(LrSchedule value);
const char* name(Device value);
const char* name(Precision value);
const char* name(PipelineSchedule value);
const char* name(PsConsistency value);

}  // namespace ringmaster::contract
