// ringmaster-trainer: the built-in data-parallel trainer (one process per rank).
//
// Reads spec.trainer-shaped YAML (--config), lets flags override it, takes its place in the world
// from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
// RINGMASTER_JOB, RINGMASTER_ATTEMPT; or Open MPI's variables under mpirun: the rank environment
// contract, ringmaster/contract/rank_environment.h), trains on the CPU or
// the GPU (--device; the GPU path is a module loaded on demand, gpu_module.h), and exits 0 on
// success, 1 on bad input or a failure, 2 on a usage error, 142 when a peer went away or a
// collective stalled (retryable), 128+15 when stopped by SIGTERM.
//
// Under ringmaster-launcher (RINGMASTER_USE_AGENT_STORE=1) the launcher hosts the rendezvous
// store: every rank, rank 0 included, connects to it at MASTER_ADDR:MASTER_PORT, and each rank
// publishes a heartbeat with its step there (rendezvous/heartbeat.h) for the launcher's hang
// detector. Keys live under "<job>/attempt-<attempt>/". Listening sockets (metrics, tcp, gloo) bind
// to $POD_IP when set; the metrics port is the configured one plus LOCAL_RANK, so the processes of
// one pod do not collide.

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <tuple>

#include "ringmaster/contract/backend_rules.h"
#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/metrics/metrics.h"
#include "ringmaster/rendezvous/heartbeat.h"
#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/collective_watchdog.h"
#include "trainer/comm/factory.h"
#include "trainer/config.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device.h"
#include "trainer/gpu_module.h"
#include "trainer/model/blas_kernels.h"
#include "trainer/trainer.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

using core::Result;
using core::Status;

// This process's place in the world, as the launcher (or mpirun, or whoever started it) set it.
Result<contract::RankEnvironment> worldFromEnv() {
  return contract::parseRankEnvironment([](const char* name) { return std::getenv(name); });
}

Result<std::vector<int>> parseIntList(const std::string& text, const std::string& flag) {
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

// The command line: overrides of spec.trainer's fields (applied only where given, over --config
// or the defaults) and the process's own options.
struct CommandLine {
  std::string config_path, summary_path, log_level;
  std::string model, hidden, channels, data, optimizer, lr_schedule, checkpoint_dir, device,
      precision;
  int64_t epochs = 0, batch_size = 0, seed = 0, checkpoint_every = 0, blas_threads = 0,
          max_steps = 0, log_every_steps = 0, comm_timeout_seconds = 0;
  double lr = 0, momentum = 0, weight_decay = 0, bucket_cap_mb = 0, first_bucket_cap_mb = 0;
  bool cuda_graph = false;
  bool print_blas_kernels = false;
  std::string backend = "auto";
  int64_t metrics_port = -1;
  int64_t rdzv_timeout_seconds = 300;
};

// Starts from the defaults of spec.trainer, so that --help shows them.
CommandLine defaultCommandLine() {
  const TrainerConfig d = defaultTrainerConfig();
  CommandLine cl;
  cl.model = d.model.type;
  cl.data = d.dataset.path;
  cl.optimizer = d.optimizer.type;
  cl.lr_schedule = d.lr_schedule;
  cl.device = d.device;
  cl.precision = d.precision;
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
  cl.first_bucket_cap_mb = d.first_bucket_cap_mb;
  cl.cuda_graph = d.cuda_graph;
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
  flags.addDouble("first-bucket-cap-mb", &cl->first_bucket_cap_mb, "first bucket size in MiB");
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
  flags.addString("summary-json", &cl->summary_path, "write a JSON summary here at the end");
  flags.addString("log-level", &cl->log_level, "error | warn | info | debug | trace");
  flags.addBool("print-blas-kernels", &cl->print_blas_kernels,
                "print the OpenBLAS kernels training runs on here (OPENBLAS_CORETYPE's names) "
                "and exit");
}

// The spec.trainer fields the command line gives, written over `spec`.
Status applyFlags(const core::FlagSet& flags, const CommandLine& cl, kube::TrainerSpec* spec) {
  auto given = [&](const char* flag) { return flags.wasSet(flag); };
  auto narrow = [](int64_t v) {  // out-of-range values stay out of range for the contract
    return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
  };
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
  if (given("first-bucket-cap-mb")) spec->first_bucket_cap_mb = cl.first_bucket_cap_mb;
  if (given("seed")) spec->seed = cl.seed;
  if (given("blas-threads")) spec->blas_threads = narrow(cl.blas_threads);
  if (given("max-steps")) spec->max_steps = cl.max_steps;
  if (given("log-every-steps")) spec->log_every_steps = narrow(cl.log_every_steps);
  if (given("comm-timeout-seconds")) spec->comm_timeout_seconds = narrow(cl.comm_timeout_seconds);
  return Status::Ok();
}

constexpr char kSummary[] =
    "Data-parallel SGD on Fashion-MNIST. Configuration is spec.trainer's shape (YAML, --config); "
    "flags override it.\nPlace in the world comes from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
    "MASTER_PORT (or mpirun).";

int run(int argc, char** argv) {
  // First: a re-exec must come before any thread starts.
  const std::string blas_problem = model::useFastestBlasKernels(argv);
  core::log::initFromEnv();
  core::StopSource& stop = core::installSignalStop();

  CommandLine cl = defaultCommandLine();
  core::FlagSet flags("ringmaster-trainer", kSummary);
  declareFlags(flags, &cl);
  {
    bool help = false;
    Status s = flags.parse(argc, argv, &help);
    if (!s.ok()) {
      std::fprintf(stderr, "ringmaster-trainer: %s\n", s.message().c_str());
      return 2;
    }
    if (help) {
      std::fputs(flags.help().c_str(), stdout);
      return 0;
    }
  }
  if (cl.print_blas_kernels) {
    std::printf("%s\n", model::blasKernelsInUse().c_str());
    return 0;
  }
  if (!cl.log_level.empty()) {
    core::log::Level level;
    if (!core::log::parseLevel(cl.log_level, &level)) {
      std::fprintf(stderr, "ringmaster-trainer: flag --log-level: unknown level '%s'\n",
                   cl.log_level.c_str());
      return 2;
    }
    core::log::setLevel(level);
  }

  auto fail = [](const Status& status) {
    RM_LOG(ERROR, CORE) << status.message();
    return status.exitCode();
  };
  // A peer that went away or a collective that stalled (NCCL's watchdog, a rendezvous deadline)
  // may well succeed on a fresh attempt: exit with the code the operator restarts on.
  auto failRetryable = [&fail](const Status& status) {
    if (status.code() != core::Code::kUnavailable && status.code() != core::Code::kTimeout)
      return fail(status);
    RM_LOG(ERROR, CORE) << status.message() << " (exit " << comm::kRetryableExitCode
                        << ", retryable)";
    return comm::kRetryableExitCode;
  };

  kube::TrainerSpec spec;
  if (!cl.config_path.empty()) {
    auto loaded = loadTrainerSpec(cl.config_path);
    if (!loaded.ok()) return fail(loaded.status());
    spec = std::move(*loaded);
  }
  if (Status s = applyFlags(flags, cl, &spec); !s.ok()) return fail(s);
  auto configured = trainerConfig(spec);
  if (!configured.ok()) {
    const std::string from =
        cl.config_path.empty() ? "the flags" : cl.config_path + " and the flags";
    return fail(configured.status().withContext(from));
  }
  TrainerConfig config = std::move(*configured);
  config.backend = cl.backend;
  if (flags.wasSet("metrics-port")) {
    if (cl.metrics_port < -1 || cl.metrics_port > 65535)
      return fail(core::usageError("flag --metrics-port: must be -1 (off), 0 (any) or a port"));
    config.metrics_port = cl.metrics_port;
  } else if (!cl.config_path.empty()) {
    config.metrics_port = contract::trainerSettings(spec).metrics_port;
  }

  auto world = worldFromEnv();
  if (!world.ok()) return fail(world.status());
  core::log::setDefaultPrefix(world->job + " rank " + std::to_string(world->rank) + "/" +
                              std::to_string(world->world_size));
  openblas_set_num_threads(static_cast<int>(config.blas_threads));
  if (!blas_problem.empty()) {
    RM_LOG(WARN, CONFIG) << blas_problem;
  } else if (const std::string note = model::blasKernelsNote(); !note.empty()) {
    RM_LOG(INFO, CONFIG) << note;
  }
  // The backend pins the device (nccl the GPU, a host backend the CPU), and a split model with
  // both on auto stays on the CPU: the contract's rules, which the operator admitted the job by.
  const bool split_model = config.pipeline.stages > 1 || config.tensor > 1;
  contract::BackendUse backend_use;
  backend_use.backend = config.backend;
  backend_use.device = config.device;
  backend_use.pipeline_stages = config.pipeline.stages;
  backend_use.tensor = config.tensor;
  backend_use.pipeline_schedule = config.pipeline.schedule;
  if (std::string why = contract::backendError(backend_use); !why.empty()) {
    return fail(core::invalidArgument("backend " + config.backend + ": " + why));
  }
  config.device = contract::deviceRequest(backend_use);
  RM_LOG(INFO, CONFIG) << describe(config);
  const LoadedGpu gpu = loadGpuModule(config.device);
  auto device = resolveDevice(config.device, gpu.availability, world->local_rank);
  if (!device.ok()) return fail(device.status());
  RM_LOG(INFO, CONFIG) << "device: " << device->reason;
  if (!device->cuda && config.precision != "fp32")
    return fail(core::invalidArgument("trainer.precision: " + config.precision +
                                      " needs the GPU, and this rank trains on the CPU (" +
                                      device->reason + ")"));
  if (device->cuda) {
    if (Status s = gpu.module->selectDevice(device->ordinal); !s.ok()) return fail(s);
  }

  auto train = data::loadFashionMnist(config.dataset.path, data::Split::kTrain);
  if (!train.ok()) return fail(train.status());
  auto test = data::loadFashionMnist(config.dataset.path, data::Split::kTest);
  if (!test.ok()) return fail(test.status());

  comm::CommConfig comm_config;
  comm_config.backend = config.backend;
  comm_config.device = device->cuda ? "cuda" : "cpu";
  comm_config.collective_timeout = std::chrono::seconds(config.comm_timeout_seconds);
  comm_config.rank = world->rank;
  comm_config.world_size = world->world_size;
  comm_config.master_addr = world->master_addr;
  comm_config.master_port = world->store_port;
  comm_config.store_secret = world->store_secret;
  comm_config.key_prefix = world->attemptPrefix() + "/trainer";
  comm_config.host_store = !world->use_agent_store;
  comm_config.host = world->pod_ip;
  comm_config.timeout = std::chrono::seconds(cl.rdzv_timeout_seconds);
  comm_config.point_to_point = config.pipeline.stages > 1;
  if (device->cuda) {
    comm_config.make_nccl = [module = gpu.module](const comm::NcclConfig& nccl) {
      return module->makeNcclCommunicator(nccl);
    };
  }
  auto communicator = comm::makeCommunicator(comm_config);
  if (!communicator.ok()) return failRetryable(communicator.status());

  metrics::Registry registry({{"trainingjob", world->job}, {"rank", std::to_string(world->rank)}});
  const int stages = config.pipeline.stages;
  auto trainer_metrics =
      TrainerMetrics::create(registry, (*communicator)->backend(),
                             split_model ? world->rank / config.tensor % stages : -1);
  if (!trainer_metrics.ok()) return fail(trainer_metrics.status());
  std::unique_ptr<metrics::Exposer> exposer;
  if (config.metrics_port >= 0) {
    // A fixed port is a base: local rank k of a pod serves on base + k.
    const int64_t port = config.metrics_port == 0 ? 0 : config.metrics_port + world->local_rank;
    if (port > 65535) {
      return fail(core::invalidArgument("metrics port " + std::to_string(config.metrics_port) +
                                        " + LOCAL_RANK " + std::to_string(world->local_rank) +
                                        " is not a TCP port"));
    }
    auto started = metrics::Exposer::start(world->bindHost(), static_cast<int>(port), registry);
    if (!started.ok()) return fail(started.status());
    exposer = std::move(*started);
    RM_LOG(INFO, METRICS) << "serving /metrics on port " << exposer->port();
  }

  std::unique_ptr<rendezvous::HeartbeatPublisher> heartbeat;
  if (world->use_agent_store) {
    // Its own connection: a heartbeat must never queue behind a store call of the communicator.
    auto client = rendezvous::TcpStoreClient::connect(
        world->master_addr, world->store_port, world->store_secret,
        std::chrono::seconds(cl.rdzv_timeout_seconds));
    if (!client.ok()) return fail(client.status().withContext("heartbeat"));
    prometheus::Counter* steps = trainer_metrics->steps;
    heartbeat = std::make_unique<rendezvous::HeartbeatPublisher>(
        std::move(client).value(), world->attemptPrefix(), world->rank,
        [steps] { return static_cast<int64_t>(steps->Value()); },
        std::chrono::milliseconds(world->heartbeat_ms));
  }

  TrainerContext ctx;
  ctx.comm = communicator->get();
  ctx.make_group = [comm_config, world_comm = ctx.comm](
                       const std::string& name, int rank,
                       int size) -> core::Result<std::unique_ptr<comm::Communicator>> {
    // mpirun's ranks share one MPI world: groups are split off it.
    if (comm::runningUnderMpirun()) return comm::makeMpiGroup(*world_comm, name, rank, size);
    comm::CommConfig group = comm_config;
    group.rank = rank;
    group.world_size = size;
    group.key_prefix = comm_config.key_prefix + "/" + name;
    group.host_store = false;      // the world's communicator (or the launcher) hosts it already
    group.point_to_point = false;  // groups only sum (gradients, tensor-parallel parts)
    return comm::makeCommunicator(group);
  };
  if (device->cuda && split_model) {
    ctx.make_device_stage = [module = gpu.module](model::ModelStage& host, int slots) {
      return module->makePipelineStage(host, slots);
    };
  }
  ctx.train = &*train;
  ctx.test = &*test;
  ctx.stop = &stop;
  ctx.metrics = &*trainer_metrics;
  ctx.progress_bar = world->rank == 0 && isatty(STDOUT_FILENO);
  // Data parallelism on a GPU is the module's trainer; pipeline stages on one are the CPU
  // trainer's with a device stage (ctx.make_device_stage).
  auto summary =
      device->cuda && !split_model ? gpu.module->train(config, ctx) : Trainer(config, ctx).run();
  if (!summary.ok()) {
    if (summary.status().code() == core::Code::kCancelled) {
      RM_LOG(WARN, CORE) << summary.status().message();
      return 128 + 15;
    }
    return failRetryable(summary.status());
  }
  if (world->rank == 0) {
    std::ostringstream done;
    done << "done: " << summary->epochs << " epochs, " << summary->steps << " steps";
    if (summary->test_accuracy) done << ", test accuracy " << *summary->test_accuracy * 100 << "%";
    if (summary->samples_per_second)
      done << ", " << std::llround(*summary->samples_per_second) << " samples/s";
    else
      done << ", no step trained in this run";
    RM_LOG(INFO, STEP) << done.str();
    if (!cl.summary_path.empty()) {
      if (Status w = writeSummaryJson(*summary, cl.summary_path); !w.ok()) return fail(w);
    }
  }
  return 0;
}

}  // namespace
}  // namespace ringmaster::trainer

int main(int argc, char** argv) { return ringmaster::trainer::run(argc, argv); }
