#pragma once
// The "inproc" backend: N ranks as threads of one process, for the trainer's unit tests.
//
// Protocol of one allreduceSum over a shared InProcGroup (no copies into shared buffers):
//   1. every rank publishes (data, count); barrier
//   2. rank r sums slice r of every rank's buffer, in rank order, into its own buffer; barrier
//   3. rank r copies slice q (q != r) from rank q's buffer into its own; barrier
// The last barrier keeps every buffer alive and unchanged until all copies are done. Every
// rank computes each element in the same order, so results are bitwise identical on all ranks.
//
// Ownership: the InProcGroup is shared (shared_ptr) by the N communicators of one group; each
// communicator is used by one thread. Thread-safety: the group is thread-safe; a communicator
// follows the Communicator contract (one thread at a time). Failure: a rank that waits longer
// than the timeout breaks the group: it and every later call on any rank fail with kTimeout
// naming the ranks that did not arrive. Mismatched sizes fail with kInvalidArgument on all ranks.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm {

// The shared state of N in-process ranks: a reusable barrier and one published buffer per rank.
class InProcGroup {
 public:
  // `default_timeout` applies when a call's AllreduceOptions::timeout is 0.
  explicit InProcGroup(int size,
                       std::chrono::milliseconds default_timeout = std::chrono::seconds(60));
  InProcGroup(const InProcGroup&) = delete;
  InProcGroup& operator=(const InProcGroup&) = delete;

  int size() const { return size_; }
  std::chrono::milliseconds defaultTimeout() const { return default_timeout_; }

 private:
  friend class InProcCommunicator;

  struct Published {
    void* data = nullptr;
    size_t bytes = 0;
  };

  // Publishes `mine` for `rank` (when non-null) and waits until every rank has arrived.
  // `what` names the call in errors ("allreduceSum 'bucket 3' (4096 bytes)").
  core::Status arrive(int rank, const Published* mine, std::chrono::milliseconds timeout,
                      const std::string& what);
  // Point-to-point: a message is copied into the (from, to) mailbox; the receiver takes it.
  core::Status post(int from, int to, const void* data, size_t bytes, const std::string& what);
  core::Status take(int from, int to, void* data, size_t bytes, std::chrono::milliseconds timeout,
                    const std::string& what);
  // Valid between the barrier after publishing and the next barrier.
  const Published& published(int rank) const { return published_[rank]; }

  const int size_;
  const std::chrono::milliseconds default_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> arrived_;  // per rank, for the current generation
  int arrived_count_ = 0;
  uint64_t generation_ = 0;
  std::string broken_;  // non-empty once a rank timed out: the reason, returned to every caller
  std::vector<Published> published_;
  std::map<std::pair<int, int>, std::deque<std::vector<uint8_t>>> mailboxes_;  // (from, to)
};

class InProcCommunicator final : public Communicator {
 public:
  // `group` must have been created with size > rank >= 0.
  InProcCommunicator(std::shared_ptr<InProcGroup> group, int rank);

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string backend() const override { return "inproc"; }
  std::string allreduceAlgorithm(size_t) const override { return "shared_sum"; }

  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override;
  core::Status broadcast(void* data, size_t bytes, int root) override;
  core::Status barrier() override;
  core::Status send(const void* data, size_t bytes, int peer,
                    const PointToPointOptions& opts) override;
  core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) override;

 private:
  core::Status checkSameSize(size_t bytes, const std::string& what) const;

  std::shared_ptr<InProcGroup> group_;
  int rank_;
};

// Creates the N communicators of one fresh group (element i is rank i).
std::vector<std::unique_ptr<Communicator>> makeInProcCommunicators(
    int size, std::chrono::milliseconds default_timeout = std::chrono::seconds(60));

}  // namespace ringmaster::trainer::comm
