#pragma once
// The worker side of parameter-server training. Per step a PsWorker pulls every server's pieces
// (through a ServerConnection), scatters them into the model's flat parameter buffer, runs
// forward and backward on its batch, gathers each server's pieces from the flat gradient buffer
// and pushes them back. The model, the optimizer math (on the servers) and the data order are
// the data-parallel trainer's: ShardBatches gives worker w of W the batches data-parallel rank w
// of W trains on, so sync training matches allreduce-mean data parallelism step for step.
//
// Also here: FlatLayout (the model's tensors as the shard plan sees them, and where they lie in
// the flat buffers), the in-process connection, and helpers that start servers from a model's
// parameters and read the parameters back from them.
//
// Thread-safety: a PsWorker, its model, its connections and a ShardBatches belong to one thread;
// InProcConnection forwards to a ParameterServer, which any number of workers share.
// Failure: pulls and pushes return the server's error with the worker, step and server in front;
// after a failed step the model holds a mix of old and new values and the step must be redone
// from its pull. Sizes that disagree (plan, layout, model, connections) fail create() with
// kInvalidArgument; gatherPieces/scatterPieces take them as a contract and abort when broken.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/data/sampler.h"
#include "trainer/model/model.h"
#include "trainer/ps/parameter_server.h"
#include "trainer/ps/shard_plan.h"

namespace ringmaster::trainer::ps {

// The model's tensors in the order planShards gets them, and where each starts in the flat
// parameter (and gradient) buffer.
struct FlatLayout {
  std::vector<TensorInfo> tensors;
  std::vector<size_t> offsets;  // [tensor]
  size_t size = 0;              // floats in the flat buffer

  static FlatLayout of(const std::vector<model::ParamView>& views);
};

// Copies the elements of `pieces` from `flat` into `out`, concatenated in the pieces' order
// (`out` holds exactly their elements); scatterPieces is the way back.
void gatherPieces(std::span<const Piece> pieces, const FlatLayout& layout,
                  std::span<const float> flat, std::span<float> out);
void scatterPieces(std::span<const Piece> pieces, const FlatLayout& layout,
                   std::span<const float> in, std::span<float> flat);

// The servers of `plan`, each holding its pieces of `params` (the flat buffer of `layout`).
core::Result<std::vector<std::unique_ptr<ParameterServer>>> makeServers(
    const ShardPlan& plan, const FlatLayout& layout, std::span<const float> params, int workers,
    const ServerOptions& options);
// The flat parameter buffer put together from the servers' current values.
std::vector<float> assembleParameters(std::span<const std::unique_ptr<ParameterServer>> servers,
                                      const FlatLayout& layout);

// How a worker reaches one server; a networked version sends these as requests.
class ServerConnection {
 public:
  virtual ~ServerConnection() = default;
  virtual core::Status pull(WorkerId worker, int64_t step, std::span<float> values,
                            PullView view = PullView::kForStep) = 0;
  virtual core::Status push(WorkerId worker, int64_t step, std::span<const float> gradients) = 0;
  // The pushes the server had taken (from every worker) when it answered this worker's last push.
  virtual uint64_t serverPushes() const = 0;
};

// Calls a ParameterServer of the same process (borrowed; it must outlive the connection).
class InProcConnection final : public ServerConnection {
 public:
  explicit InProcConnection(ParameterServer* server) : server_(*server) {}
  core::Status pull(WorkerId worker, int64_t step, std::span<float> values,
                    PullView view = PullView::kForStep) override {
    return server_.pull(worker, step, values, view);
  }
  core::Status push(WorkerId worker, int64_t step, std::span<const float> gradients) override {
    RM_RETURN_IF_ERROR(server_.push(worker, step, gradients));
    server_pushes_ = server_.pushes();
    return core::Status::Ok();
  }
  uint64_t serverPushes() const override { return server_pushes_; }

 private:
  ParameterServer& server_;
  uint64_t server_pushes_ = 0;
};

// The batches of data-parallel rank `shard` of `shards`: step k trains batch k mod
// batchesPerEpoch() of epoch k / batchesPerEpoch() of the sampler's strided shard, as that rank
// of the data-parallel trainer does. Requires ShardedSampler::validate(train.size(), shard,
// shards).ok() and batch >= 1; borrows `train`.
class ShardBatches {
 public:
  ShardBatches(const data::Dataset& train, int shard, int shards, int batch, uint64_t seed);
  int64_t batchesPerEpoch() const { return batches_per_epoch_; }
  // Gathers step `step`'s batch; returns how many samples it holds.
  int load(int64_t step);
  const float* images() const { return images_.data(); }
  const int32_t* labels() const { return labels_.data(); }

 private:
  const data::Dataset& train_;
  const int batch_;
  data::ShardedSampler sampler_;
  int64_t batches_per_epoch_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
};

// Where a worker's step went, and what it moved: pull() fills the pull half, computeAndPush()
// the rest.
struct WorkerStepTiming {
  double pull_seconds = 0;     // every server's pieces in, the servers' waits included
  double compute_seconds = 0;  // forward and backward
  double push_seconds = 0;     // every server's gradients out
  size_t bytes_pulled = 0, bytes_pushed = 0;
  uint64_t server_pushes = 0;  // the fewest pushes any server had taken, after this step's
};

class PsWorker {
 public:
  // servers[s] reaches server s of `plan`; the model and the connections are borrowed. `layout`
  // must be FlatLayout::of(model->paramViews()) and the one `plan` was made from.
  static core::Result<std::unique_ptr<PsWorker>> create(WorkerId id, model::Model* model,
                                                        ShardPlan plan, FlatLayout layout,
                                                        std::vector<ServerConnection*> servers);

  WorkerId id() const { return id_; }
  // Pulls step `step`'s values of every piece into the model's parameters: for that step (a loose
  // server looks ahead), or as they stand (the final parameters).
  core::Status pull(int64_t step, PullView view = PullView::kForStep);
  // Forward and backward on the batch with the pulled parameters, then pushes every server's
  // gradients for `step`. Returns the batch's mean loss.
  core::Result<float> computeAndPush(int64_t step, const float* images, const int32_t* labels,
                                     int samples);
  // One whole step: pull, then computeAndPush on batches.load(step).
  core::Result<float> step(int64_t step, ShardBatches& batches);
  // Steps [first, first + count); returns their losses.
  core::Result<std::vector<float>> run(int64_t first, int64_t count, ShardBatches& batches);
  // The last step's (or pull's) timing.
  const WorkerStepTiming& lastStep() const { return last_; }

 private:
  PsWorker(WorkerId id, model::Model& model, ShardPlan plan, FlatLayout layout,
           std::vector<ServerConnection*> servers);
  std::string where(int64_t step, int server) const;

  const WorkerId id_;
  model::Model& model_;
  const ShardPlan plan_;
  const FlatLayout layout_;
  const std::vector<ServerConnection*> servers_;
  std::vector<std::vector<float>> buffers_;  // [server]: its pieces, pulled or to push
  WorkerStepTiming last_;
};

}  // namespace ringmaster::trainer::ps
