#include "trainer/command_line.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "ringmaster/contract/rank_environment.h"
#include "trainer/metrics_port.h"
#include "trainer/ps/staleness_gate.h"

namespace ringmaster::trainer {
namespace {

core::Result<std::vector<int>> parseIntList(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto v = core::parseInt(item);
    if (!v.ok()) return core::usageError("flag --" + flag + ": " + v.status().message());
    out.push_back(static_cast<int>(*v));
  }
  return out;
}

// A flag's value for an int32 field: out-of-range values stay out of range for the contract.
int32_t narrow(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

// --ps-servers and --ps-consistency, written over spec.trainer.parallelism.parameterServer.
core::Status applyParameterServerFlags(const core::FlagSet& flags, const CommandLine& cl,
                                       kube::TrainerSpec* spec) {
  auto given = [&](const char* flag) { return flags.wasSet(flag); };
  if (!given("ps-servers") && !given("ps-consistency")) return core::Status::Ok();
  kube::ParallelismSpec& parallelism =
      spec->parallelism.emplace(spec->parallelism.value_or(kube::ParallelismSpec{}));
  std::optional<kube::ParameterServerSpec>& servers = parallelism.parameter_server;
  if (given("ps-servers") && cl.ps_servers == 0) {
    servers.reset();  // data parallel, whatever the config said
    return core::Status::Ok();
  }
  servers.emplace(servers.value_or(kube::ParameterServerSpec{}));
  if (given("ps-servers")) servers->servers = narrow(cl.ps_servers);
  if (!given("ps-consistency")) return core::Status::Ok();
  core::Result<ps::Consistency> parsed = ps::parseConsistency(cl.ps_consistency);
  if (!parsed.ok()) return core::usageError("--ps-consistency: " + parsed.status().message());
  servers->staleness.reset();
  if (!parsed->max_staleness) {
    servers->consistency = "async";
  } else if (*parsed->max_staleness == 0) {
    servers->consistency = "sync";
  } else {
    servers->consistency = "bounded";
    servers->staleness = narrow(*parsed->max_staleness);
  }
  return core::Status::Ok();
}

// The spec.trainer fields the command line gives, written over `spec`.
core::Status applyFlags(const core::FlagSet& flags, const CommandLine& cl,
                        kube::TrainerSpec* spec) {
  auto given = [&](const char* flag) { return flags.wasSet(flag); };
  kube::ModelSpec& model = spec->model.emplace(spec->model.value_or(kube::ModelSpec{}));
  if (given("model")) model.type = cl.model;
  for (auto [flag, text, out] : {std::tuple{"hidden", &cl.hidden, &model.hidden},
                                 std::tuple{"channels", &cl.channels, &model.channels}}) {
    if (!given(flag)) continue;
    RM_ASSIGN_OR_RETURN(std::vector<int> list, parseIntList(*text, flag));
    out->assign(list.begin(), list.end());
  }
  if (given("data"))
    spec->dataset.emplace(spec->dataset.value_or(kube::DatasetSpec{})).path = cl.data;
  kube::OptimizerSpec& o = spec->optimizer.emplace(spec->optimizer.value_or(kube::OptimizerSpec{}));
  if (given("optimizer")) o.type = cl.optimizer;
  if (given("lr")) o.learning_rate = cl.lr;
  if (given("lr-schedule")) o.schedule = cl.lr_schedule;
  if (given("momentum")) o.momentum = cl.momentum;
  if (given("weight-decay")) o.weight_decay = cl.weight_decay;
  if (given("checkpoint-dir") || given("checkpoint-every")) {
    kube::CheckpointSpec& c =
        spec->checkpoint.emplace(spec->checkpoint.value_or(kube::CheckpointSpec{}));
    if (given("checkpoint-dir")) c.path = cl.checkpoint_dir;
    if (given("checkpoint-every")) c.every_steps = narrow(cl.checkpoint_every);
  }
  if (given("epochs")) spec->epochs = narrow(cl.epochs);
  if (given("batch-size")) spec->batch_size = narrow(cl.batch_size);
  if (given("device")) spec->device = cl.device;
  if (given("precision")) spec->precision = cl.precision;
  if (given("cuda-graph")) spec->cuda_graph = cl.cuda_graph;
  if (given("bucket-cap-mb")) spec->bucket_cap_mb = cl.bucket_cap_mb;
  if (given("tcp-doubling-max-kb")) {  // 0: the transport's own, as when unset
    spec->tcp_doubling_max_kb =
        cl.tcp_doubling_max_kb != 0 ? std::optional(cl.tcp_doubling_max_kb) : std::nullopt;
  }
  if (given("first-bucket-cap-mb")) spec->first_bucket_cap_mb = cl.first_bucket_cap_mb;
  if (given("seed")) spec->seed = cl.seed;
  if (given("blas-threads")) spec->blas_threads = narrow(cl.blas_threads);
  if (given("max-steps")) spec->max_steps = cl.max_steps;
  if (given("log-every-steps")) spec->log_every_steps = narrow(cl.log_every_steps);
  if (given("comm-timeout-seconds")) spec->comm_timeout_seconds = narrow(cl.comm_timeout_seconds);
  if (given("autotune") && !cl.autotune) spec->autotune.reset();
  if ((given("autotune") && cl.autotune) || given("autotune-log") || given("autotune-samples")) {
    kube::AutotuneSpec& a = spec->autotune.emplace(spec->autotune.value_or(kube::AutotuneSpec{}));
    if (given("autotune-log")) a.log = cl.autotune_log;
    if (given("autotune-samples")) a.max_samples = narrow(cl.autotune_samples);
  }
  return applyParameterServerFlags(flags, cl, spec);
}

}  // namespace

CommandLine defaultCommandLine() {
  const contract::TrainerSettings d = defaultTrainerSettings();
  CommandLine cl;
  cl.model = contract::name(d.model.type);
  cl.data = d.dataset.path;
  cl.optimizer = contract::name(d.optimizer.type);
  cl.lr_schedule = contract::name(d.optimizer.schedule);
  cl.device = contract::name(d.device);
  cl.precision = contract::name(d.precision);
  cl.epochs = d.epochs;
  cl.batch_size = d.batch_size;
  cl.seed = static_cast<int64_t>(d.seed);
  cl.checkpoint_every = d.checkpoint.every_steps;
  cl.blas_threads = d.blas_threads;
  cl.max_steps = d.max_steps;
  cl.log_every_steps = d.log_every_steps;
  cl.comm_timeout_seconds = d.comm_timeout_seconds;
  cl.lr = d.optimizer.learning_rate;
  cl.momentum = d.optimizer.momentum;
  cl.weight_decay = d.optimizer.weight_decay;
  cl.bucket_cap_mb = d.bucket_cap_mb;
  cl.tcp_doubling_max_kb = d.tcp_doubling_max_kb;
  cl.first_bucket_cap_mb = d.first_bucket_cap_mb;
  cl.cuda_graph = d.cuda_graph;
  cl.autotune = d.autotune.enabled;
  return cl;
}

void declareFlags(core::FlagSet& flags, CommandLine* cl) {
  flags.addString("config", &cl->config_path, "YAML file in the shape of spec.trainer");
  flags.addString("model", &cl->model, "model type: mlp | cnn");
  flags.addString("hidden", &cl->hidden, "MLP hidden widths, comma separated (e.g. 512,512)");
  flags.addString("channels", &cl->channels, "CNN conv channels, two comma separated counts");
  flags.addString("data", &cl->data, "Fashion-MNIST directory (IDX, plain or .gz)");
  flags.addInt("epochs", &cl->epochs, "epochs to train");
  flags.addInt("batch-size", &cl->batch_size, "batch size per rank");
  flags.addString("optimizer", &cl->optimizer, "sgd | adam");
  flags.addDouble("lr", &cl->lr, "learning rate");
  flags.addString("lr-schedule", &cl->lr_schedule, "constant | cosine (decay to 0 at the end)");
  flags.addDouble("momentum", &cl->momentum, "SGD momentum");
  flags.addDouble("weight-decay", &cl->weight_decay, "weight decay (L2)");
  flags.addString("backend", &cl->backend, "auto | nccl | tcp | gloo | mpi | shm",
                  contract::rank_env::kBackend);
  flags.addString("device", &cl->device, "auto | cpu | cuda (auto: the GPU when there is one)",
                  "RINGMASTER_DEVICE");
  flags.addString("precision", &cl->precision, "GPU arithmetic: fp32 | bf16");
  flags.addBool("cuda-graph", &cl->cuda_graph, "GPU: replay each step as one CUDA graph");
  flags.addDouble("bucket-cap-mb", &cl->bucket_cap_mb, "gradient bucket size in MiB");
  flags.addDouble("tcp-doubling-max-kb", &cl->tcp_doubling_max_kb,
                  "backend tcp: largest allreduce (KiB) by recursive doubling (0: the transport's "
                  "own, 16 a rank up to 256)");
  flags.addDouble("first-bucket-cap-mb", &cl->first_bucket_cap_mb, "first bucket size in MiB");
  flags.addBool("autotune", &cl->autotune,
                "measure step time under candidate bucket caps (a pipeline's: micro-batch "
                "counts) during the first steps and train on the fastest (trainer.autotune)");
  flags.addString("autotune-log", &cl->autotune_log,
                  "autotune: write every sample to this CSV (implies --autotune)");
  flags.addInt("autotune-samples", &cl->autotune_samples,
               "autotune: settings to measure at most, the defaults included (implies "
               "--autotune; default 20)");
  flags.addString("checkpoint-dir", &cl->checkpoint_dir, "checkpoint directory (empty: off)");
  flags.addInt("checkpoint-every", &cl->checkpoint_every,
               "checkpoint every N steps (and after every epoch)");
  flags.addInt("seed", &cl->seed, "random seed (initialization and shuffling)");
  flags.addInt("blas-threads", &cl->blas_threads, "OpenBLAS threads per rank");
  flags.addInt("metrics-port", &cl->metrics_port,
               "serve /metrics on this port (0: any, -1: off; default: the config's metricsPort "
               "with --config, else off)",
               "RINGMASTER_METRICS_PORT");
  flags.addInt("max-steps", &cl->max_steps, "stop after this many steps (0: no limit)");
  flags.addInt("log-every-steps", &cl->log_every_steps, "log the loss every N steps (0: off)");
  flags.addInt("comm-timeout-seconds", &cl->comm_timeout_seconds, "allreduce timeout");
  flags.addInt("rendezvous-timeout-seconds", &cl->rdzv_timeout_seconds,
               "how long to wait for the other ranks at start", "RINGMASTER_RDZV_TIMEOUT_SECONDS");
  flags.addInt("ps-servers", &cl->ps_servers,
               "parameter-server mode: N ranks hold the parameters, the others train against "
               "them (0: data parallel; parallelism.parameterServer.servers)");
  flags.addString("ps-consistency", &cl->ps_consistency,
                  "parameter-server mode: sync | async | a staleness bound (0 = sync)");
  flags.addString("summary-json", &cl->summary_path, "write a JSON summary here at the end");
  flags.addString("log-level", &cl->log_level, "error | warn | info | debug | trace");
  flags.addBool("print-blas-kernels", &cl->print_blas_kernels,
                "print the OpenBLAS kernels training runs on here (OPENBLAS_CORETYPE's names) "
                "and exit");
}

core::Result<TrainerConfig> resolveTrainerConfig(const core::FlagSet& flags,
                                                 const CommandLine& cl) {
  kube::TrainerSpec spec;
  if (!cl.config_path.empty()) {
    RM_ASSIGN_OR_RETURN(spec, loadTrainerSpec(cl.config_path));
  }
  RM_RETURN_IF_ERROR(applyFlags(flags, cl, &spec));
  core::Result<TrainerConfig> configured = trainerConfig(spec);
  if (!configured.ok()) {
    const std::string from =
        cl.config_path.empty() ? "the flags" : cl.config_path + " and the flags";
    return configured.status().withContext(from);
  }
  TrainerConfig config = std::move(*configured);
  config.backend = cl.backend;
  const std::optional<int64_t> flag =
      flags.wasSet("metrics-port") ? std::optional<int64_t>(cl.metrics_port) : std::nullopt;
  RM_ASSIGN_OR_RETURN(config.metrics_port, configuredMetricsPort(flag, !cl.config_path.empty(),
                                                                 config.settings.metrics_port));
  return config;
}

}  // namespace ringmaster::trainer
