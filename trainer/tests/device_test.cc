// Where a rank trains: the device its backend lets it ask for, that request against the build
// and the visible GPUs, and the config checks that go with it.

#include "trainer/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/config.h"

namespace ringmaster::trainer {
namespace {

using contract::Device;
using ::testing::HasSubstr;

GpuAvailability loaded(int gpus) {
  return {.module_loaded = true, .why_not = "", .visible_gpus = gpus};
}
GpuAvailability absent(const std::string& why) {
  return {.module_loaded = false, .why_not = why, .visible_gpus = 0};
}

TEST(ResolveDevice, AutoTakesTheGpuWhenTheModuleLoadedAndOneIsVisible) {
  auto d = resolveDevice(Device::kAuto, loaded(2), /*local_rank=*/1);
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
    auto d = resolveDevice(Device::kAuto, c.gpu, 0);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_FALSE(d->cuda) << c.reason;
    EXPECT_THAT(d->reason, HasSubstr(c.reason));
  }
}

TEST(ResolveDevice, CpuIsAlwaysTheCpu) {
  auto d = resolveDevice(Device::kCpu, loaded(8), 3);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->cuda);
  auto without_module = resolveDevice(Device::kCpu, absent("no CUDA driver"), 0);
  ASSERT_TRUE(without_module.ok());
  EXPECT_FALSE(without_module->cuda);
}

TEST(ResolveDevice, CudaFailsClearlyWhereItCannotRun) {
  struct Case {
    Device requested;
    GpuAvailability gpu;
    int local_rank;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {Device::kCuda,
       absent("cannot load the GPU module x.so: libcudart.so.13: cannot open"),
       0,
       {"trainer.device: cuda, but cannot load the GPU module", "libcudart.so.13"}},
      {Device::kCuda, loaded(0), 0, {"no GPU is visible", "nvidia.com/gpu"}},
      {Device::kCuda, loaded(2), 2, {"local rank 2 has no GPU of its own"}},
  };
  for (const Case& c : cases) {
    auto d = resolveDevice(c.requested, c.gpu, c.local_rank);
    ASSERT_FALSE(d.ok()) << c.says[0];
    EXPECT_EQ(d.status().code(), core::Code::kInvalidArgument);
    for (const std::string& s : c.says) EXPECT_THAT(d.status().message(), HasSubstr(s));
  }
}

TEST(RequestedDevice, TheBackendPinsTheDeviceByTheContractsRules) {
  struct Case {
    const char* name;
    std::string backend;
    Device device;
    int32_t stages, tensor;
    contract::PipelineSchedule schedule;
    Device want;
  };
  using Schedule = contract::PipelineSchedule;
  const Case cases[] = {
      {"auto keeps auto", "auto", Device::kAuto, 1, 1, Schedule::kOneFOneB, Device::kAuto},
      {"nccl takes the GPU", "nccl", Device::kAuto, 1, 1, Schedule::kOneFOneB, Device::kCuda},
      {"a host backend takes the CPU", "tcp", Device::kAuto, 1, 1, Schedule::kOneFOneB,
       Device::kCpu},
      {"shm too", "shm", Device::kAuto, 1, 1, Schedule::kOneFOneB, Device::kCpu},
      {"a split model on auto stays on the CPU", "auto", Device::kAuto, 2, 1, Schedule::kOneFOneB,
       Device::kCpu},
      {"tensor ranks too", "auto", Device::kAuto, 1, 2, Schedule::kOneFOneB, Device::kCpu},
      {"pipeline stages on nccl take the GPU", "nccl", Device::kAuto, 2, 1, Schedule::kGPipe,
       Device::kCuda},
      {"an explicit device stays", "auto", Device::kCuda, 2, 1, Schedule::kOneFOneB, Device::kCuda},
      {"cpu stays cpu", "gloo", Device::kCpu, 1, 1, Schedule::kOneFOneB, Device::kCpu},
  };
  for (const Case& c : cases) {
    contract::TrainerSettings s = defaultTrainerSettings();
    s.device = c.device;
    s.pipeline.stages = c.stages;
    s.tensor = c.tensor;
    s.pipeline.schedule = c.schedule;
    auto d = requestedDevice(c.backend, s);
    ASSERT_TRUE(d.ok()) << c.name << ": " << d.status().message();
    EXPECT_EQ(*d, c.want) << c.name;
  }
}

TEST(RequestedDevice, ABackendThatCannotTrainTheSettingsIsRefusedNamingIt) {
  struct Case {
    std::string backend;
    Device device;
    int32_t stages, tensor;
    contract::PipelineSchedule schedule;
    std::string says;
  };
  using Schedule = contract::PipelineSchedule;
  const Case cases[] = {
      {"nccl", Device::kCpu, 1, 1, Schedule::kOneFOneB,
       "backend nccl: nccl needs the GPU, and spec.trainer.device is cpu"},
      {"nccl", Device::kAuto, 1, 2, Schedule::kOneFOneB,
       "backend nccl: nccl needs the GPU, and tensor-parallel ranks train on the CPU"},
      {"nccl", Device::kAuto, 2, 1, Schedule::kPipeDream,
       "backend nccl: nccl needs the GPU, and pipedream stages train on the CPU"},
      {"tcp", Device::kCuda, 1, 1, Schedule::kOneFOneB,
       "backend tcp: tcp reads host memory, and spec.trainer.device cuda"},
  };
  for (const Case& c : cases) {
    contract::TrainerSettings s = defaultTrainerSettings();
    s.device = c.device;
    s.pipeline.stages = c.stages;
    s.tensor = c.tensor;
    s.pipeline.schedule = c.schedule;
    auto d = requestedDevice(c.backend, s);
    ASSERT_FALSE(d.ok()) << c.says;
    EXPECT_EQ(d.status().code(), core::Code::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr(c.says));
  }
}

TEST(CheckPrecision, Bf16NeedsTheGpu) {
  DeviceChoice cpu;
  cpu.reason = "auto: no GPU visible";
  DeviceChoice gpu;
  gpu.cuda = true;
  EXPECT_TRUE(checkPrecision(contract::Precision::kFp32, cpu).ok());
  EXPECT_TRUE(checkPrecision(contract::Precision::kFp32, gpu).ok());
  EXPECT_TRUE(checkPrecision(contract::Precision::kBf16, gpu).ok());
  core::Status s = checkPrecision(contract::Precision::kBf16, cpu);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "trainer.precision: bf16 needs the GPU, and this rank trains on the CPU (auto: no GPU "
            "visible)");
}

TEST(DeviceConfig, PrecisionAndDeviceAreCheckedNamingTheKey) {
  auto parsed = parseTrainerConfig("device: cuda\nprecision: bf16\ncudaGraph: false\n", "job.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->settings.device, Device::kCuda);
  EXPECT_EQ(parsed->settings.precision, contract::Precision::kBf16);
  EXPECT_FALSE(parsed->settings.cuda_graph);

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
