// The product as scripts/run-main builds it: ringmaster-trainer itself never links CUDA (the
// CUDA libraries' static TLS would shrink every thread's stack, and a CPU machine need not have
// them); where the build has CUDA, the GPU module loads from the real binary with every symbol
// resolved; a rank that trains on the CPU maps no CUDA library while it serves /metrics.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "process.h"

namespace ringmaster::testutil {
namespace {

using namespace std::chrono_literals;

const char* const kCudaLibraries[] = {"libcuda.", "libcudart", "libcublas", "libnccl"};

std::string trainer() { return binaryPath("bin/ringmaster-trainer"); }
std::string gpuModule() { return binaryPath("lib/ringmaster/libringmaster-trainer-cuda.so"); }

// The first CUDA library named in `text` ("" when none).
std::string cudaLibraryIn(const std::string& text) {
  for (const char* lib : kCudaLibraries)
    if (text.find(lib) != std::string::npos) return lib;
  return "";
}

bool cudaDriverPresent() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

TEST(ProductBuild, TheTrainerNeedsNoCudaLibrary) {
  ProcessResult r = run({"/usr/bin/readelf", "--dynamic", trainer()}, {}, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::string needed;
  for (size_t at = r.stdout_text.find("(NEEDED)"); at != std::string::npos;
       at = r.stdout_text.find("(NEEDED)", at + 1))
    needed += r.stdout_text.substr(at, r.stdout_text.find('\n', at) - at) + "\n";
  ASSERT_FALSE(needed.empty()) << r.stdout_text;
  EXPECT_EQ(cudaLibraryIn(needed), "") << "ringmaster-trainer links CUDA at load time:\n" << needed;
}

TEST(ProductBuild, TheGpuModuleLoadsFromTheRealTrainer) {
  if (!std::filesystem::exists(gpuModule()))
    GTEST_SKIP() << "built without CUDA: no " << gpuModule();
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  // device cuda always loads the module (RTLD_NOW: an unresolved symbol fails the load); then
  // either a GPU trains a few steps or the module says that none is visible.
  ProcessResult r = run(
      {trainer(), "--device", "cuda", "--epochs", "1", "--max-steps", "3", "--metrics-port", "-1"},
      {}, 300s);
  EXPECT_EQ(r.stderr_text.find("cannot load the GPU module"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("ABI mismatch"), std::string::npos) << r.stderr_text;
  if (r.exit_code == 0) {
    EXPECT_NE(r.stderr_text.find("visible, using GPU 0"), std::string::npos) << r.stderr_text;
  } else {
    EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("trainer.device: cuda, but no GPU is visible"), std::string::npos)
        << r.stderr_text;
  }
}

TEST(ProductBuild, ACpuRankServesMetricsWithoutMappingCuda) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  if (cudaDriverPresent()) GTEST_SKIP() << "a CUDA driver is present: auto would use the GPU";
  const int port = freePort();
  Process p(
      {trainer(), "--device", "auto", "--epochs", "50", "--metrics-port", std::to_string(port)});
  p.start();
  std::string body;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline && p.running()) {
    body = httpGet(port, "/metrics").body;
    if (body.find("ringmaster_trainer_steps_total") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);  // polling a live process
  }
  const std::string maps = readFile("/proc/" + std::to_string(p.pid()) + "/maps");
  p.signal(SIGTERM);
  ProcessResult r = p.wait(60s);
  EXPECT_NE(body.find("ringmaster_trainer_steps_total"), std::string::npos)
      << "no /metrics from the trainer:\n"
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("device: auto: no CUDA driver"), std::string::npos) << r.stderr_text;
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(cudaLibraryIn(maps), "") << "a CPU rank mapped a CUDA library";
  EXPECT_EQ(r.exit_code, 143) << r.stderr_text;
}

}  // namespace
}  // namespace ringmaster::testutil
