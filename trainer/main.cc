// ringmaster-trainer: the built-in data-parallel trainer (one process per rank).
//
// Reads spec.trainer-shaped YAML (--config), lets flags override it, takes its place in the world
// from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
// RINGMASTER_JOB, RINGMASTER_ATTEMPT; or Open MPI's variables under mpirun: the rank environment
// contract, ringmaster/contract/rank_environment.h), trains on the CPU or
// the GPU (--device; the GPU path is a module loaded on demand, gpu_module.h), and exits 0 on
// success, 1 on bad input or a failure, 2 on a usage error, 142 when a peer went away or a
// collective stalled (retryable), 128+15 when stopped by SIGTERM. With parameter servers
// (parallelism.parameterServer, or --ps-servers N) the ranks are parameter servers and workers
// instead (trainer/ps/ps_process.h).
//
// Under ringmaster-launcher (RINGMASTER_USE_AGENT_STORE=1) the launcher hosts the rendezvous
// store: every rank, rank 0 included, connects to it at MASTER_ADDR:MASTER_PORT, and each rank
// publishes a heartbeat with its step there (rendezvous/heartbeat.h) for the launcher's hang
// detector. Keys live under "<job>/attempt-<attempt>/". Listening sockets (metrics, tcp, gloo) bind
// to $POD_IP when set; the metrics port is the configured one plus LOCAL_RANK, so the processes of
// one pod do not collide.
//
// The decisions are the trainer library's, tested there: the configuration from the flags and
// the file (command_line.h), the device (device.h), the communicators (comm_plan.h), the metrics
// port (metrics_port.h) and the exit code (exit_status.h). This file parses and wires.

#include <cblas.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/metrics/metrics.h"
#include "ringmaster/rendezvous/heartbeat.h"
#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/factory.h"
#include "trainer/comm_plan.h"
#include "trainer/command_line.h"
#include "trainer/config.h"
#include "trainer/cpu_share.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device.h"
#include "trainer/exit_status.h"
#include "trainer/gpu_module.h"
#include "trainer/metrics_port.h"
#include "trainer/model/blas_kernels.h"
#include "trainer/pipeline_trainer.h"
#include "trainer/ps/ps_process.h"
#include "trainer/trainer.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

using core::Status;

// This process's place in the world, as the launcher (or mpirun, or whoever started it) set it.
core::Result<contract::RankEnvironment> worldFromEnv() {
  return contract::parseRankEnvironment([](const char* name) { return std::getenv(name); });
}

// Logs `status` and gives the code to exit with (exit_status.h).
int fail(const Status& status, FailureScope scope = FailureScope::kProcess) {
  const FailureExit exit = failureExit(status, scope);
  if (exit.warning) {
    RM_LOG(WARN, CORE) << exit.message;
  } else {
    RM_LOG(ERROR, CORE) << exit.message;
  }
  return exit.code;
}

// Rank 0's last line, and --summary-json when asked for.
Status reportDone(const TrainSummary& summary, const CommandLine& cl) {
  std::ostringstream done;
  done << "done: " << summary.epochs << " epochs, " << summary.steps << " steps";
  if (summary.test_accuracy) done << ", test accuracy " << *summary.test_accuracy * 100 << "%";
  if (summary.samples_per_second)
    done << ", " << std::llround(*summary.samples_per_second) << " samples/s";
  else
    done << ", no step trained in this run";
  RM_LOG(INFO, STEP) << done.str();
  if (cl.summary_path.empty()) return Status::Ok();
  return writeSummaryJson(summary, cl.summary_path);
}

// Serves `registry` at the rank's /metrics port (none where the configuration asks for none).
core::Result<std::unique_ptr<metrics::Exposer>> serveRankMetrics(
    const TrainerConfig& config, const contract::RankEnvironment& world,
    const metrics::Registry& registry) {
  RM_ASSIGN_OR_RETURN(std::optional<int> port,
                      rankMetricsPort(config.metrics_port, world.local_rank));
  if (!port) return std::unique_ptr<metrics::Exposer>();
  RM_ASSIGN_OR_RETURN(auto exposer, metrics::Exposer::start(world.bindHost(), *port, registry));
  RM_LOG(INFO, METRICS) << "serving /metrics on port " << exposer->port();
  return exposer;
}

// Parameter-server mode: this rank serves parameters or trains against them (ps/ps_process.h).
int runParameterServerRank(const CommandLine& cl, const TrainerConfig& config,
                           const contract::RankEnvironment& world, const core::StopSource& stop) {
  auto place = ps::placeRank(world.rank, world.world_size, config.settings.parameter_servers);
  if (!place.ok()) return fail(place.status());
  metrics::Registry registry({{"trainingjob", world.job}, {"rank", std::to_string(world.rank)}});
  auto exposer = serveRankMetrics(config, world, registry);
  if (!exposer.ok()) return fail(exposer.status());
  ps::PsRun run;
  run.registry = &registry;
  run.settings = config.settings;
  run.world = world;
  run.placement = *place;
  run.stop = &stop;
  run.rendezvous_timeout = std::chrono::seconds(cl.rdzv_timeout_seconds);
  auto train = data::loadFashionMnist(run.settings.dataset.path, data::Split::kTrain);
  if (!train.ok()) return fail(train.status());
  auto test = data::loadFashionMnist(run.settings.dataset.path, data::Split::kTest);
  if (!test.ok()) return fail(test.status());
  run.train = &*train;
  run.test = &*test;
  if (place->role == ps::PsRole::kServer) {
    const Status served = ps::serveParameters(run);
    return served.ok() ? 0 : fail(served, FailureScope::kWorld);
  }
  auto summary = ps::trainAgainstServers(run);
  if (!summary.ok()) return fail(summary.status(), FailureScope::kWorld);
  if (place->index != 0) return 0;
  const Status reported = reportDone(*summary, cl);
  return reported.ok() ? 0 : fail(reported);
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

  auto configured = resolveTrainerConfig(flags, cl);
  if (!configured.ok()) return fail(configured.status());
  TrainerConfig config = std::move(*configured);
  contract::TrainerSettings& settings = config.settings;

  auto world = worldFromEnv();
  if (!world.ok()) return fail(world.status());
  core::log::setDefaultPrefix(world->job + " rank " + std::to_string(world->rank) + "/" +
                              std::to_string(world->world_size));
  openblas_set_num_threads(static_cast<int>(settings.blas_threads));
  if (!blas_problem.empty()) {
    RM_LOG(WARN, CONFIG) << blas_problem;
  } else if (const std::string note = model::blasKernelsNote(); !note.empty()) {
    RM_LOG(INFO, CONFIG) << note;
  }
  if (settings.parameter_servers.servers != 0) {
    return runParameterServerRank(cl, config, *world, stop);
  }
  auto requested = requestedDevice(config.backend, settings);
  if (!requested.ok()) return fail(requested.status());
  settings.device = *requested;
  RM_LOG(INFO, CONFIG) << describe(config);
  const LoadedGpu gpu = loadGpuModule(settings.device);
  auto device = resolveDevice(settings.device, gpu.availability, world->local_rank);
  if (!device.ok()) return fail(device.status());
  RM_LOG(INFO, CONFIG) << "device: " << device->reason;
  if (Status s = checkPrecision(settings.precision, *device); !s.ok()) return fail(s);
  if (device->cuda) {
    if (Status s = gpu.module->selectDevice(device->ordinal); !s.ok()) return fail(s);
  }

  auto train = data::loadFashionMnist(settings.dataset.path, data::Split::kTrain);
  if (!train.ok()) return fail(train.status());
  auto test = data::loadFashionMnist(settings.dataset.path, data::Split::kTest);
  if (!test.ok()) return fail(test.status());

  const auto rendezvous_timeout = std::chrono::seconds(cl.rdzv_timeout_seconds);
  comm::CommConfig comm_config = worldCommConfig(*world, config, device->cuda, rendezvous_timeout);
  if (device->cuda) {
    comm_config.make_nccl = [module = gpu.module](const comm::NcclConfig& nccl) {
      return module->makeNcclCommunicator(nccl);
    };
  }
  auto communicator = comm::makeCommunicator(comm_config);
  if (!communicator.ok()) return fail(communicator.status(), FailureScope::kWorld);

  metrics::Registry registry({{"trainingjob", world->job}, {"rank", std::to_string(world->rank)}});
  auto trainer_metrics = TrainerMetrics::create(registry, (*communicator)->backend(),
                                                pipelineStageOf(settings, world->rank));
  if (!trainer_metrics.ok()) return fail(trainer_metrics.status());
  auto exposer = serveRankMetrics(config, *world, registry);
  if (!exposer.ok()) return fail(exposer.status());

  std::unique_ptr<rendezvous::HeartbeatPublisher> heartbeat;
  if (world->use_agent_store) {
    // Its own connection: a heartbeat must never queue behind a store call of the communicator.
    auto client = rendezvous::TcpStoreClient::connect(world->master_addr, world->store_port,
                                                      world->store_secret, rendezvous_timeout);
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
    return comm::makeCommunicator(groupCommConfig(comm_config, name, rank, size));
  };
  const bool split_model = splitsModel(settings);
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
  ctx.blas_cores = cpusPerProcess(world->local_world_size);
  if (settings.autotune.enabled && device->cuda && world->rank == 0) {
    // device auto found a GPU: the contract refuses autotune only where cuda is asked for.
    RM_LOG(WARN, CONFIG) << "autotune tunes training on the CPU; the GPU engine trains with the "
                            "configured bucket caps";
  }
  // Data parallelism on a GPU is the module's trainer; pipeline stages on one are the CPU
  // trainer's with a device stage (ctx.make_device_stage).
  auto summary = device->cuda && !split_model ? gpu.module->train(settings, ctx)
                                              : Trainer(settings, ctx).run();
  if (!summary.ok()) return fail(summary.status(), FailureScope::kWorld);
  if (world->rank == 0) {
    if (Status w = reportDone(*summary, cl); !w.ok()) return fail(w);
  }
  return 0;
}

}  // namespace
}  // namespace ringmaster::trainer

int main(int argc, char** argv) { return ringmaster::trainer::run(argc, argv); }
