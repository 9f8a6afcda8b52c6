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
#include "trainer/training_loop.h"

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

GpuTrainer::GpuTrainer(contract::TrainerSettings settings, TrainerContext context)
    : settings_(std::move(settings)), ctx_(context), state_(std::make_unique<State>()) {}
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

namespace {

// A data-parallel step on the GPU (gpu_trainer.h): the batch gathered on the device, forward,
// backward with each complete bucket allreduced by NCCL on the communication stream, the fused
// optimizer update; full batches replayed from a CUDA graph, every 50th step eager and timed.
class GpuEngine final : public StepEngine {
 public:
  GpuEngine(const contract::TrainerSettings& settings, const TrainerContext& ctx,
            GpuTrainer::State& st, Precision precision, size_t shard)
      : settings_(settings),
        ctx_(ctx),
        st_(st),
        comm_(*ctx.comm),
        collectives_(comm_.deviceCollectives()),
        rank_(comm_.rank()),
        world_(comm_.size()),
        who_("rank " + std::to_string(rank_)),
        precision_(precision),
        batch_(static_cast<int>(settings.batch_size)),
        shard_(shard),
        num_batches_(static_cast<int64_t>((shard + batch_ - 1) / batch_)),
        schedule_{settings.optimizer.learning_rate,
                  static_cast<double>(settings.epochs) * static_cast<double>(num_batches_),
                  settings.optimizer.schedule == contract::LrSchedule::kCosine},
        adam_(settings.optimizer.type == contract::OptimizerType::kAdam),
        sgd_base_{0.0f, static_cast<float>(settings.optimizer.momentum),
                  static_cast<float>(settings.optimizer.weight_decay), settings.optimizer.nesterov},
        adam_hyper_{settings.optimizer.beta1, settings.optimizer.beta2,
                    settings.optimizer.weight_decay, settings.optimizer.epsilon},
        use_graph_(settings.cuda_graph) {
    for (const Bucket& b : st.buckets) {
      bucket_bytes_ += b.count * sizeof(float);
      // Each bucket's allreduce series, there from the start, at zero.
      if (ctx.metrics) {
        series_.push_back(
            &ctx.metrics->allreduce(comm_.allreduceAlgorithm(b.count * sizeof(float))));
      }
    }
  }

  int64_t batchesPerEpoch() const override { return num_batches_; }

  Status beginEpoch(int64_t epoch, int64_t first_batch) override {
    first_batch_ = first_batch;
    const FeistelPermutation perm =
        FeistelPermutation::make(static_cast<uint32_t>(ctx_.train->size()), settings_.seed, epoch);
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st_.permutation.data(), &perm, sizeof perm,
                                            cudaMemcpyHostToDevice, st_.compute),
                            "epoch permutation");
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&st_.counters.data()->cursor, &first_batch, sizeof first_batch,
                        cudaMemcpyHostToDevice, st_.compute),
        "epoch cursor");
    RM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(st_.totals.data(), 0, sizeof(LossTotals), st_.compute),
                            "epoch totals");
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st_.compute), "starting epoch");
    epoch_start_ = Clock::now();
    steps_this_epoch_ = 0;
    epoch_comm_ = epoch_exposed_ = 0;
    epoch_comm_bytes_ = 0;
    return Status::Ok();
  }

  Result<int> step(int64_t epoch, int64_t b, int64_t steps_done) override {
    const int64_t step = steps_done + 1;
    const int n =
        static_cast<int>(std::min<size_t>(batch_, shard_ - static_cast<size_t>(b) * batch_));
    // The first step of every epoch is timed too.
    timed_ = b % kTimedStepInterval == kTimedStepInterval / 2 || b == first_batch_;
    const bool full = n == batch_;
    if (use_graph_ && full && !timed_ && st_.graph_exec == nullptr && steps_done > 0) {
      if (Status captured = captureGraph(); !captured.ok()) {
        use_graph_ = false;
        RM_LOG(WARN, STEP) << who_ << ": CUDA graph not used (" << captured.message()
                           << "); steps run eagerly";
        cudaGetLastError();
      }
    }
    if (use_graph_ && full && !timed_ && st_.graph_exec != nullptr) {
      RM_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(st_.graph_exec, st_.compute),
                              who_ + ": step " + std::to_string(step));
    } else {
      RM_RETURN_IF_ERROR_CTX(enqueueStep(n), who_ + ": step " + std::to_string(step));
    }
    ++steps_this_epoch_;
    if (world_ > 1) {
      comm_calls_ += st_.buckets.size();
      comm_bytes_ += bucket_bytes_;
    }
    RM_RETURN_IF_ERROR_CTX(collectives_->watch(st_.compute, "step " + std::to_string(step)), who_);
    TrainerMetrics* metrics = ctx_.metrics;
    if (timed_) {
      RM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(st_.timed_comm_done), "timed step");
      RM_RETURN_IF_ERROR(collectives_->asyncError());
      float comm_ms = 0, exposed_ms = 0;
      for (size_t i = 0; i < st_.buckets.size(); ++i) {
        float ms = 0;
        cudaEventElapsedTime(&ms, st_.bucket_start[i], st_.bucket_end[i]);
        comm_ms += ms;
        if (metrics) series_[i]->seconds->Observe(ms / 1000.0);
      }
      cudaEventElapsedTime(&exposed_ms, st_.backward_end, st_.timed_comm_done);
      epoch_comm_ += comm_ms / 1000.0;
      epoch_exposed_ += std::max(0.0f, exposed_ms) / 1000.0;
      epoch_comm_bytes_ += bucket_bytes_;
      ++timed_steps_;
    }
    if (metrics) {
      metrics->samples->Increment(n);
      metrics->steps->Increment();
      for (size_t i = 0; world_ > 1 && i < st_.buckets.size(); ++i) {
        series_[i]->bytes->Increment(static_cast<double>(st_.buckets[i].count * sizeof(float)));
      }
    }
    if (settings_.log_every_steps > 0 && step % settings_.log_every_steps == 0 && rank_ == 0) {
      LossTotals t;
      RM_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(&t, st_.totals.data(), sizeof t, cudaMemcpyDeviceToHost, st_.compute),
          "reading the loss");
      RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st_.compute), "reading the loss");
      RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << step << " mean loss "
                         << t.loss_sum / static_cast<double>(steps_this_epoch_);
    }
    return n;
  }

  Result<EpochMeasures> endEpoch(int64_t epoch, int64_t) override {
    LossTotals epoch_totals;
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&epoch_totals, st_.totals.data(), sizeof epoch_totals,
                                            cudaMemcpyDeviceToHost, st_.compute),
                            "reading the epoch's loss");
    const cudaError_t synced = cudaStreamSynchronize(st_.compute);
    RM_RETURN_IF_ERROR_CTX(collectives_->asyncError(),
                           who_ + ": epoch " + std::to_string(epoch + 1));
    RM_CUDA_RETURN_IF_ERROR(synced, who_ + ": epoch " + std::to_string(epoch + 1));
    const double epoch_wall = secondsSince(epoch_start_);
    if (steps_this_epoch_ > 0 && !std::isfinite(epoch_totals.loss_sum))
      return core::invalidArgument(who_ + ": loss became " + std::to_string(epoch_totals.loss_sum) +
                                   " in epoch " + std::to_string(epoch + 1) + " (learning rate " +
                                   std::to_string(settings_.optimizer.learning_rate) +
                                   " too high?)");
    // The host does not see single GPU steps: the histogram gets the epoch's mean step.
    if (ctx_.metrics && steps_this_epoch_ > 0)
      ctx_.metrics->step_seconds->Observe(epoch_wall / static_cast<double>(steps_this_epoch_));
    EpochMeasures m;
    m.train_loss_sum = epoch_totals.loss_sum;
    m.comm_seconds = epoch_comm_;
    m.exposed_seconds = epoch_exposed_;
    m.comm_bytes = epoch_comm_bytes_;
    m.where = std::string(" on the GPU (") + precisionName(precision_) +
              (st_.graph_exec ? ", CUDA graph)" : ")");
    return m;
  }

  Result<EpochTotals> evaluate(double train_loss_sum, int64_t train_steps,
                               const std::string& what) override {
    GpuModel& net = *st_.net;
    const data::Dataset& test = *ctx_.test;
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(st_.totals.data() + 1, 0, sizeof(LossTotals), st_.compute), "eval totals");
    const auto test_count = static_cast<int64_t>(
        test.size() > static_cast<size_t>(rank_) ? (test.size() - rank_ + world_ - 1) / world_ : 0);
    for (int64_t begin = 0; begin < test_count; begin += batch_) {
      const int n = static_cast<int>(std::min<int64_t>(batch_, test_count - begin));
      BatchSource source{nullptr, nullptr, begin, rank_, world_, batch_};
      launchGatherBatch(st_.test.rows.data(), st_.test.labels.data(),
                        static_cast<int>(net.inputSize()), source, n, net.input(), net.labels(),
                        precision_, st_.compute);
      RM_RETURN_IF_ERROR(
          net.forwardLoss(n, /*train=*/false, 1.0, st_.totals.data() + 1, st_.compute));
    }
    LossTotals eval;
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&eval, st_.totals.data() + 1, sizeof eval,
                                            cudaMemcpyDeviceToHost, st_.compute),
                            "reading the evaluation");
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st_.compute), "evaluation");
    EpochTotals totals(static_cast<double>(eval.hits), eval.loss_sum,
                       static_cast<double>(test_count), train_loss_sum,
                       static_cast<double>(train_steps));
    if (world_ > 1) {
      comm::AllreduceOptions opts;
      opts.tag = "epoch totals";
      RM_RETURN_IF_ERROR_CTX(comm_.allreduceSum(totals.values, EpochTotals::kCount, opts),
                             who_ + ": " + what);
    }
    return totals;
  }

  Status saveCheckpoint(const Position& at) override {
    RM_RETURN_IF_ERROR(mirrorToHost());
    return trainer::saveCheckpoint(settings_, *st_.host_model, *st_.host_optimizer, at,
                                   ctx_.metrics);
  }

  uint64_t allreduceCalls() const override { return comm_calls_; }
  uint64_t allreduceBytes() const override { return comm_bytes_; }

  Status finish(const TrainSummary& summary, double) override {
    RM_RETURN_IF_ERROR(mirrorToHost());
    if (rank_ == 0 && timed_steps_ > 0)
      RM_LOG(INFO, STEP) << "allreduce over " << timed_steps_ << " timed steps: "
                         << summary.allreduce_seconds * 1e3 / static_cast<double>(timed_steps_)
                         << " ms per step, "
                         << summary.comm_exposed_seconds * 1e3 / static_cast<double>(timed_steps_)
                         << " ms of it after backward ("
                         << static_cast<int>(summary.overlap_ratio * 100) << "% hidden)";
    return Status::Ok();
  }

 private:
  // Enqueues one step of n samples; timed_ records the timing events.
  Status enqueueStep(int n) {
    GpuModel& net = *st_.net;
    BatchSource source{
        st_.permutation.data(), &st_.counters.data()->cursor, 0, rank_, world_, batch_};
    launchGatherBatch(st_.train.rows.data(), st_.train.labels.data(),
                      static_cast<int>(net.inputSize()), source, n, net.input(), net.labels(),
                      precision_, st_.compute);
    RM_RETURN_IF_ERROR(net.forwardLoss(n, /*train=*/true, 1.0 / n, st_.totals.data(), st_.compute));
    Status launch;
    RM_RETURN_IF_ERROR(net.backward(n, st_.compute, [&](int layer) {
      if (!launch.ok() || st_.buckets_at_layer[layer].empty()) return;
      launch = cudaStatus(cudaEventRecord(st_.layer_ready[layer], st_.compute), "layer event");
      if (launch.ok())
        launch = cudaStatus(cudaStreamWaitEvent(st_.comm, st_.layer_ready[layer], 0), "wait");
      for (size_t b : st_.buckets_at_layer[layer]) {
        if (!launch.ok()) return;
        if (timed_) cudaEventRecord(st_.bucket_start[b], st_.comm);
        // Alone, the average is the gradient itself: NCCL would still pass over every byte.
        if (world_ > 1)
          launch = collectives_->allreduceAverageAsync(net.grads() + st_.buckets[b].offset,
                                                       st_.buckets[b].count, st_.comm);
        if (timed_) cudaEventRecord(st_.bucket_end[b], st_.comm);
      }
    }));
    RM_RETURN_IF_ERROR(launch);
    if (timed_) cudaEventRecord(st_.backward_end, st_.compute);
    RM_CUDA_RETURN_IF_ERROR(cudaEventRecord(st_.comm_done, st_.comm), "communication event");
    if (timed_) cudaEventRecord(st_.timed_comm_done, st_.comm);
    RM_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(st_.compute, st_.comm_done, 0), "join");
    uint16_t* bf16 = net.bf16Params();
    const size_t num_params = net.numParams();
    if (adam_) {
      launchAdamScalars(schedule_, adam_hyper_, st_.counters.data(), st_.adam_scalars.data(),
                        st_.compute);
      launchAdamStep(net.params(), net.grads(), st_.optimizer_state[0].data(),
                     st_.optimizer_state[1].data(), num_params, st_.adam_scalars.data(), bf16,
                     st_.compute);
    } else {
      launchSgdScalars(schedule_, sgd_base_, st_.counters.data(), st_.sgd_scalars.data(),
                       st_.compute);
      launchSgdStep(net.params(), net.grads(),
                    st_.optimizer_state.empty() ? nullptr : st_.optimizer_state[0].data(),
                    num_params, st_.sgd_scalars.data(), bf16, st_.compute);
    }
    launchAdvance(st_.counters.data(), st_.compute);
    return cudaStatus(cudaGetLastError(), "launching the step's kernels");
  }

  // Captures a full-batch step as a graph; on failure training goes on eagerly.
  Status captureGraph() {
    RM_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(st_.compute, cudaStreamCaptureModeThreadLocal),
                            "begin graph capture");
    Status enqueued = enqueueStep(batch_);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(st_.compute, &graph);
    if (!enqueued.ok()) {
      if (graph) cudaGraphDestroy(graph);
      return enqueued.withContext("capturing the step");
    }
    RM_CUDA_RETURN_IF_ERROR(ended, "end graph capture");
    st_.graph = graph;
    RM_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&st_.graph_exec, graph, 0),
                            "instantiating the step graph");
    return Status::Ok();
  }

  // Copies the device's parameters and optimizer state into the host mirror.
  Status mirrorToHost() {
    RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st_.compute), "finishing the steps");
    RM_RETURN_IF_ERROR(collectives_->asyncError());
    const size_t num_params = st_.net->numParams();
    auto params = st_.host_model->params();
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(params.data(), st_.net->params(), params.size_bytes(), cudaMemcpyDeviceToHost),
        "downloading parameters");
    auto state = st_.host_optimizer->state();
    for (size_t i = 0; i < state.size(); ++i)
      RM_CUDA_RETURN_IF_ERROR(cudaMemcpy(state[i]->data(), st_.optimizer_state[i].data(),
                                         num_params * sizeof(float), cudaMemcpyDeviceToHost),
                              "downloading optimizer state");
    StepCounters c;
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpy(&c, st_.counters.data(), sizeof c, cudaMemcpyDeviceToHost),
                            "step counters");
    st_.host_optimizer->setStepCount(c.optimizer_steps);
    return Status::Ok();
  }

  const contract::TrainerSettings& settings_;
  const TrainerContext& ctx_;
  GpuTrainer::State& st_;
  comm::Communicator& comm_;
  comm::DeviceCollectives* collectives_;
  const int rank_, world_;
  const std::string who_;
  const Precision precision_;
  const int batch_;
  const size_t shard_;  // this rank's samples per epoch
  const int64_t num_batches_;
  const LrSchedule schedule_;
  const bool adam_;
  const SgdScalars sgd_base_;
  const AdamHyper adam_hyper_;
  size_t bucket_bytes_ = 0;
  std::vector<TrainerMetrics::Allreduce*> series_;  // by bucket; empty without metrics
  bool use_graph_;
  bool timed_ = false;  // the step being enqueued records the timing events
  // This epoch.
  int64_t first_batch_ = 0;
  Clock::time_point epoch_start_;
  int64_t steps_this_epoch_ = 0;
  // Allreduce time, the part backward did not hide, and their bytes: timed steps only (the
  // others run unobserved inside the graph).
  double epoch_comm_ = 0, epoch_exposed_ = 0;
  uint64_t epoch_comm_bytes_ = 0;
  // The run.
  int64_t timed_steps_ = 0;
  uint64_t comm_calls_ = 0, comm_bytes_ = 0;
};

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
  const Precision precision =
      settings_.precision == contract::Precision::kBf16 ? Precision::kBf16 : Precision::kFp32;
  RM_RETURN_IF_ERROR(resolveBatchSize(settings_, world));
  const auto batch = static_cast<int>(settings_.batch_size);
  const model::ModelConfig model_config = modelConfig(settings_.model);
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
  RM_ASSIGN_OR_RETURN(st.host_model, model::Model::create(model_config, settings_.seed, 1));
  model::Model& host_model = *st.host_model;
  if (host_model.inputSize() != train.featureSize())
    return core::invalidArgument("model expects " + std::to_string(host_model.inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(train.featureSize()));
  RM_ASSIGN_OR_RETURN(
      st.host_optimizer,
      optim::Optimizer::create(optimizerConfig(settings_.optimizer), host_model.params().size()));
  optim::Optimizer& host_optimizer = *st.host_optimizer;

  TrainSummary summary;
  summary.world_size = world;
  summary.backend = comm.backend();
  summary.model_signature = host_model.signature();
  summary.device = "cuda";
  summary.precision = precisionName(precision);
  Position pos;
  RM_RETURN_IF_ERROR(
      restoreOrSync(settings_, comm, host_model, host_optimizer, &pos, &summary.resumed_from_step));

  RM_ASSIGN_OR_RETURN(
      st.net, GpuModel::create(host_model, model_config, precision, batch,
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
                           static_cast<size_t>(settings_.first_bucket_cap_mb * (1 << 20)),
                           static_cast<size_t>(settings_.bucket_cap_mb * (1 << 20)));
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

  {
    StepCounters c{pos.step_in_epoch, pos.step, host_optimizer.stepCount()};
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpy(st.counters.data(), &c, sizeof c, cudaMemcpyHostToDevice),
                            "initializing step counters");
  }
  const size_t shard = (train.size() - train.size() % world) / world;
  GpuEngine engine(settings_, ctx_, st, precision, shard);
  if (rank == 0)
    RM_LOG(INFO, STEP) << host_model.signature() << " on the GPU: " << num_params
                       << " parameters in " << st.buckets.size() << " gradient bucket(s); "
                       << net.describe() << "; world size " << world << ", backend "
                       << comm.backend() << (settings_.cuda_graph ? ", CUDA graph" : "");
  RM_RETURN_IF_ERROR(
      runTrainingLoop(settings_, LoopContext::dataParallel(rank, world, ctx_.stop, ctx_.metrics),
                      engine, pos, &summary));
  return summary;
}

}  // namespace ringmaster::trainer::gpu
