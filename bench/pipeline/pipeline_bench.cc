// bench_pipeline: one stage of our pipeline on a deep MLP (input -> width x depth -> 10) with
// random data: the stages of `--stages` processes (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT,
// `--backend`, by default what the trainer picks: shm on one host), cut where the parameter counts
// balance (what `--print-partition` prints, so that the PyTorch peer uses the same cut),
// `--micro-batches` micro-batches per mini-batch under
// `--schedule`, an SGD step after each mini-batch. After --warmup steps it times --steps and rank 0
// prints one JSON line: samples/s and, per stage, the measured bubble (the share of the schedule's
// time the stage did not work: passes, PipeDream's updates between them, and the zeroing of
// its gradients, whose share it prints apart) beside the ideal (S - 1) / (M + S - 1) of equal
// stages and the ideal for this cut (the schedule simulated with each stage's measured forward
// and backward, which it prints too: ms per micro-batch), and each stage's shares of time
// waiting in receives, waiting for sends and zeroing.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "trainer/comm/factory.h"
#include "trainer/model/blas_kernels.h"
#include "trainer/model/init.h"
#include "trainer/model/model_stage.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline/partition.h"
#include "trainer/pipeline/stage_executor.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int64_t stages = 2, micro_batches = 4, input = 784, width = 2048, depth = 8, batch = 128;
  int64_t steps = 8, warmup = 2;
  std::string schedule = "1f1b";
  std::string backend = "auto";
  bool print_partition = false;
};

trainer::model::ModelConfig network(const Options& o) {
  trainer::model::ModelConfig c;
  c.hidden.assign(static_cast<size_t>(o.depth), static_cast<int>(o.width));
  c.input_channels = 1;
  c.input_height = 1;
  c.input_width = static_cast<int>(o.input);
  return c;
}

// Parameters per layer: what the cut balances (dense layers cost in proportion to them).
std::vector<double> layerCosts(const Options& o) {
  std::vector<double> costs;
  int64_t in = o.input;
  for (int64_t i = 0; i < o.depth; ++i) {
    costs.push_back(static_cast<double>(in * o.width + o.width));
    in = o.width;
  }
  costs.push_back(static_cast<double>(in * 10 + 10));
  return costs;
}

int getenvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

core::Status run(const Options& o) {
  const std::vector<double> costs = layerCosts(o);
  RM_ASSIGN_OR_RETURN(const trainer::pipeline::StageStarts starts,
                      trainer::pipeline::balancedPartition(costs, static_cast<int>(o.stages)));
  if (o.print_partition) {
    for (size_t s = 0; s < starts.size(); ++s) std::printf("%s%d", s ? "," : "", starts[s]);
    std::printf("\n");
    return core::Status::Ok();
  }
  trainer::comm::CommConfig cc;
  cc.backend = o.backend;
  cc.point_to_point = true;
  cc.rank = getenvInt("RANK", 0);
  cc.world_size = getenvInt("WORLD_SIZE", 1);
  cc.master_addr = std::getenv("MASTER_ADDR") ? std::getenv("MASTER_ADDR") : "127.0.0.1";
  cc.master_port = getenvInt("MASTER_PORT", 29500);
  cc.key_prefix = "bench-pipeline";
  if (cc.world_size != o.stages) {
    return core::usageError("WORLD_SIZE " + std::to_string(cc.world_size) +
                            " must equal --stages " + std::to_string(o.stages));
  }
  RM_ASSIGN_OR_RETURN(auto comm, trainer::comm::makeCommunicator(cc));
  const int stage_index = comm->rank(), stages = static_cast<int>(o.stages);
  const int micro = static_cast<int>(o.micro_batches);
  RM_ASSIGN_OR_RETURN(const auto kind, trainer::pipeline::parseScheduleKind(o.schedule));
  const bool pipedream = kind == trainer::pipeline::ScheduleKind::kPipeDream;
  RM_ASSIGN_OR_RETURN(
      int slots, trainer::pipeline::StageExecutor::slotsNeeded(kind, stage_index, stages, micro));
  if (pipedream) slots = stages - stage_index;  // its stream keeps S - s in flight
  const int end =
      stage_index + 1 < stages ? starts[stage_index + 1] : static_cast<int>(costs.size());
  RM_ASSIGN_OR_RETURN(auto stage, trainer::model::ModelStage::create(
                                      network(o), 1, static_cast<int>(o.batch / micro),
                                      starts[stage_index], end, slots));
  trainer::optim::OptimizerConfig sgd;
  sgd.learning_rate = 0.01;
  RM_ASSIGN_OR_RETURN(auto optimizer,
                      trainer::optim::Optimizer::create(sgd, stage->params().size()));
  trainer::pipeline::StageLinks links{comm.get(),
                                      stage_index > 0 ? stage_index - 1 : -1,
                                      stage_index + 1 < stages ? stage_index + 1 : -1,
                                      {}};
  trainer::pipeline::StageExecutor executor(*stage, kind, stage_index, stages, micro, links);

  trainer::model::Rng rng(7, 0);
  std::vector<float> x(static_cast<size_t>(o.batch * o.input));
  for (float& v : x) v = rng.uniform(0, 1);
  std::vector<int32_t> y(static_cast<size_t>(o.batch));
  for (int32_t& v : y) v = static_cast<int32_t>(rng.next() % 10);

  trainer::pipeline::StepStats timed;  // the timed steps' measures, summed
  Clock::time_point start;
  // PipeDream: one stream over every step's micro-batches, an update per micro-batch, drained at
  // the end (inside the timed part: it is work the schedule owes).
  auto apply = [&](std::span<const float> newest, std::span<float> next) {
    optimizer->stepInto(newest, next, stage->grads());
    return true;
  };
  if (pipedream) RM_RETURN_IF_ERROR(executor.beginStream((o.warmup + o.steps) * micro));
  for (int64_t step = 0; step < o.warmup + o.steps; ++step) {
    if (step == o.warmup) {
      RM_RETURN_IF_ERROR(comm->barrier());
      start = Clock::now();
    }
    const trainer::pipeline::MiniBatch batch{x.data(), y.data(), static_cast<int>(o.batch)};
    trainer::pipeline::StepStats stats;
    if (pipedream) {
      RM_ASSIGN_OR_RETURN(stats, executor.runStream(batch, step, apply));
      if (step + 1 == o.warmup + o.steps) {
        RM_ASSIGN_OR_RETURN(const auto drained, executor.drainStream(step, apply));
        stats.add(drained);
      }
    } else {
      RM_ASSIGN_OR_RETURN(stats, executor.run(batch, step));
      optimizer->step(stage->params(), stage->grads());
    }
    if (step >= o.warmup) timed.add(stats);
  }
  RM_RETURN_IF_ERROR(comm->barrier());
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  // Every stage's bubble and pass times to rank 0: each fills its own slots of a sum.
  const size_t n = static_cast<size_t>(stages), me = static_cast<size_t>(stage_index);
  std::vector<float> gathered(6 * n, 0.0f);
  const double passes = static_cast<double>(o.steps * micro);
  // PipeDream's update follows each backward, so the simulation counts it in the backward.
  gathered[me] = static_cast<float>(timed.bubble());
  gathered[n + me] = static_cast<float>(timed.forward_seconds / passes);
  gathered[2 * n + me] = static_cast<float>(
      (timed.busySeconds() - timed.forward_seconds - timed.clear_seconds) / passes);
  gathered[3 * n + me] = static_cast<float>(timed.recv_wait_seconds / timed.wall_seconds);
  gathered[4 * n + me] = static_cast<float>(timed.send_wait_seconds / timed.wall_seconds);
  gathered[5 * n + me] = static_cast<float>(timed.clear_seconds / timed.wall_seconds);
  RM_RETURN_IF_ERROR(comm->allreduceSum(gathered.data(), gathered.size(), {}));
  const std::vector<float> bubbles(gathered.begin(), gathered.begin() + n);
  if (stage_index == 0) {
    // What the schedule alone would leave on this cut, with each stage's measured pass times.
    std::vector<std::vector<trainer::pipeline::PipelineOp>> all;
    for (int s = 0; s < stages; ++s) {
      // PipeDream: its stream over the timed steps, never flushed.
      const int simulated = pipedream ? static_cast<int>(o.steps) * micro : micro;
      RM_ASSIGN_OR_RETURN(auto ops, trainer::pipeline::stageSchedule(kind, s, stages, simulated));
      all.push_back(std::move(ops));
    }
    const auto cut = trainer::pipeline::simulate(
        all, std::vector<double>(gathered.begin() + n, gathered.begin() + 2 * n),
        std::vector<double>(gathered.begin() + 2 * n, gathered.begin() + 3 * n));
    double mean = 0, clear = 0;
    std::string per_stage, pass_ms, waits;
    for (size_t s = 0; s < bubbles.size(); ++s) {
      mean += bubbles[s];
      clear += gathered[5 * n + s];
      per_stage += (s ? "," : "") + std::to_string(bubbles[s]);
      char text[48];
      std::snprintf(text, sizeof text, "%s[%.3f,%.3f]", s ? "," : "", gathered[n + s] * 1e3,
                    gathered[2 * n + s] * 1e3);
      pass_ms += text;
      std::snprintf(text, sizeof text, "%s[%.4f,%.4f,%.4f]", s ? "," : "", gathered[3 * n + s],
                    gathered[4 * n + s], gathered[5 * n + s]);
      waits += text;
    }
    mean /= static_cast<double>(bubbles.size());
    clear /= static_cast<double>(bubbles.size());
    std::printf(
        "{\"who\": \"ringmaster\", \"backend\": \"%s\", \"schedule\": \"%s\", \"stages\": %d, "
        "\"micro_batches\": %d, "
        "\"samples_per_second\": %.1f, \"bubble\": %.4f, \"clear_share\": %.4f, "
        "\"bubble_per_stage\": [%s], "
        "\"ideal_bubble\": %.4f, \"ideal_bubble_for_cut\": %.4f, "
        "\"forward_backward_ms_per_stage\": [%s], "
        "\"recv_wait_send_wait_clear_share_per_stage\": [%s]}\n",
        comm->backend().c_str(), o.schedule.c_str(), stages, micro,
        static_cast<double>(o.steps * o.batch) / wall, mean, clear, per_stage.c_str(),
        trainer::pipeline::idealBubbleFraction(stages, micro), cut.bubbleFraction(),
        pass_ms.c_str(), waits.c_str());
  }
  return core::Status::Ok();
}

}  // namespace
}  // namespace ringmaster::bench

int main(int argc, char** argv) {
  using namespace ringmaster;
  // The trainer's kernels, so that the stages run what a job runs.
  const std::string blas_problem = trainer::model::useFastestBlasKernels(argv);
  bench::Options o;
  core::FlagSet flags("bench_pipeline", "one stage of a pipeline-parallel MLP, timed");
  flags.addInt("stages", &o.stages, "pipeline stages (= WORLD_SIZE)");
  flags.addInt("micro-batches", &o.micro_batches, "micro-batches per mini-batch");
  flags.addString("schedule", &o.schedule, "gpipe | 1f1b | pipedream");
  flags.addString("backend", &o.backend, "auto (shm on one host) | shm | tcp | gloo");
  flags.addInt("input", &o.input,
               "input width (784: a Fashion-MNIST image; the hidden width: "
               "equal layers, which cut into equal stages)");
  flags.addInt("width", &o.width, "hidden width");
  flags.addInt("depth", &o.depth, "hidden layers");
  flags.addInt("batch", &o.batch, "mini-batch samples");
  flags.addInt("steps", &o.steps, "timed steps");
  flags.addInt("warmup", &o.warmup, "untimed steps first");
  flags.addBool("print-partition", &o.print_partition, "print the stage starts and exit");
  bool print_blas_kernels = false;
  flags.addBool("print-blas-kernels", &print_blas_kernels,
                "print the OpenBLAS kernels the stages run on here and exit");
  bool help = false;
  core::Status parsed = flags.parse(argc, argv, &help);
  if (help) {
    std::printf("%s", flags.help().c_str());
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "bench_pipeline: %s\n", parsed.message().c_str());
    return 2;
  }
  if (print_blas_kernels) {
    std::printf("%s\n", trainer::model::blasKernelsInUse().c_str());
    return 0;
  }
  core::log::initFromEnv();
  openblas_set_num_threads(1);
  if (!blas_problem.empty()) std::fprintf(stderr, "bench_pipeline: %s\n", blas_problem.c_str());
  core::Status s = bench::run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "bench_pipeline: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
