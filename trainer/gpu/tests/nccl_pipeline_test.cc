// A two-stage pipeline on GPUs, as the trainer would run it: each rank a process with a GpuStage
// of the MLP, the stage executor, its NCCL link (activations and gradients in NCCL groups on the
// stage's stream) and the fused SGD kernel. After 20 steps of gpipe and 1f1b the two stages
// hold the parameters one host Model holds after the same 20 steps on the same mini-batches, to
// a relative difference of 1e-5 (fp32, no TF32: summation order the only difference).
//
// The ranks are processes (nccl_ranks.h: forked, rendezvous through a TCP store this test serves,
// one GPU shared by naming two hosts to NCCL). Skips without a GPU.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/gpu_stage.h"
#include "trainer/gpu/kernels.h"
#include "trainer/gpu/tests/nccl_ranks.h"
#include "trainer/model/model.h"
#include "trainer/model/model_stage.h"
#include "trainer/model/tests/test_util.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline/stage_executor.h"

namespace ringmaster::trainer::gpu {
namespace {

using testing::kRankNoGpu;
using testing::kRankPassed;

constexpr int kStages = 2, kSteps = 20, kBatch = 16;
constexpr uint64_t kSeed = 11;
constexpr double kLearningRate = 0.05, kMomentum = 0.9;

model::ModelConfig network() {
  model::ModelConfig c;
  c.hidden = {64, 48, 32};  // four layers: two a stage
  return c;
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};
Batch batchAt(int step) {
  return {model::testing::randomFloats(kBatch * 784, 100 + step),
          model::testing::randomLabels(kBatch, 10, 200 + step)};
}

// The one-process parameters after kSteps.
std::vector<float> oneProcess() {
  auto m = model::Model::create(network(), kSeed, kBatch);
  optim::OptimizerConfig oc;
  oc.learning_rate = kLearningRate;
  oc.momentum = kMomentum;
  auto opt = optim::Optimizer::create(oc, (*m)->params().size());
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batchAt(step);
    (*m)->forwardLoss(b.x.data(), b.y.data(), kBatch, nullptr);
    (*m)->backward({});
    (*opt)->step((*m)->params(), (*m)->grads());
  }
  return {(*m)->params().begin(), (*m)->params().end()};
}

struct Shape {
  pipeline::ScheduleKind kind;
  int micro;
};

// One stage's run of `shape` from the initial parameters; its relative difference from the
// reference's layers, or a negative number on failure (reason on stderr).
double trainStage(int stage, comm::Communicator& comm, GemmWorkspace workspace, cudaStream_t stream,
                  const Shape& shape, const std::vector<float>& want) {
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "stage %d, %s M=%d: %s\n", stage,
                 pipeline::scheduleName(shape.kind).c_str(), shape.micro, why.c_str());
    return -1.0;
  };
  const int first = 2 * stage, end = first + 2;
  auto slots = pipeline::StageExecutor::slotsNeeded(shape.kind, stage, kStages, shape.micro);
  if (!slots.ok()) return fail(slots.status().toString());
  const int micro_rows = (kBatch + shape.micro - 1) / shape.micro;
  auto host = model::ModelStage::create(network(), kSeed, micro_rows, first, end, 1);
  if (!host.ok()) return fail(host.status().toString());
  auto made = GpuStage::create(**host, *slots, workspace, stream);
  if (!made.ok()) return fail(made.status().toString());
  GpuStage& gpu = **made;
  DeviceBuffer<float> momentum;
  DeviceBuffer<StepCounters> counters;
  DeviceBuffer<SgdScalars> scalars;
  for (core::Status s : {momentum.allocate(gpu.numParams(), "momentum", true),
                         counters.allocate(1, "counters", true), scalars.allocate(1, "scalars")})
    if (!s.ok()) return fail(s.toString());
  launchSgdScalars({kLearningRate, 0, false}, {0, static_cast<float>(kMomentum), 0.0f, false},
                   counters.data(), scalars.data(), stream);
  pipeline::StageLinks links{&comm, stage > 0 ? stage - 1 : -1,
                             stage + 1 < kStages ? stage + 1 : -1, std::chrono::seconds(60),
                             stream};
  pipeline::StageExecutor executor(gpu, shape.kind, stage, kStages, shape.micro, links);
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batchAt(step);
    auto stats = executor.run({b.x.data(), b.y.data(), kBatch}, step);
    if (!stats.ok()) return fail(stats.status().toString());
    launchSgdStep(gpu.params(), gpu.grads(), momentum.data(), gpu.numParams(), scalars.data(),
                  nullptr, stream);
  }
  if (cudaStreamSynchronize(stream) != cudaSuccess) return fail("the stream failed");
  if (!comm.deviceCollectives()->asyncError().ok())
    return fail(comm.deviceCollectives()->asyncError().toString());
  std::vector<float> got(gpu.numParams());
  cudaMemcpy(got.data(), gpu.params(), got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  // The stage's layers are a contiguous run of the whole network's parameters.
  auto whole = model::Model::create(network(), kSeed, 1);
  size_t offset = 0;
  for (const auto& v : (*whole)->paramViews())
    if (v.name == (*host)->paramViews().front().name) offset = v.offset;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[offset + i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[offset + i])));
  }
  return diff / scale;
}

int runStage(int rank, int store_port) {
  auto comm = testing::joinNcclWorld(rank, kStages, store_port);
  if (comm.status().code() == core::Code::kNotFound) return kRankNoGpu;
  RM_RANK_CHECK(comm.ok(), "%s", comm.status().message().c_str());
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  RM_RANK_CHECK(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
  RM_RANK_CHECK(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
  DeviceBuffer<uint8_t> workspace;
  RM_RANK_CHECK(workspace.allocate(32 << 20, "workspace").ok(), "workspace");
  const std::vector<float> want = oneProcess();
  int failed = 0;
  for (const Shape& shape :
       {Shape{pipeline::ScheduleKind::kGPipe, 4}, Shape{pipeline::ScheduleKind::kOneFOneB, 4},
        Shape{pipeline::ScheduleKind::kOneFOneB, 8}}) {
    const double diff =
        trainStage(rank, **comm, {lt, workspace.data(), workspace.size()}, stream, shape, want);
    std::fprintf(stderr, "stage %d, %s M=%d: relative difference %.2e\n", rank,
                 pipeline::scheduleName(shape.kind).c_str(), shape.micro, diff);
    if (diff < 0 || diff > 1e-5) ++failed;
  }
  workspace.reset();
  cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  comm->reset();
  return failed == 0 ? kRankPassed : testing::kRankFailed;
}

TEST(NcclPipeline, TwoGpuStagesTrainWhatOneHostModelTrains) {
  const std::vector<int> codes = testing::runForkedRanks(kStages, 300, runStage);
  ASSERT_EQ(codes.size(), static_cast<size_t>(kStages));
  if (testing::noGpuAnywhere(codes)) GTEST_SKIP() << "no GPU visible";
  for (int stage = 0; stage < kStages; ++stage)
    EXPECT_EQ(codes[stage], kRankPassed)
        << "stage " << stage << " (its figures are on stderr above)";
}

}  // namespace
}  // namespace ringmaster::trainer::gpu
