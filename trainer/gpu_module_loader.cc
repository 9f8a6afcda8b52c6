// Finds and dlopens the GPU module (gpu_module.h); the only file of the trainer that knows how.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "ringmaster/core/log.h"
#include "trainer/gpu_module.h"

namespace ringmaster::trainer {
namespace {

namespace fs = std::filesystem;

std::string lastDlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

LoadedGpu unavailable(std::string why) {
  LoadedGpu out;
  out.availability.why_not = std::move(why);
  return out;
}

}  // namespace

std::string gpuModulePath() {
  if (const char* env = std::getenv("RINGMASTER_GPU_MODULE"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string("lib/ringmaster/") + kGpuModuleFile;
  return (exe.parent_path().parent_path() / "lib" / "ringmaster" / kGpuModuleFile).string();
}

LoadedGpu loadGpuModule(contract::Device device) {
  if (device == contract::Device::kCpu) return unavailable("device cpu");
  if (device == contract::Device::kAuto) {
    // The driver comes with the GPU (the container runtime mounts it in); without it there is
    // no GPU to find, and a CPU machine need not have the CUDA runtime at all.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) return unavailable("no CUDA driver (" + lastDlError() + ")");
    dlclose(driver);
  }
  const std::string path = gpuModulePath();
  std::error_code ec;
  if (!fs::exists(path, ec))
    return unavailable("this ringmaster-trainer has no GPU module (" + path +
                       " is absent: built without CUDA, or RINGMASTER_GPU_MODULE is wrong)");
  // RTLD_NOW: a symbol the executable does not export fails here, not mid-run.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return unavailable("cannot load the GPU module: " + lastDlError());
  auto entry = reinterpret_cast<GpuModuleEntry>(dlsym(handle, kGpuModuleEntry));
  if (entry == nullptr)
    return unavailable("the GPU module " + path + " has no entry point " + kGpuModuleEntry);
  const GpuModuleAbi abi = thisGpuModuleAbi();
  GpuModule* module = entry(&abi);
  if (module == nullptr)
    return unavailable("the GPU module " + path +
                       " was built from a different source tree than this trainer (ABI mismatch)");
  // Never dlclose'd: the CUDA libraries keep threads and handlers that outlive any caller.
  LoadedGpu out;
  out.module = module;
  out.availability.module_loaded = true;
  out.availability.visible_gpus = module->visibleGpuCount();
  RM_LOG(DEBUG, CONFIG) << "loaded the GPU module " << path << " (" << out.availability.visible_gpus
                        << " GPUs visible)";
  return out;
}

}  // namespace ringmaster::trainer
