// One GPU step against one CPU step on the same weights and batch: the fp32 gradients, loss,
// hits and SGD update must agree to GEMM rounding; bf16 must follow fp32 closely. Skips
// without a GPU.

#include "trainer/gpu/gpu_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/kernels.h"
#include "trainer/gpu/tests/gpu_test_util.h"
#include "trainer/model/tests/test_util.h"
#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer::gpu {
namespace {

using model::testing::near;
using model::testing::randomFloats;
using model::testing::randomLabels;

constexpr int kBatch = 48;

model::ModelConfig smallMlp() {
  model::ModelConfig c;
  c.type = model::ModelKind::kMlp;
  c.hidden = {64, 40};
  return c;
}

// A GPU model with its own cuBLASLt handle, workspace and stream.
struct Rig {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer<uint8_t> workspace;
  DeviceBuffer<LossTotals> totals;
  std::unique_ptr<GpuModel> net;

  void init(model::Model& host, Precision precision,
            const model::ModelConfig& config = smallMlp()) {
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
    ASSERT_TRUE(workspace.allocate(32 << 20, "workspace").ok());
    ASSERT_TRUE(totals.allocate(1, "totals", true).ok());
    auto made = GpuModel::create(host, config, precision, kBatch, {lt, workspace.data(), 32u << 20},
                                 stream);
    ASSERT_TRUE(made.ok()) << made.status().message();
    net = std::move(made).value();
  }
  ~Rig() {
    net.reset();
    if (lt) cublasLtDestroy(lt);
    if (stream) cudaStreamDestroy(stream);
  }

  // Uploads x (fp32, converted for bf16) and y, then forward + backward.
  void step(const std::vector<float>& x, const std::vector<int32_t>& y, int n,
            std::vector<int>* ready) {
    if (net->precision() == Precision::kBf16) {
      DeviceBuffer<float> staging;
      ASSERT_TRUE(staging.allocate(x.size(), "x").ok());
      cudaMemcpy(staging.data(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
      launchFloatToBf16(staging.data(), static_cast<uint16_t*>(net->input()), x.size(), stream);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    } else {
      cudaMemcpy(net->input(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
    }
    cudaMemcpy(net->labels(), y.data(), y.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
    cudaMemset(totals.data(), 0, sizeof(LossTotals));
    ASSERT_TRUE(net->forwardLoss(n, true, 1.0 / n, totals.data(), stream).ok());
    ASSERT_TRUE(net->backward(n, stream, [&](int layer) { ready->push_back(layer); }).ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }

  std::vector<float> download(const float* device, size_t n) const {
    std::vector<float> out(n);
    cudaMemcpy(out.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost);
    return out;
  }
  LossTotals readTotals() const {
    LossTotals t;
    cudaMemcpy(&t, totals.data(), sizeof t, cudaMemcpyDeviceToHost);
    return t;
  }
};

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// Each GPU gradient within GEMM rounding of the CPU model's, a mismatch named by its parameter.
void expectGradientsMatchTheCpu(model::Model& cpu, const std::vector<float>& gpu_grads) {
  const auto cpu_grads = cpu.grads();
  ASSERT_EQ(gpu_grads.size(), cpu_grads.size());
  for (const auto& view : cpu.paramViews())
    for (size_t i = view.offset; i < view.offset + view.count; ++i)
      ASSERT_TRUE(near(gpu_grads[i], cpu_grads[i], 1e-6, 1e-4))
          << view.name << "[" << i - view.offset << "]: " << gpu_grads[i] << " vs " << cpu_grads[i];
}

TEST(GpuModel, OneFp32StepMatchesTheCpuStep) {
  RM_REQUIRE_GPU();
  auto cpu = model::Model::create(smallMlp(), 7, kBatch);
  auto init = model::Model::create(smallMlp(), 7, kBatch);
  ASSERT_TRUE(cpu.ok() && init.ok());
  Rig rig;
  rig.init(**init, Precision::kFp32);
  const auto x = randomFloats(kBatch * 784, 1);
  const auto y = randomLabels(kBatch, 10, 2);
  int cpu_hits = 0;
  const float cpu_loss = (*cpu)->forwardLoss(x.data(), y.data(), kBatch, &cpu_hits);
  (*cpu)->backward({});
  std::vector<int> ready;
  rig.step(x, y, kBatch, &ready);
  EXPECT_EQ(ready, (std::vector<int>{2, 1, 0})) << "layers report ready last first";

  const LossTotals t = rig.readTotals();
  EXPECT_TRUE(near(t.loss_sum, cpu_loss, 1e-5, 1e-5)) << t.loss_sum << " vs " << cpu_loss;
  EXPECT_EQ(static_cast<int>(t.hits), cpu_hits);
  const auto gpu_grads = rig.download(rig.net->grads(), rig.net->numParams());
  const auto cpu_grads = (*cpu)->grads();
  ASSERT_EQ(gpu_grads.size(), cpu_grads.size());
  for (size_t i = 0; i < gpu_grads.size(); ++i)
    ASSERT_TRUE(near(gpu_grads[i], cpu_grads[i], 1e-6, 1e-4))
        << "gradient " << i << ": " << gpu_grads[i] << " vs " << cpu_grads[i];

  // The fused SGD update (scalars computed on the device at step 0) against the CPU's.
  optim::OptimizerConfig oc;
  oc.learning_rate = 0.05;
  oc.momentum = 0.9;
  oc.weight_decay = 1e-4;
  auto sgd = optim::Optimizer::create(oc, cpu_grads.size());
  ASSERT_TRUE(sgd.ok());
  (*sgd)->step((*cpu)->params(), cpu_grads);
  DeviceBuffer<float> momentum;
  DeviceBuffer<StepCounters> counters;
  DeviceBuffer<SgdScalars> scalars;
  ASSERT_TRUE(momentum.allocate(rig.net->numParams(), "momentum", true).ok());
  ASSERT_TRUE(counters.allocate(1, "counters", true).ok());
  ASSERT_TRUE(scalars.allocate(1, "scalars").ok());
  launchSgdScalars({oc.learning_rate, 0, false}, {0, 0.9f, 1e-4f, false}, counters.data(),
                   scalars.data(), rig.stream);
  launchSgdStep(rig.net->params(), rig.net->grads(), momentum.data(), rig.net->numParams(),
                scalars.data(), nullptr, rig.stream);
  ASSERT_EQ(cudaStreamSynchronize(rig.stream), cudaSuccess);
  const auto gpu_params = rig.download(rig.net->params(), rig.net->numParams());
  const auto cpu_params = (*cpu)->params();
  for (size_t i = 0; i < gpu_params.size(); ++i)
    ASSERT_TRUE(near(gpu_params[i], cpu_params[i], 1e-7, 1e-5))
        << "parameter " << i << ": " << gpu_params[i] << " vs " << cpu_params[i];
}

TEST(GpuModel, Bf16StepFollowsFp32) {
  RM_REQUIRE_GPU();
  auto a = model::Model::create(smallMlp(), 9, kBatch);
  auto b = model::Model::create(smallMlp(), 9, kBatch);
  ASSERT_TRUE(a.ok() && b.ok());
  Rig fp32, bf16;
  fp32.init(**a, Precision::kFp32);
  bf16.init(**b, Precision::kBf16);
  const auto x = randomFloats(kBatch * 784, 3);
  const auto y = randomLabels(kBatch, 10, 4);
  std::vector<int> ready_a, ready_b;
  fp32.step(x, y, kBatch, &ready_a);
  bf16.step(x, y, kBatch, &ready_b);
  EXPECT_NEAR(bf16.readTotals().loss_sum, fp32.readTotals().loss_sum, 2e-2);
  const auto ga = fp32.download(fp32.net->grads(), fp32.net->numParams());
  const auto gb = bf16.download(bf16.net->grads(), bf16.net->numParams());
  EXPECT_GT(cosine(ga, gb), 0.99) << "bf16 gradients point where fp32's do";
}

TEST(GpuModel, ShortBatchAndEvaluationCountLikeTheCpu) {
  RM_REQUIRE_GPU();
  auto cpu = model::Model::create(smallMlp(), 11, kBatch);
  auto init = model::Model::create(smallMlp(), 11, kBatch);
  ASSERT_TRUE(cpu.ok() && init.ok());
  Rig rig;
  rig.init(**init, Precision::kFp32);
  const int n = 5;
  const auto x = randomFloats(n * 784, 5);
  const auto y = randomLabels(n, 10, 6);
  double cpu_loss_sum = 0;
  const int cpu_hits = (*cpu)->evaluate(x.data(), y.data(), n, &cpu_loss_sum);
  cudaMemcpy(rig.net->input(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(rig.net->labels(), y.data(), y.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
  ASSERT_TRUE(rig.net->forwardLoss(n, /*train=*/false, 1.0, rig.totals.data(), rig.stream).ok());
  ASSERT_EQ(cudaStreamSynchronize(rig.stream), cudaSuccess);
  const LossTotals t = rig.readTotals();
  EXPECT_EQ(static_cast<int>(t.hits), cpu_hits);
  EXPECT_TRUE(near(t.loss_sum, cpu_loss_sum, 1e-5, 1e-5));
  EXPECT_FALSE(rig.net->prepare(kBatch + 1).ok()) << "batches beyond max_batch are refused";
}

// Three hidden layers: every layer's weight, bias and ReLU gradient checked on its own, where
// the cosine of all parameters together would hide one wrong bias gradient.
model::ModelConfig deeperMlp() {
  model::ModelConfig c;
  c.type = model::ModelKind::kMlp;
  c.hidden = {256, 128, 128};
  return c;
}

TEST(GpuModel, DeeperMlpStepMatchesTheCpuInFp32AndFollowsItInBf16) {
  RM_REQUIRE_GPU();
  auto cpu = model::Model::create(deeperMlp(), 17, kBatch);
  auto a = model::Model::create(deeperMlp(), 17, kBatch);
  auto b = model::Model::create(deeperMlp(), 17, kBatch);
  ASSERT_TRUE(cpu.ok() && a.ok() && b.ok());
  Rig fp32, bf16;
  fp32.init(**a, Precision::kFp32, deeperMlp());
  bf16.init(**b, Precision::kBf16, deeperMlp());
  const auto x = randomFloats(kBatch * 784, 19);
  const auto y = randomLabels(kBatch, 10, 20);
  int cpu_hits = 0;
  const float cpu_loss = (*cpu)->forwardLoss(x.data(), y.data(), kBatch, &cpu_hits);
  (*cpu)->backward({});
  std::vector<int> ready_a, ready_b;
  fp32.step(x, y, kBatch, &ready_a);
  bf16.step(x, y, kBatch, &ready_b);
  EXPECT_EQ(ready_a, (std::vector<int>{3, 2, 1, 0}));
  EXPECT_TRUE(near(fp32.readTotals().loss_sum, cpu_loss, 1e-5, 1e-5));
  EXPECT_EQ(static_cast<int>(fp32.readTotals().hits), cpu_hits);
  const auto ga = fp32.download(fp32.net->grads(), fp32.net->numParams());
  const auto gb = bf16.download(bf16.net->grads(), bf16.net->numParams());
  ASSERT_NO_FATAL_FAILURE(expectGradientsMatchTheCpu(**cpu, ga));
  for (const auto& view : (*cpu)->paramViews()) {
    // bf16 follows fp32 in each view on its own, biases included.
    const std::vector<float> va(ga.begin() + view.offset, ga.begin() + view.offset + view.count),
        vb(gb.begin() + view.offset, gb.begin() + view.offset + view.count);
    EXPECT_GT(cosine(va, vb), 0.98) << view.name << " in bf16";
  }
}

model::ModelConfig smallCnn() {
  model::ModelConfig c;
  c.type = model::ModelKind::kCnn;
  c.conv_channels = {4, 6};  // 28x28 -> 14x14 -> 7x7: the second pool drops an odd edge
  c.cnn_hidden = 24;
  return c;
}

TEST(GpuModel, OneFp32CnnStepMatchesTheCpuStep) {
  RM_REQUIRE_GPU();
  auto cpu = model::Model::create(smallCnn(), 13, kBatch);
  auto init = model::Model::create(smallCnn(), 13, kBatch);
  ASSERT_TRUE(cpu.ok() && init.ok()) << cpu.status().message();
  Rig rig;
  rig.init(**init, Precision::kFp32, smallCnn());
  const auto x = randomFloats(kBatch * 784, 7);
  const auto y = randomLabels(kBatch, 10, 8);
  int cpu_hits = 0;
  const float cpu_loss = (*cpu)->forwardLoss(x.data(), y.data(), kBatch, &cpu_hits);
  (*cpu)->backward({});
  std::vector<int> ready;
  rig.step(x, y, kBatch, &ready);
  EXPECT_EQ(ready, (std::vector<int>{3, 2, 1, 0})) << "dense layers, then the conv blocks";
  const LossTotals t = rig.readTotals();
  EXPECT_TRUE(near(t.loss_sum, cpu_loss, 1e-5, 1e-5)) << t.loss_sum << " vs " << cpu_loss;
  EXPECT_EQ(static_cast<int>(t.hits), cpu_hits);
  expectGradientsMatchTheCpu(**cpu, rig.download(rig.net->grads(), rig.net->numParams()));
}

TEST(GpuModel, Bf16CnnStepFollowsFp32) {
  RM_REQUIRE_GPU();
  auto a = model::Model::create(smallCnn(), 15, kBatch);
  auto b = model::Model::create(smallCnn(), 15, kBatch);
  ASSERT_TRUE(a.ok() && b.ok());
  Rig fp32, bf16;
  fp32.init(**a, Precision::kFp32, smallCnn());
  bf16.init(**b, Precision::kBf16, smallCnn());
  const auto x = randomFloats(kBatch * 784, 9);
  const auto y = randomLabels(kBatch, 10, 10);
  std::vector<int> ready_a, ready_b;
  fp32.step(x, y, kBatch, &ready_a);
  bf16.step(x, y, kBatch, &ready_b);
  const auto ga = fp32.download(fp32.net->grads(), fp32.net->numParams());
  const auto gb = bf16.download(bf16.net->grads(), bf16.net->numParams());
  EXPECT_GT(cosine(ga, gb), 0.98);
}

}  // namespace
}  // namespace ringmaster::trainer::gpu
