#pragma once
// DDP-style gradient bucketing with compute/communication overlap.
//
// The model's flat gradient buffer is cut into contiguous buckets along parameter boundaries,
// starting from the END (the last layer's gradients are ready first during backward). As in
// PyTorch DDP, a bucket closes as soon as it holds at least its cap: firstBucketCapMB for the
// first (small, so communication starts early), bucketCapMB for the rest. As backward reports ready
// ranges (decreasing offsets), every bucket whose range is complete is handed to a communication
// thread, which allreduces it and divides by the world size while backward keeps computing earlier
// layers. finishStep() waits for the rest.
//
// Overlap accounting per step: comm_seconds is the time the communication thread spent in
// allreduce; exposed_seconds is the time finishStep() blocked. hidden = comm - exposed is the
// communication hidden behind compute; overlap ratio = hidden / comm.
//
// Ownership: borrows the communicator and the gradient buffer (both must outlive this object).
// Thread-safety: beginStep/onGradsReady/finishStep are called from the one training thread.
// Failure: an allreduce error is returned by finishStep (naming the bucket); later buckets of
// that step are skipped.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"
#include "trainer/model/model.h"

namespace ringmaster::trainer {

struct Bucket {
  size_t offset = 0;  // in floats, into the flat gradient buffer
  size_t count = 0;
};

// Plans buckets over `views` (forward order, ascending offsets); bucket 0 holds the last
// parameters. Walking back from the last parameter, each joins the open bucket, which closes once
// it reaches its cap (so it may exceed it by that parameter: never split). Closing after rather
// than before the cap is what sends a layer's gradients while backward goes on: with the 1 MiB
// first cap, the 784-512-512-10 MLP's second layer (1 MiB) closes the first bucket instead of
// waiting in the second one for the first layer, which is ready only when backward ends.
std::vector<Bucket> planBuckets(const std::vector<model::ParamView>& views, size_t first_cap_bytes,
                                size_t cap_bytes);

// For a backward that reports whole layers, last first (the GPU model): entry i lists the
// buckets to launch when layer i reports, i.e. those whose first parameter lies in layer i (every
// parameter above it is final by then). layer_offsets: each layer's first flat index, ascending,
// the first 0. Every bucket appears exactly once.
std::vector<std::vector<size_t>> bucketsByReadyLayer(const std::vector<Bucket>& buckets,
                                                     const std::vector<size_t>& layer_offsets);

struct StepCommTiming {
  double comm_seconds = 0;
  double exposed_seconds = 0;
  std::vector<double> bucket_seconds;  // per bucket allreduce time, in launch order
  std::vector<size_t> bucket_order;    // and which bucket (index into buckets()) each was
  size_t bytes = 0;                    // payload bytes allreduced this step
};

class GradientBuckets {
 public:
  GradientBuckets(comm::Communicator* comm, float* grads, std::vector<Bucket> buckets,
                  comm::AllreduceOptions options);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  void beginStep();
  // Backward's callback: [offset, offset+count) of the gradient buffer is final.
  void onGradsReady(size_t offset, size_t count);
  // Launches any bucket not yet launched and waits until every bucket is reduced and averaged.
  core::Status finishStep();

  const StepCommTiming& lastStep() const { return last_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  void launchReadyBuckets();
  void commLoop();

  comm::Communicator* comm_;
  float* grads_;
  const std::vector<Bucket> buckets_;
  const comm::AllreduceOptions options_;
  const float scale_;

  // Training-thread state.
  size_t ready_low_ = 0;    // lowest offset reported ready this step
  size_t next_launch_ = 0;  // next bucket index to hand to the comm thread
  StepCommTiming last_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> queue_;            // guarded by mu_
  size_t done_ = 0;                     // guarded by mu_
  double comm_seconds_ = 0;             // guarded by mu_
  std::vector<double> bucket_seconds_;  // guarded by mu_
  std::vector<size_t> bucket_order_;    // guarded by mu_
  core::Status error_;                  // guarded by mu_
  bool shutdown_ = false;               // guarded by mu_
  std::thread thread_;
};

}  // namespace ringmaster::trainer
