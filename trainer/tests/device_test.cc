// resolveDevice: the trainer's `device` setting against the build and the visible GPUs, and the
// config checks that go with it.

#include "trainer/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trainer/config.h"

namespace ringmaster::trainer {
namespace {

using ::testing::HasSubstr;

TEST(ResolveDevice, AutoTakesTheGpuWhenBuiltAndVisible) {
  auto d = resolveDevice("auto", /*cuda_built=*/true, /*visible_gpus=*/2, /*local_rank=*/1);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->cuda);
  EXPECT_EQ(d->ordinal, 1);
  EXPECT_THAT(d->reason, HasSubstr("2 GPUs visible, using GPU 1"));
}

TEST(ResolveDevice, AutoFallsBackToTheCpuSayingWhy) {
  auto no_gpu = resolveDevice("auto", true, 0, 0);
  ASSERT_TRUE(no_gpu.ok());
  EXPECT_FALSE(no_gpu->cuda);
  EXPECT_THAT(no_gpu->reason, HasSubstr("no GPU visible"));
  auto no_cuda = resolveDevice("auto", false, 4, 0);
  ASSERT_TRUE(no_cuda.ok());
  EXPECT_FALSE(no_cuda->cuda);
  EXPECT_THAT(no_cuda->reason, HasSubstr("built without CUDA"));
}

TEST(ResolveDevice, CpuIsAlwaysTheCpu) {
  auto d = resolveDevice("cpu", true, 8, 3);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->cuda);
}

TEST(ResolveDevice, CudaFailsClearlyWhereItCannotRun) {
  auto unbuilt = resolveDevice("cuda", false, 1, 0);
  ASSERT_FALSE(unbuilt.ok());
  EXPECT_THAT(unbuilt.status().message(), HasSubstr("built without CUDA"));
  auto invisible = resolveDevice("cuda", true, 0, 0);
  ASSERT_FALSE(invisible.ok());
  EXPECT_THAT(invisible.status().message(), HasSubstr("no GPU is visible"));
  EXPECT_THAT(invisible.status().message(), HasSubstr("nvidia.com/gpu"));
  auto shared = resolveDevice("cuda", true, 2, 2);
  ASSERT_FALSE(shared.ok());
  EXPECT_THAT(shared.status().message(), HasSubstr("local rank 2 has no GPU of its own"));
  auto unknown = resolveDevice("tpu", true, 1, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("trainer.device"));
}

TEST(DeviceConfig, PrecisionAndDeviceAreCheckedNamingTheKey) {
  auto parsed = parseTrainerConfig("device: cuda\nprecision: bf16\ncudaGraph: false\n", "job.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->device, "cuda");
  EXPECT_EQ(parsed->precision, "bf16");
  EXPECT_FALSE(parsed->cuda_graph);

  auto fp16 = parseTrainerConfig("precision: fp16\n", "job.yaml");
  ASSERT_FALSE(fp16.ok());
  EXPECT_THAT(fp16.status().message(), HasSubstr("trainer.precision: must be fp32 or bf16"));
  auto bf16_on_cpu = parseTrainerConfig("device: cpu\nprecision: bf16\n", "job.yaml");
  ASSERT_FALSE(bf16_on_cpu.ok());
  EXPECT_THAT(bf16_on_cpu.status().message(), HasSubstr("bf16 runs on the GPU only"));
  auto nccl_on_cpu = parseTrainerConfig("device: cpu\nbackend: nccl\n", "job.yaml");
  ASSERT_FALSE(nccl_on_cpu.ok());
  EXPECT_THAT(nccl_on_cpu.status().message(), HasSubstr("trainer.backend"));
  auto gpu_word = parseTrainerConfig("device: gpu\n", "job.yaml");
  ASSERT_FALSE(gpu_word.ok());
  EXPECT_THAT(gpu_word.status().message(), HasSubstr("trainer.device: must be auto, cpu or cuda"));
}

}  // namespace
}  // namespace ringmaster::trainer
