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

// Accuracy and mean loss over the test samples all ranks evaluated; absent when there were none.
void setTestFigures(const EpochTotals& totals, TrainSummary* s) {
  const float* t = totals.values;
  if (t[2] <= 0) return;
  s->test_accuracy = t[0] / t[2];
  s->test_loss = t[1] / t[2];
}

std::string testFigures(const TrainSummary& s) {
  if (!s.test_accuracy) return "no test samples";
  char text[96];
  std::snprintf(text, sizeof text, "test accuracy %.2f%% (loss %.4f)", 100.0 * *s.test_accuracy,
                s.test_loss.value_or(0));
  return text;
}

}  // namespace

void RunReport::endEpoch(const EpochFigures& e, const EpochTotals& totals, TrainSummary* s) {
  const float* t = totals.values;
  setTestFigures(totals, s);
  // An epoch that trained no step (max_steps reached at its start) keeps the last loss measured.
  if (t[4] > 0) s->final_train_loss = t[3] / t[4];
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
    if (s->final_train_loss) metrics_->loss->Set(*s->final_train_loss);
    if (s->test_accuracy) metrics_->accuracy->Set(*s->test_accuracy);
    metrics_->samples_per_second->Set(sps);
    metrics_->bus_bandwidth->Set(busbw);
    metrics_->overlap_ratio->Set(overlap);
    metrics_->comm_hidden_seconds->Increment(std::max(0.0, e.comm_seconds - e.exposed_seconds));
    metrics_->comm_exposed_seconds->Increment(e.exposed_seconds);
  }
  if (rank_ != 0) return;
  char line[512];
  std::snprintf(line, sizeof line,
                "epoch %lld/%lld: train loss %.4f, %s, %.0f samples/s, %lld steps in %.2f s",
                (long long)(e.epoch + 1), (long long)epochs_, s->final_train_loss.value_or(0),
                testFigures(*s).c_str(), sps, (long long)e.steps, e.wall_seconds);
  std::string text = line + e.where;
  if (world_ > 1 && e.comm_seconds > 0)
    text += ", allreduce " + humanBytesPerSecond(busbw) + " busbw, " +
            std::to_string(static_cast<int>(overlap * 100)) + "% hidden behind backward";
  RM_LOG(INFO, STEP) << text;
}

void RunReport::endRestored(const Position& pos, const EpochTotals& totals, TrainSummary* s) {
  s->epochs = std::min(pos.epoch, epochs_);
  setTestFigures(totals, s);
  // The epoch training stands in, 1-based: the last one when every epoch is done.
  const int64_t epoch = std::min(pos.step_in_epoch > 0 ? pos.epoch + 1 : pos.epoch, epochs_);
  if (metrics_) {
    metrics_->epoch->Set(static_cast<double>(epoch));
    if (s->test_accuracy) metrics_->accuracy->Set(*s->test_accuracy);
  }
  if (rank_ != 0) return;
  RM_LOG(INFO, STEP) << "nothing left to train: the checkpoint at step " << pos.step
                     << " is the end of training (epoch " << epoch << "/" << epochs_
                     << "); the restored model: " << testFigures(*s);
}

void RunReport::finish(int64_t steps, uint64_t allreduce_calls, uint64_t allreduce_bytes,
                       TrainSummary* s) const {
  s->steps = steps;
  s->train_seconds = train_wall_;
  if (samples_ > 0 && train_wall_ > 0) {
    s->samples_per_second = static_cast<double>(samples_) / train_wall_;
    s->steady_samples_per_second = steady_wall_ > 0
                                       ? static_cast<double>(steady_samples_) / steady_wall_
                                       : *s->samples_per_second;
  }
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
