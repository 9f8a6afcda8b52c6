#include "trainer/gpu/gpu_device_stage.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/gpu_stage.h"

namespace ringmaster::trainer::gpu {
namespace {

using core::Status;

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

class GpuDeviceStage final : public DeviceStage {
 public:
  ~GpuDeviceStage() override {
    stage_.reset();
    if (lt_) cublasLtDestroy(lt_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status init(model::ModelStage& host, int slots) {
    RM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                            "pipeline stage stream");
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&lt_), "cublasLtCreate");
    RM_RETURN_IF_ERROR(workspace_.allocate(kWorkspaceBytes, "GEMM workspace"));
    RM_ASSIGN_OR_RETURN(
        stage_,
        GpuStage::create(host, slots, {lt_, workspace_.data(), workspace_.size()}, stream_));
    return Status::Ok();
  }

  model::StageCompute& compute() override { return *stage_; }
  void* stream() override { return stream_; }

  Status downloadGrads(std::span<float> grads) override {
    RM_RETURN_IF_ERROR(matchesStage(grads.size(), "gradients"));
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(grads.data(), stage_->grads(), grads.size_bytes(),
                                            cudaMemcpyDeviceToHost, stream_),
                            "downloading the stage's gradients");
    return wait();
  }

  Status uploadParams(std::span<const float> params) override {
    RM_RETURN_IF_ERROR(matchesStage(params.size(), "parameters"));
    // From pageable memory the copy is staged before it returns: the caller may change `params`.
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(stage_->params(), params.data(), params.size_bytes(),
                                            cudaMemcpyHostToDevice, stream_),
                            "uploading the stage's parameters");
    return Status::Ok();
  }

  Status wait() override {
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "the stage's work on the GPU");
    return stage_->status();
  }

  size_t activationBytes() const override { return stage_->activationBytes(); }
  std::string describe() const override { return stage_->describe(); }

 private:
  // A host buffer of the stage's layout, or an error naming both sizes.
  Status matchesStage(size_t host_floats, const char* what) const {
    if (host_floats == stage_->numParams()) return Status::Ok();
    return core::internalError("pipeline stage on the GPU: " + std::to_string(host_floats) +
                               " host " + what + " for " + std::to_string(stage_->numParams()));
  }

  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer<uint8_t> workspace_;
  std::unique_ptr<GpuStage> stage_;
};

}  // namespace

core::Result<std::unique_ptr<DeviceStage>> makeGpuDeviceStage(model::ModelStage& host, int slots) {
  auto stage = std::make_unique<GpuDeviceStage>();
  RM_RETURN_IF_ERROR(stage->init(host, slots));
  return std::unique_ptr<DeviceStage>(std::move(stage));
}

}  // namespace ringmaster::trainer::gpu
