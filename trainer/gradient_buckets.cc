#include "trainer/gradient_buckets.h"

#include <algorithm>
#include <chrono>

namespace ringmaster::trainer {

using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<Bucket> planBuckets(const std::vector<model::ParamView>& views, size_t first_cap_bytes,
                                size_t cap_bytes) {
  std::vector<Bucket> buckets;
  size_t cap = std::max<size_t>(first_cap_bytes / sizeof(float), 1);
  Bucket current;
  for (auto it = views.rbegin(); it != views.rend(); ++it) {
    // Walking backwards, each parameter extends the bucket toward lower offsets.
    current.offset = it->offset;
    current.count += it->count;
    if (current.count >= cap) {
      buckets.push_back(current);
      current = {};
      cap = std::max<size_t>(cap_bytes / sizeof(float), 1);
    }
  }
  if (current.count > 0) buckets.push_back(current);
  return buckets;
}

std::vector<std::vector<size_t>> bucketsByReadyLayer(const std::vector<Bucket>& buckets,
                                                     const std::vector<size_t>& layer_offsets) {
  std::vector<std::vector<size_t>> at(layer_offsets.size());
  if (layer_offsets.empty()) return at;
  for (size_t b = 0; b < buckets.size(); ++b) {
    // The last layer starting at or before the bucket's first parameter.
    const auto after =
        std::upper_bound(layer_offsets.begin(), layer_offsets.end(), buckets[b].offset);
    const size_t layer = after == layer_offsets.begin() ? 0 : (after - layer_offsets.begin()) - 1;
    at[layer].push_back(b);
  }
  return at;
}

GradientBuckets::GradientBuckets(comm::Communicator* comm, float* grads,
                                 std::vector<Bucket> buckets, comm::AllreduceOptions options)
    : comm_(comm),
      grads_(grads),
      buckets_(std::move(buckets)),
      options_(std::move(options)),
      scale_(1.0f / static_cast<float>(comm->size())) {
  if (comm_->size() > 1) thread_ = std::thread([this] { commLoop(); });
}

GradientBuckets::~GradientBuckets() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientBuckets::beginStep() {
  ready_low_ = buckets_.empty() ? 0 : buckets_.front().offset + buckets_.front().count;
  next_launch_ = 0;
  std::lock_guard lock(mu_);
  done_ = 0;
  comm_seconds_ = 0;
  bucket_seconds_.clear();
  bucket_order_.clear();
  queue_.clear();
}

void GradientBuckets::onGradsReady(size_t offset, size_t count) {
  (void)count;
  ready_low_ = std::min(ready_low_, offset);
  launchReadyBuckets();
}

void GradientBuckets::launchReadyBuckets() {
  if (comm_->size() == 1) return;
  size_t launched_until = next_launch_;
  while (launched_until < buckets_.size() && buckets_[launched_until].offset >= ready_low_)
    ++launched_until;
  if (launched_until == next_launch_) return;
  {
    std::lock_guard lock(mu_);
    for (size_t b = next_launch_; b < launched_until; ++b) queue_.push_back(b);
  }
  next_launch_ = launched_until;
  cv_.notify_all();
}

core::Status GradientBuckets::finishStep() {
  if (comm_->size() == 1) {
    last_ = {};
    return core::Status::Ok();
  }
  ready_low_ = 0;  // everything backward did not report is taken as final now
  launchReadyBuckets();
  const auto t0 = Clock::now();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return done_ == buckets_.size(); });
  last_.exposed_seconds = secondsSince(t0);
  last_.comm_seconds = comm_seconds_;
  last_.bucket_seconds = bucket_seconds_;
  last_.bucket_order = bucket_order_;
  last_.bytes = 0;
  for (const auto& bucket : buckets_) last_.bytes += bucket.count * sizeof(float);
  return error_;
}

void GradientBuckets::commLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return shutdown_ || !queue_.empty(); });
    if (shutdown_) return;
    const size_t b = queue_.front();
    queue_.pop_front();
    const bool failed = !error_.ok();
    lock.unlock();

    core::Status status;
    double seconds = 0;
    if (!failed) {
      const Bucket& bucket = buckets_[b];
      comm::AllreduceOptions opts = options_;
      opts.tag =
          "bucket " + std::to_string(b) + " (" + std::to_string(bucket.count * 4) + " bytes)";
      const auto t0 = Clock::now();
      float* data = grads_ + bucket.offset;
      status = comm_->allreduceSum(data, bucket.count, opts);
      for (size_t i = 0; i < bucket.count; ++i) data[i] *= scale_;
      seconds = secondsSince(t0);
    }

    lock.lock();
    if (!status.ok() && error_.ok()) error_ = status;
    comm_seconds_ += seconds;
    bucket_seconds_.push_back(seconds);
    bucket_order_.push_back(b);
    ++done_;
    if (done_ == buckets_.size()) cv_.notify_all();
  }
}

}  // namespace ringmaster::trainer
