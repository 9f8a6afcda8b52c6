#include "trainer/run_report.h"

#include <algorithm>
#include <cstdio>

#include "ringmaster/core/log.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer {
namespace {

std::string humanBytesPerSecond(double bps) {
  char buf[32];
  if (bps >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB/s", bps / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.1f MB/s", bps / 1e6);
  return buf;
}

}  // namespace

void RunReport::endEpoch(const EpochFigures& e, const EpochTotals& totals, TrainSummary* s) {
  const float* t = totals.values;
  s->test_accuracy = t[2] > 0 ? t[0] / t[2] : 0;
  s->test_loss = t[2] > 0 ? t[1] / t[2] : 0;
  s->final_train_loss = t[4] > 0 ? t[3] / t[4] : 0;
  const double sps = e.wall_seconds > 0 ? static_cast<double>(e.samples) / e.wall_seconds : 0;
  train_wall_ += e.wall_seconds;
  samples_ += e.samples;
  if (e.epoch > first_epoch_) {
    steady_wall_ += e.wall_seconds;
    steady_samples_ += e.samples;
  }
  comm_seconds_ += e.comm_seconds;
  exposed_seconds_ += e.exposed_seconds;
  comm_bytes_ += e.comm_bytes;
  const double busbw =
      comm::allreduceBusBandwidth(static_cast<double>(e.comm_bytes), e.comm_seconds, world_);
  const double overlap =
      e.comm_seconds > 0 ? std::max(0.0, 1.0 - e.exposed_seconds / e.comm_seconds) : 0;
  if (metrics_) {
    metrics_->loss->Set(s->final_train_loss);
    metrics_->accuracy->Set(s->test_accuracy);
    metrics_->samples_per_second->Set(sps);
    metrics_->bus_bandwidth->Set(busbw);
    metrics_->overlap_ratio->Set(overlap);
    metrics_->comm_hidden_seconds->Increment(std::max(0.0, e.comm_seconds - e.exposed_seconds));
    metrics_->comm_exposed_seconds->Increment(e.exposed_seconds);
  }
  if (rank_ != 0) return;
  char line[512];
  std::snprintf(line, sizeof line,
                "epoch %lld/%lld: train loss %.4f, test accuracy %.2f%% (loss %.4f), "
                "%.0f samples/s, %lld steps in %.2f s",
                (long long)(e.epoch + 1), (long long)epochs_, s->final_train_loss,
                100.0 * s->test_accuracy, s->test_loss, sps, (long long)e.steps, e.wall_seconds);
  std::string text = line + e.where;
  if (world_ > 1 && e.comm_seconds > 0)
    text += ", allreduce " + humanBytesPerSecond(busbw) + " busbw, " +
            std::to_string(static_cast<int>(overlap * 100)) + "% hidden behind backward";
  RM_LOG(INFO, STEP) << text;
}

void RunReport::finish(int64_t steps, uint64_t allreduce_calls, uint64_t allreduce_bytes,
                       TrainSummary* s) const {
  s->steps = steps;
  s->train_seconds = train_wall_;
  s->samples_per_second = train_wall_ > 0 ? static_cast<double>(samples_) / train_wall_ : 0;
  s->steady_samples_per_second = steady_wall_ > 0
                                     ? static_cast<double>(steady_samples_) / steady_wall_
                                     : s->samples_per_second;
  s->allreduce_calls = allreduce_calls;
  s->allreduce_bytes = allreduce_bytes;
  s->allreduce_seconds = comm_seconds_;
  s->allreduce_bus_bandwidth =
      comm::allreduceBusBandwidth(static_cast<double>(comm_bytes_), comm_seconds_, world_);
  s->comm_exposed_seconds = exposed_seconds_;
  s->comm_hidden_seconds = std::max(0.0, comm_seconds_ - exposed_seconds_);
  s->overlap_ratio = comm_seconds_ > 0 ? s->comm_hidden_seconds / comm_seconds_ : 0;
}

}  // namespace ringmaster::trainer
