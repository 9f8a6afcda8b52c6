// resolveDevice: the trainer's `device` setting against the build and the visible GPUs, and the
// config checks that go with it.

#include "trainer/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/config.h"

namespace ringmaster::trainer {
namespace {

using ::testing::HasSubstr;

GpuAvailability loaded(int gpus) {
  return {.module_loaded = true, .why_not = "", .visible_gpus = gpus};
}
GpuAvailability absent(const std::string& why) {
  return {.module_loaded = false, .why_not = why, .visible_gpus = 0};
}

TEST(ResolveDevice, AutoTakesTheGpuWhenTheModuleLoadedAndOneIsVisible) {
  auto d = resolveDevice("auto", loaded(2), /*local_rank=*/1);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->cuda);
  EXPECT_EQ(d->ordinal, 1);
  EXPECT_THAT(d->reason, HasSubstr("2 GPUs visible, using GPU 1"));
}

TEST(ResolveDevice, AutoFallsBackToTheCpuSayingWhy) {
  struct Case {
    GpuAvailability gpu;
    std::string reason;
  };
  const Case cases[] = {
      {loaded(0), "auto: no GPU visible"},
      {absent("no CUDA driver (libcuda.so.1 not found)"),
       "auto: no CUDA driver (libcuda.so.1 not found)"},
      {absent("this ringmaster-trainer was built without CUDA"), "built without CUDA"},
  };
  for (const Case& c : cases) {
    auto d = resolveDevice("auto", c.gpu, 0);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_FALSE(d->cuda) << c.reason;
    EXPECT_THAT(d->reason, HasSubstr(c.reason));
  }
}

TEST(ResolveDevice, CpuIsAlwaysTheCpu) {
  auto d = resolveDevice("cpu", loaded(8), 3);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->cuda);
  auto without_module = resolveDevice("cpu", absent("no CUDA driver"), 0);
  ASSERT_TRUE(without_module.ok());
  EXPECT_FALSE(without_module->cuda);
}

TEST(ResolveDevice, CudaFailsClearlyWhereItCannotRun) {
  struct Case {
    std::string requested;
    GpuAvailability gpu;
    int local_rank;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {"cuda",
       absent("cannot load the GPU module x.so: libcudart.so.13: cannot open"),
       0,
       {"trainer.device: cuda, but cannot load the GPU module", "libcudart.so.13"}},
      {"cuda", loaded(0), 0, {"no GPU is visible", "nvidia.com/gpu"}},
      {"cuda", loaded(2), 2, {"local rank 2 has no GPU of its own"}},
      {"tpu", loaded(1), 0, {"trainer.device"}},
  };
  for (const Case& c : cases) {
    auto d = resolveDevice(c.requested, c.gpu, c.local_rank);
    ASSERT_FALSE(d.ok()) << c.requested;
    EXPECT_EQ(d.status().code(), core::Code::kInvalidArgument);
    for (const std::string& s : c.says) EXPECT_THAT(d.status().message(), HasSubstr(s));
  }
}

TEST(DeviceConfig, PrecisionAndDeviceAreCheckedNamingTheKey) {
  auto parsed = parseTrainerConfig("device: cuda\nprecision: bf16\ncudaGraph: false\n", "job.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->device, "cuda");
  EXPECT_EQ(parsed->precision, "bf16");
  EXPECT_FALSE(parsed->cuda_graph);

  auto fp16 = parseTrainerConfig("precision: fp16\n", "job.yaml");
  ASSERT_FALSE(fp16.ok());
  EXPECT_THAT(fp16.status().message(),
              HasSubstr("trainer.precision: must be one of fp32, bf16, got \"fp16\""));
  auto bf16_on_cpu = parseTrainerConfig("device: cpu\nprecision: bf16\n", "job.yaml");
  ASSERT_FALSE(bf16_on_cpu.ok());
  EXPECT_THAT(bf16_on_cpu.status().message(), HasSubstr("bf16 runs on the GPU only"));
  // The backend is the job's (spec.backend, the rank's RINGMASTER_BACKEND), not spec.trainer's.
  auto backend = parseTrainerConfig("device: cpu\nbackend: nccl\n", "job.yaml");
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.status().message(), HasSubstr("trainer.backend: unknown field"));
  auto gpu_word = parseTrainerConfig("device: gpu\n", "job.yaml");
  ASSERT_FALSE(gpu_word.ok());
  EXPECT_THAT(gpu_word.status().message(),
              HasSubstr("trainer.device: must be one of auto, cpu, cuda"));
}

}  // namespace
}  // namespace ringmaster::trainer
