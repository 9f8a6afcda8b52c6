#include "trainer/gpu/gpu_trainer.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "ringmaster/core/log.h"
#include "trainer/cuda/cuda_status.h"
#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/gpu_model.h"
#include "trainer/gpu/kernels.h"
#include "trainer/gradient_buckets.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"
#include "trainer/resume.h"
#include "trainer/run_report.h"

namespace ringmaster::trainer::gpu {

using Clock = std::chrono::steady_clock;
using core::Result;
using core::Status;

namespace {

// cuBLASLt's recommended workspace on Hopper.
constexpr size_t kGemmWorkspaceBytes = 32u << 20;
// One step in this many (per epoch) runs eagerly with timing events.
constexpr int64_t kTimedStepInterval = 50;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A data set in device memory, rows converted to the training precision once.
struct DeviceDataset {
  DeviceBuffer<uint8_t> rows;
  DeviceBuffer<int32_t> labels;
  size_t size = 0;

  Status upload(const data::Dataset& d, Precision precision, cudaStream_t stream,
                const std::string& name) {
    size = d.size();
    const size_t count = d.images.size();
    RM_RETURN_IF_ERROR(labels.allocate(d.labels.size(), name + " labels"));
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(labels.data(), d.labels.data(), d.labels.size() * sizeof(int32_t),
                        cudaMemcpyHostToDevice, stream),
        "uploading " + name + " labels");
    if (precision == Precision::kFp32) {
      RM_RETURN_IF_ERROR(rows.allocate(count * sizeof(float), name + " images"));
      RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(rows.data(), d.images.data(), count * sizeof(float),
                                              cudaMemcpyHostToDevice, stream),
                              "uploading " + name + " images");
      return cudaStatus(cudaStreamSynchronize(stream), "uploading " + name);
    }
    DeviceBuffer<float> staging;
    RM_RETURN_IF_ERROR(staging.allocate(count, name + " images (fp32 staging)"));
    RM_RETURN_IF_ERROR(rows.allocate(count * sizeof(uint16_t), name + " images (bf16)"));
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging.data(), d.images.data(), count * sizeof(float),
                                            cudaMemcpyHostToDevice, stream),
                            "uploading " + name + " images");
    launchFloatToBf16(staging.data(), reinterpret_cast<uint16_t*>(rows.data()), count, stream);
    return cudaStatus(cudaStreamSynchronize(stream), "converting " + name + " to bf16");
  }
};

}  // namespace

struct GpuTrainer::State {
  cudaStream_t compute = nullptr, comm = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer<uint8_t> gemm_workspace;
  std::unique_ptr<model::Model> host_model;  // init, layout, checkpoint mirror
  std::unique_ptr<optim::Optimizer> host_optimizer;
  std::unique_ptr<GpuModel> net;
  std::vector<DeviceBuffer<float>> optimizer_state;  // as host_optimizer->state()
  DeviceDataset train, test;
  DeviceBuffer<FeistelPermutation> permutation;
  DeviceBuffer<StepCounters> counters;
  DeviceBuffer<SgdScalars> sgd_scalars;
  DeviceBuffer<AdamScalars> adam_scalars;
  DeviceBuffer<LossTotals> totals;  // [0] this epoch's training, [1] evaluation
  std::vector<Bucket> buckets;
  std::vector<std::vector<size_t>> buckets_at_layer;  // launched when the layer is ready
  std::vector<cudaEvent_t> layer_ready;
  cudaEvent_t comm_done = nullptr;
  // Timing (eager, timed steps only).
  std::vector<cudaEvent_t> bucket_start, bucket_end;
  cudaEvent_t backward_end = nullptr, timed_comm_done = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;

  ~State() {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    for (auto* list : {&layer_ready, &bucket_start, &bucket_end})
      for (cudaEvent_t e : *list) cudaEventDestroy(e);
    for (cudaEvent_t e : {comm_done, backward_end, timed_comm_done})
      if (e) cudaEventDestroy(e);
    net.reset();
    if (lt) cublasLtDestroy(lt);
    if (compute) cudaStreamDestroy(compute);
    if (comm) cudaStreamDestroy(comm);
  }
};

GpuTrainer::GpuTrainer(TrainerConfig config, TrainerContext context)
    : config_(std::move(config)), ctx_(context), state_(std::make_unique<State>()) {}
GpuTrainer::~GpuTrainer() = default;

std::vector<float> GpuTrainer::parameters() const {
  if (!state_->net) return {};
  std::vector<float> out(state_->net->numParams());
  if (cudaMemcpy(out.data(), state_->net->params(), out.size() * sizeof(float),
                 cudaMemcpyDeviceToHost) != cudaSuccess)
    return {};
  return out;
}

namespace {

Status makeEvent(cudaEvent_t* e, bool timing, const char* what) {
  return cudaStatus(cudaEventCreateWithFlags(e, timing ? cudaEventDefault : cudaEventDisableTiming),
                    what);
}

}  // namespace

Result<TrainSummary> GpuTrainer::run() {
  State& st = *state_;
  comm::Communicator& comm = *ctx_.comm;
  comm::DeviceCollectives* collectives = comm.deviceCollectives();
  const int rank = comm.rank();
  const int world = comm.size();
  const std::string who = "rank " + std::to_string(rank);
  if (collectives == nullptr)
    return core::invalidArgument(who + ": device cuda needs the nccl backend, got '" +
                                 comm.backend() + "'");
  const Precision precision = config_.precision == "bf16" ? Precision::kBf16 : Precision::kFp32;
  const auto batch = static_cast<int>(config_.batch_size);
  const data::Dataset& train = *ctx_.train;
  const data::Dataset& test = *ctx_.test;

  RM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&st.compute, cudaStreamNonBlocking),
                          "compute stream");
  RM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&st.comm, cudaStreamNonBlocking),
                          "communication stream");
  RM_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&st.lt), "cublasLtCreate");
  RM_RETURN_IF_ERROR(st.gemm_workspace.allocate(kGemmWorkspaceBytes, "GEMM workspace"));

  // The host model gives the initialization (same seed, same values as the CPU path) and is the
  // mirror that checkpoints are written from and restored into; it never runs a batch, so its
  // activations are sized for one sample.
  RM_ASSIGN_OR_RETURN(st.host_model, model::Model::create(config_.model, config_.seed, 1));
  model::Model& host_model = *st.host_model;
  if (host_model.inputSize() != train.featureSize())
    return core::invalidArgument("model expects " + std::to_string(host_model.inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(train.featureSize()));
  RM_ASSIGN_OR_RETURN(st.host_optimizer,
                      optim::Optimizer::create(config_.optimizer, host_model.params().size()));
  optim::Optimizer& host_optimizer = *st.host_optimizer;

  TrainSummary summary;
  summary.world_size = world;
  summary.backend = comm.backend();
  summary.model_signature = host_model.signature();
  summary.device = "cuda";
  summary.precision = precisionName(precision);
  Position pos;
  RM_RETURN_IF_ERROR(
      restoreOrSync(config_, comm, host_model, host_optimizer, &pos, &summary.resumed_from_step));

  RM_ASSIGN_OR_RETURN(
      st.net, GpuModel::create(host_model, config_.model, precision, batch,
                               {st.lt, st.gemm_workspace.data(), kGemmWorkspaceBytes}, st.compute));
  GpuModel& net = *st.net;
  const size_t num_params = net.numParams();
  for (std::vector<float>* buffer : host_optimizer.state()) {
    DeviceBuffer<float> d;
    RM_RETURN_IF_ERROR(d.allocate(num_params, "optimizer state"));
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(d.data(), buffer->data(), num_params * sizeof(float), cudaMemcpyHostToDevice),
        "uploading optimizer state");
    st.optimizer_state.push_back(std::move(d));
  }
  RM_RETURN_IF_ERROR(st.train.upload(train, precision, st.compute, "training set"));
  RM_RETURN_IF_ERROR(st.test.upload(test, precision, st.compute, "test set"));
  RM_RETURN_IF_ERROR(st.permutation.allocate(1, "permutation"));
  RM_RETURN_IF_ERROR(st.counters.allocate(1, "step counters", /*zero=*/true));
  RM_RETURN_IF_ERROR(st.sgd_scalars.allocate(1, "SGD scalars"));
  RM_RETURN_IF_ERROR(st.adam_scalars.allocate(1, "Adam scalars"));
  RM_RETURN_IF_ERROR(st.totals.allocate(2, "loss totals", /*zero=*/true));

  // Buckets as the CPU trainer plans them; bucket b is complete once every layer at or above
  // its first parameter is, so it launches when that layer reports ready.
  st.buckets = planBuckets(host_model.paramViews(),
                           static_cast<size_t>(config_.first_bucket_cap_mb * (1 << 20)),
                           static_cast<size_t>(config_.bucket_cap_mb * (1 << 20)));
  const int layers = net.numLayers();
  std::vector<size_t> layer_offsets;
  for (int i = 0; i < layers; ++i) layer_offsets.push_back(net.layerOffset(i));
  st.buckets_at_layer = bucketsByReadyLayer(st.buckets, layer_offsets);
  st.layer_ready.resize(layers);
  for (auto& e : st.layer_ready) RM_RETURN_IF_ERROR(makeEvent(&e, false, "layer event"));
  RM_RETURN_IF_ERROR(makeEvent(&st.comm_done, false, "communication event"));
  st.bucket_start.resize(st.buckets.size());
  st.bucket_end.resize(st.buckets.size());
  for (auto& e : st.bucket_start) RM_RETURN_IF_ERROR(makeEvent(&e, true, "timing event"));
  for (auto& e : st.bucket_end) RM_RETURN_IF_ERROR(makeEvent(&e, true, "timing event"));
  RM_RETURN_IF_ERROR(makeEvent(&st.backward_end, true, "timing event"));
  RM_RETURN_IF_ERROR(makeEvent(&st.timed_comm_done, true, "timing event"));

  const size_t shard = (train.size() - train.size() % world) / world;
  const auto num_batches = static_cast<int64_t>((shard + batch - 1) / batch);
  const LrSchedule schedule{config_.optimizer.learning_rate,
                            static_cast<double>(config_.epochs) * static_cast<double>(num_batches),
                            config_.lr_schedule == "cosine"};
  const bool adam = host_optimizer.type() == "adam";
  const SgdScalars sgd_base{0.0f, static_cast<float>(config_.optimizer.momentum),
                            static_cast<float>(config_.optimizer.weight_decay),
                            config_.optimizer.nesterov};
  const AdamHyper adam_hyper{config_.optimizer.beta1, config_.optimizer.beta2,
                             config_.optimizer.weight_decay, config_.optimizer.epsilon};
  const int64_t optimizer_steps_at_start = host_optimizer.stepCount();
  {
    StepCounters c{pos.step_in_epoch, pos.step, optimizer_steps_at_start};
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpy(st.counters.data(), &c, sizeof c, cudaMemcpyHostToDevice),
                            "initializing step counters");
  }
  if (rank == 0)
    RM_LOG(INFO, STEP) << host_model.signature() << " on the GPU: " << num_params
                       << " parameters in " << st.buckets.size() << " gradient bucket(s); "
                       << net.describe() << "; world size " << world << ", backend "
                       << comm.backend() << (config_.cuda_graph ? ", CUDA graph" : "");

  // Enqueues one step of n samples; `timed` records the timing events.
  bool timed = false;
  auto enqueueStep = [&](int n) -> Status {
    BatchSource source{st.permutation.data(), &st.counters.data()->cursor, 0, rank, world, batch};
    launchGatherBatch(st.train.rows.data(), st.train.labels.data(),
                      static_cast<int>(net.inputSize()), source, n, net.input(), net.labels(),
                      precision, st.compute);
    RM_RETURN_IF_ERROR(net.forwardLoss(n, /*train=*/true, 1.0 / n, st.totals.data(), st.compute));
    Status launch;
    RM_RETURN_IF_ERROR(net.backward(n, st.compute, [&](int layer) {
      if (!launch.ok() || st.buckets_at_layer[layer].empty()) return;
      launch = cudaStatus(cudaEventRecord(st.layer_ready[layer], st.compute), "layer event");
      if (launch.ok())
        launch = cudaStatus(cudaStreamWaitEvent(st.comm, st.layer_ready[layer], 0), "wait");
      for (size_t b : st.buckets_at_layer[layer]) {
        if (!launch.ok()) return;
        if (timed) cudaEventRecord(st.bucket_start[b], st.comm);
        // Alone, the average is the gradient itself: NCCL would still pass over every byte.
        if (world > 1)
          launch = collectives->allreduceAverageAsync(net.grads() + st.buckets[b].offset,
                                                      st.buckets[b].count, st.comm);
        if (timed) cudaEventRecord(st.bucket_end[b], st.comm);
      }
    }));
    RM_RETURN_IF_ERROR(launch);
    if (timed) cudaEventRecord(st.backward_end, st.compute);
    RM_CUDA_RETURN_IF_ERROR(cudaEventRecord(st.comm_done, st.comm), "communication event");
    if (timed) cudaEventRecord(st.timed_comm_done, st.comm);
    RM_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(st.compute, st.comm_done, 0), "join");
    uint16_t* bf16 = net.bf16Params();
    if (adam) {
      launchAdamScalars(schedule, adam_hyper, st.counters.data(), st.adam_scalars.data(),
                        st.compute);
      launchAdamStep(net.params(), net.grads(), st.optimizer_state[0].data(),
                     st.optimizer_state[1].data(), num_params, st.adam_scalars.data(), bf16,
                     st.compute);
    } else {
      launchSgdScalars(schedule, sgd_base, st.counters.data(), st.sgd_scalars.data(), st.compute);
      launchSgdStep(net.params(), net.grads(),
                    st.optimizer_state.empty() ? nullptr : st.optimizer_state[0].data(), num_params,
                    st.sgd_scalars.data(), bf16, st.compute);
    }
    launchAdvance(st.counters.data(), st.compute);
    return cudaStatus(cudaGetLastError(), "launching the step's kernels");
  };

  // Captures a full-batch step as a graph; on failure training goes on eagerly.
  auto captureGraph = [&]() -> Status {
    RM_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(st.compute, cudaStreamCaptureModeThreadLocal),
                            "begin graph capture");
    Status enqueued = enqueueStep(batch);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(st.compute, &graph);
    if (!enqueued.ok()) {
      if (graph) cudaGraphDestroy(graph);
      return enqueued.withContext("capturing the step");
    }
    RM_CUDA_RETURN_IF_ERROR(ended, "end graph capture");
    st.graph = graph;
    RM_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&st.graph_exec, graph, 0),
                            "instantiating the step graph");
    return Status::Ok();
  };
  bool use_graph = config_.cuda_graph;

  // Copies the device's parameters and optimizer state into the host mirror.
  auto mirrorToHost = [&]() -> Status {
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.compute), "finishing the steps");
    RM_RETURN_IF_ERROR(collectives->asyncError());
    auto params = host_model.params();
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(params.data(), net.params(), params.size_bytes(), cudaMemcpyDeviceToHost),
        "downloading parameters");
    auto state = host_optimizer.state();
    for (size_t i = 0; i < state.size(); ++i)
      RM_CUDA_RETURN_IF_ERROR(cudaMemcpy(state[i]->data(), st.optimizer_state[i].data(),
                                         num_params * sizeof(float), cudaMemcpyDeviceToHost),
                              "downloading optimizer state");
    StepCounters c;
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpy(&c, st.counters.data(), sizeof c, cudaMemcpyDeviceToHost),
                            "step counters");
    host_optimizer.setStepCount(c.optimizer_steps);
    return Status::Ok();
  };
  auto checkpointAt = [&](const Position& at) -> Status {
    RM_RETURN_IF_ERROR(mirrorToHost());
    return saveCheckpoint(config_, host_model, host_optimizer, at, ctx_.metrics);
  };

  const bool checkpoints = !config_.checkpoint.path.empty();
  const int64_t max_steps = config_.max_steps;
  TrainerMetrics* metrics = ctx_.metrics;
  bool reached_max_steps = false;  // in this run: the position then needs a checkpoint
  RunReport report(rank, world, config_.epochs, pos.epoch, metrics);
  uint64_t comm_calls_total = 0, comm_bytes_total = 0;
  int64_t timed_steps = 0;
  size_t bucket_bytes = 0;
  for (const Bucket& b : st.buckets) bucket_bytes += b.count * sizeof(float);

  // Evaluates this rank's strided share of the test set and sums, over ranks, its counts with
  // the training loss of `train_steps` steps.
  auto evaluate = [&](double train_loss_sum, int64_t train_steps,
                      const std::string& what) -> Result<EpochTotals> {
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(st.totals.data() + 1, 0, sizeof(LossTotals), st.compute), "eval totals");
    const auto test_count = static_cast<int64_t>(
        test.size() > static_cast<size_t>(rank) ? (test.size() - rank + world - 1) / world : 0);
    for (int64_t begin = 0; begin < test_count; begin += batch) {
      const int n = static_cast<int>(std::min<int64_t>(batch, test_count - begin));
      BatchSource source{nullptr, nullptr, begin, rank, world, batch};
      launchGatherBatch(st.test.rows.data(), st.test.labels.data(),
                        static_cast<int>(net.inputSize()), source, n, net.input(), net.labels(),
                        precision, st.compute);
      RM_RETURN_IF_ERROR(
          net.forwardLoss(n, /*train=*/false, 1.0, st.totals.data() + 1, st.compute));
    }
    LossTotals eval;
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&eval, st.totals.data() + 1, sizeof eval,
                                            cudaMemcpyDeviceToHost, st.compute),
                            "reading the evaluation");
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.compute), "evaluation");
    EpochTotals totals(static_cast<double>(eval.hits), eval.loss_sum,
                       static_cast<double>(test_count), train_loss_sum,
                       static_cast<double>(train_steps));
    if (world > 1) {
      comm::AllreduceOptions opts;
      opts.tag = "epoch totals";
      RM_RETURN_IF_ERROR_CTX(comm.allreduceSum(totals.values, EpochTotals::kCount, opts),
                             who + ": " + what);
    }
    return totals;
  };
  if (trainingComplete(config_, pos)) {
    RM_ASSIGN_OR_RETURN(EpochTotals totals, evaluate(0, 0, "evaluating the restored model"));
    report.endRestored(pos, totals, &summary);
  }

  for (int64_t epoch = pos.epoch; !trainingComplete(config_, pos); ++epoch) {
    const int64_t first_batch = epoch == pos.epoch ? pos.step_in_epoch : 0;
    const FeistelPermutation perm =
        FeistelPermutation::make(static_cast<uint32_t>(train.size()), config_.seed, epoch);
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st.permutation.data(), &perm, sizeof perm,
                                            cudaMemcpyHostToDevice, st.compute),
                            "epoch permutation");
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&st.counters.data()->cursor, &first_batch,
                                            sizeof first_batch, cudaMemcpyHostToDevice, st.compute),
                            "epoch cursor");
    RM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(st.totals.data(), 0, sizeof(LossTotals), st.compute),
                            "epoch totals");
    if (metrics) metrics->epoch->Set(static_cast<double>(epoch + 1));
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.compute), "starting epoch");
    const auto epoch_start = Clock::now();
    int64_t epoch_samples = 0, steps_this_epoch = 0;
    // Allreduce time, the part backward did not hide, and their bytes: timed steps only (the
    // others run unobserved inside the graph).
    double epoch_comm = 0, epoch_exposed = 0;
    uint64_t epoch_comm_bytes = 0;

    for (int64_t b = first_batch; b < num_batches; ++b) {
      if (ctx_.stop && ctx_.stop->stopRequested()) {
        if (rank == 0 && checkpoints) {
          RM_RETURN_IF_ERROR(checkpointAt({epoch, pos.step, b}));
          RM_LOG(INFO, CKPT) << "checkpoint written at step " << pos.step << " before stopping";
        }
        return core::cancelled(ctx_.stop->reason() + ": stopped at epoch " +
                               std::to_string(epoch + 1) + " step " + std::to_string(pos.step));
      }
      if (max_steps > 0 && pos.step >= max_steps) {
        reached_max_steps = true;
        break;
      }
      const int n =
          static_cast<int>(std::min<size_t>(batch, shard - static_cast<size_t>(b) * batch));
      timed = b % kTimedStepInterval == kTimedStepInterval / 2 ||
              (b == first_batch && epoch == pos.epoch);
      const bool full = n == batch;
      if (use_graph && full && !timed && st.graph_exec == nullptr && pos.step > 0) {
        if (Status captured = captureGraph(); !captured.ok()) {
          use_graph = false;
          RM_LOG(WARN, STEP) << who << ": CUDA graph not used (" << captured.message()
                             << "); steps run eagerly";
          cudaGetLastError();
        }
      }
      if (use_graph && full && !timed && st.graph_exec != nullptr) {
        RM_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(st.graph_exec, st.compute),
                                who + ": step " + std::to_string(pos.step + 1));
      } else {
        RM_RETURN_IF_ERROR_CTX(enqueueStep(n), who + ": step " + std::to_string(pos.step + 1));
      }
      ++pos.step;
      pos.epoch = epoch;  // where a checkpoint taken now (max_steps, stop) resumes
      pos.step_in_epoch = b + 1;
      ++steps_this_epoch;
      epoch_samples += static_cast<int64_t>(n) * world;
      if (world > 1) {
        comm_calls_total += st.buckets.size();
        comm_bytes_total += bucket_bytes;
      }
      RM_RETURN_IF_ERROR_CTX(collectives->watch(st.compute, "step " + std::to_string(pos.step)),
                             who);
      if (timed) {
        RM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(st.timed_comm_done), "timed step");
        RM_RETURN_IF_ERROR(collectives->asyncError());
        float comm_ms = 0, exposed_ms = 0;
        for (size_t i = 0; i < st.buckets.size(); ++i) {
          float ms = 0;
          cudaEventElapsedTime(&ms, st.bucket_start[i], st.bucket_end[i]);
          comm_ms += ms;
          if (metrics) metrics->allreduce_seconds->Observe(ms / 1000.0);
        }
        cudaEventElapsedTime(&exposed_ms, st.backward_end, st.timed_comm_done);
        epoch_comm += comm_ms / 1000.0;
        epoch_exposed += std::max(0.0f, exposed_ms) / 1000.0;
        epoch_comm_bytes += bucket_bytes;
        ++timed_steps;
      }
      if (metrics) {
        metrics->samples->Increment(n);
        metrics->steps->Increment();
        if (world > 1) metrics->allreduce_bytes->Increment(static_cast<double>(bucket_bytes));
      }
      if (config_.log_every_steps > 0 && pos.step % config_.log_every_steps == 0 && rank == 0) {
        LossTotals t;
        RM_CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(&t, st.totals.data(), sizeof t, cudaMemcpyDeviceToHost, st.compute),
            "reading the loss");
        RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.compute), "reading the loss");
        RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << pos.step << " mean loss "
                           << t.loss_sum / static_cast<double>(steps_this_epoch);
      }
      if (rank == 0 && checkpoints && config_.checkpoint.every_steps > 0 &&
          pos.step % config_.checkpoint.every_steps == 0 && b + 1 < num_batches) {
        RM_RETURN_IF_ERROR(checkpointAt({epoch, pos.step, b + 1}));
      }
    }
    LossTotals epoch_totals;
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&epoch_totals, st.totals.data(), sizeof epoch_totals,
                                            cudaMemcpyDeviceToHost, st.compute),
                            "reading the epoch's loss");
    const cudaError_t synced = cudaStreamSynchronize(st.compute);
    RM_RETURN_IF_ERROR_CTX(collectives->asyncError(), who + ": epoch " + std::to_string(epoch + 1));
    RM_CUDA_RETURN_IF_ERROR(synced, who + ": epoch " + std::to_string(epoch + 1));
    const double epoch_wall = secondsSince(epoch_start);
    if (steps_this_epoch > 0 && !std::isfinite(epoch_totals.loss_sum))
      return core::invalidArgument(who + ": loss became " + std::to_string(epoch_totals.loss_sum) +
                                   " in epoch " + std::to_string(epoch + 1) + " (learning rate " +
                                   std::to_string(config_.optimizer.learning_rate) + " too high?)");

    RM_ASSIGN_OR_RETURN(EpochTotals totals, evaluate(epoch_totals.loss_sum, steps_this_epoch,
                                                     "epoch " + std::to_string(epoch + 1)));
    // The host does not see single GPU steps: the histogram gets the epoch's mean step.
    if (metrics && steps_this_epoch > 0)
      metrics->step_seconds->Observe(epoch_wall / static_cast<double>(steps_this_epoch));
    report.endEpoch({epoch, epoch_wall, epoch_samples, steps_this_epoch, epoch_comm, epoch_exposed,
                     epoch_comm_bytes,
                     std::string(" on the GPU (") + precisionName(precision) +
                         (st.graph_exec ? ", CUDA graph)" : ")")},
                    totals, &summary);
    if (!reached_max_steps) {
      pos = {epoch + 1, pos.step, 0};
      summary.epochs = epoch + 1;
    } else {
      summary.epochs = epoch;
    }
    if (rank == 0 && checkpoints && !reached_max_steps) RM_RETURN_IF_ERROR(checkpointAt(pos));
  }
  if (rank == 0 && checkpoints && reached_max_steps) RM_RETURN_IF_ERROR(checkpointAt(pos));
  RM_RETURN_IF_ERROR(mirrorToHost());

  report.finish(pos.step, comm_calls_total, comm_bytes_total, &summary);
  if (rank == 0 && timed_steps > 0)
    RM_LOG(INFO, STEP) << "allreduce over " << timed_steps << " timed steps: "
                       << summary.allreduce_seconds * 1e3 / static_cast<double>(timed_steps)
                       << " ms per step, "
                       << summary.comm_exposed_seconds * 1e3 / static_cast<double>(timed_steps)
                       << " ms of it after backward ("
                       << static_cast<int>(summary.overlap_ratio * 100) << "% hidden)";
  return summary;
}

}  // namespace ringmaster::trainer::gpu
