// A pipeline stage on the GPU against the host's: the same layers, micro-batches and slots give
// the host stage's outputs, input gradients, accumulated parameter gradients and losses to GEMM
// rounding (fp32, no TF32), for the first, a middle, the last and a whole-network stage; and it
// computes with whichever weight version it is pointed at; what it does not run it refuses,
// naming it. Skips without a GPU (the refusals too, so that this binary reports Skipped there).

#include "trainer/gpu/gpu_stage.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

#include <vector>

#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/tests/gpu_test_util.h"
#include "trainer/model/model_stage.h"
#include "trainer/model/tests/test_util.h"

namespace ringmaster::trainer::gpu {
namespace {

using model::ModelStage;
using model::testing::near;
using model::testing::randomFloats;
using model::testing::randomLabels;

constexpr int kMicro = 8, kSlots = 2;
constexpr uint64_t kSeed = 7;

model::ModelConfig mlp() {
  model::ModelConfig c;
  c.hidden = {64, 40};  // layers 784->64, 64->40, 40->10
  return c;
}

std::unique_ptr<ModelStage> hostStage(int first, int end, int slots) {
  auto s = ModelStage::create(mlp(), kSeed, kMicro, first, end, slots);
  EXPECT_TRUE(s.ok()) << s.status().toString();
  return std::move(*s);
}

// A cuBLASLt handle, workspace and stream for one test.
struct Device {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer<uint8_t> workspace;
  Device() {
    EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    EXPECT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
    EXPECT_TRUE(workspace.allocate(32 << 20, "workspace").ok());
  }
  ~Device() {
    if (lt) cublasLtDestroy(lt);
    if (stream) cudaStreamDestroy(stream);
  }
  GemmWorkspace gemm() const { return {lt, workspace.data(), workspace.size()}; }
  std::vector<float> download(const float* device, size_t n) const {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<float> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }
  void upload(float* device, const std::vector<float>& host) const {
    EXPECT_EQ(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float),
                              cudaMemcpyHostToDevice, stream),
              cudaSuccess);
  }
};

void expectNear(const std::vector<float>& gpu, const float* host, const std::string& what) {
  for (size_t i = 0; i < gpu.size(); ++i)
    ASSERT_TRUE(near(gpu[i], host[i], 1e-6, 1e-4))
        << what << "[" << i << "]: " << gpu[i] << " vs " << host[i];
}

struct Cut {
  const char* name;
  int first, end;
};

class GpuStageCut : public ::testing::TestWithParam<Cut> {};

// Two micro-batches (8 and 5 rows, each scaled by its share of 13) forward, then backward in
// reverse order, as gpipe runs them.
TEST_P(GpuStageCut, MatchesTheHostStageOverTwoMicroBatches) {
  RM_REQUIRE_GPU();
  const Cut cut = GetParam();
  auto host = hostStage(cut.first, cut.end, kSlots);
  auto init = hostStage(cut.first, cut.end, 1);
  Device device;
  auto made = GpuStage::create(*init, kSlots, device.gemm(), device.stream);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  GpuStage& gpu = **made;
  EXPECT_EQ(gpu.inputSize(), host->inputSize());
  EXPECT_EQ(gpu.outputSize(), host->outputSize());

  const int rows[2] = {8, 5};
  host->zeroGrads();
  gpu.zeroGrads();
  for (int m = 0; m < 2; ++m) {
    const auto x = randomFloats(rows[m] * host->inputSize(), 10 + m);
    if (host->isFirst()) {
      host->loadInput(m, x.data(), rows[m]);
      gpu.loadInput(m, x.data(), rows[m]);
    } else {
      std::copy(x.begin(), x.end(), host->input(m));
      device.upload(gpu.input(m), x);
    }
    const float* want = host->forward(m, rows[m]);
    const float* got = gpu.forward(m, rows[m]);
    ASSERT_TRUE(gpu.status().ok()) << gpu.status().toString();
    expectNear(device.download(got, rows[m] * gpu.outputSize()), want,
               std::string(cut.name) + " output of micro-batch " + std::to_string(m));
    if (host->isLast()) {
      const auto y = randomLabels(rows[m], 10, 20 + m);
      const float scale = rows[m] / 13.0f;
      host->addLoss(m, y.data(), rows[m], scale);
      gpu.addLoss(m, y.data(), rows[m], scale);
    } else {
      const auto dout = randomFloats(rows[m] * host->outputSize(), 30 + m);
      std::copy(dout.begin(), dout.end(), host->outputGrad(m));
      device.upload(gpu.outputGrad(m), dout);
    }
  }
  for (int m = 1; m >= 0; --m) {
    const float* want = host->backward(m, rows[m]);
    const float* got = gpu.backward(m, rows[m]);
    ASSERT_TRUE(gpu.status().ok()) << gpu.status().toString();
    if (host->isFirst()) {
      EXPECT_EQ(got, nullptr) << "the first stage sends nothing back";
    } else {
      ASSERT_NE(got, nullptr);
      expectNear(device.download(got, rows[m] * gpu.inputSize()), want,
                 std::string(cut.name) + " input gradient of micro-batch " + std::to_string(m));
    }
  }
  const auto host_grads = host->grads();
  const auto gpu_grads = device.download(gpu.grads(), gpu.numParams());
  ASSERT_EQ(gpu_grads.size(), host_grads.size());
  for (const auto& view : host->paramViews())
    for (size_t i = view.offset; i < view.offset + view.count; ++i)
      ASSERT_TRUE(near(gpu_grads[i], host_grads[i], 1e-6, 1e-4))
          << view.name << "[" << i - view.offset << "]: " << gpu_grads[i] << " vs "
          << host_grads[i];
  const model::StageLosses want = host->takeLosses(), got = gpu.takeLosses();
  EXPECT_TRUE(near(got.loss_sum, want.loss_sum, 1e-5, 1e-5))
      << got.loss_sum << " vs " << want.loss_sum;
  EXPECT_EQ(got.correct, want.correct);
  if (host->isLast()) {
    EXPECT_GT(want.loss_sum, 0.0);
  }
  EXPECT_TRUE(gpu.status().ok()) << gpu.status().toString();
}

INSTANTIATE_TEST_SUITE_P(Cuts, GpuStageCut,
                         ::testing::Values(Cut{"whole", 0, 3}, Cut{"first", 0, 1},
                                           Cut{"middle", 1, 2}, Cut{"last", 1, 3}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuStage, ComputesWithTheWeightVersionInUse) {
  RM_REQUIRE_GPU();
  auto init = hostStage(0, 3, 1);
  Device device;
  auto made = GpuStage::create(*init, 1, device.gemm(), device.stream);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  GpuStage& gpu = **made;
  const auto x = randomFloats(kMicro * gpu.inputSize(), 40);
  auto logits = [&] {
    gpu.loadInput(0, x.data(), kMicro);
    const float* out = gpu.forward(0, kMicro);
    EXPECT_TRUE(gpu.status().ok()) << gpu.status().toString();
    return device.download(out, kMicro * gpu.outputSize());
  };
  const std::vector<float> on_params = logits();
  const std::span<float> v1 = gpu.weightVersion(1);
  ASSERT_EQ(v1.size(), gpu.numParams());
  ASSERT_NE(v1.data(), gpu.params());
  gpu.copyWeights(gpu.weightVersion(0), v1);
  gpu.useWeights(v1);
  EXPECT_EQ(logits(), on_params) << "a copy of the weights computes the same";
  ASSERT_EQ(cudaMemsetAsync(v1.data(), 0, v1.size_bytes(), device.stream), cudaSuccess);
  const std::vector<float> on_zeros = logits();
  for (int c = 0; c < 10; ++c) EXPECT_EQ(on_zeros[c], 0.0f) << "zero weights and biases";
  gpu.useWeights(gpu.weightVersion(0));
  EXPECT_EQ(logits(), on_params);
}

TEST(GpuStage, RefusesWhatItDoesNotRunNamingIt) {
  RM_REQUIRE_GPU();
  model::ModelConfig cnn;
  cnn.type = model::ModelKind::kCnn;
  auto conv = ModelStage::create(cnn, kSeed, 4, 0, 2, 1);
  ASSERT_TRUE(conv.ok()) << conv.status().toString();
  auto refused = GpuStage::create(**conv, 1, {}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), core::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("is not an MLP"), std::string::npos)
      << refused.status().message();
  auto split = ModelStage::create(mlp(), kSeed, 4, 0, 2, 1, {0, 2});
  ASSERT_TRUE(split.ok()) << split.status().toString();
  refused = GpuStage::create(**split, 1, {}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("parallelism.tensor"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace ringmaster::trainer::gpu
