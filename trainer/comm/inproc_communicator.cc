#include "trainer/comm/inproc_communicator.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "trainer/comm/call_context.h"
#include "trainer/comm/sum_kernel.h"

namespace ringmaster::trainer::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Slice r of `count` elements split over `n` ranks: [begin, end).
std::pair<size_t, size_t> evenSliceOf(size_t count, int n, int r) {
  return {count * r / n, count * (r + 1) / n};
}

}  // namespace

InProcGroup::InProcGroup(int size, std::chrono::milliseconds default_timeout)
    : size_(size), default_timeout_(default_timeout), arrived_(size, false), published_(size) {}

core::Status InProcGroup::arrive(int rank, const Published* mine, std::chrono::milliseconds timeout,
                                 const std::string& what) {
  std::unique_lock lock(mu_);
  if (!broken_.empty()) return core::unavailable(what + ": group is broken: " + broken_);
  if (mine != nullptr) published_[rank] = *mine;
  const uint64_t my_generation = generation_;
  arrived_[rank] = true;
  if (++arrived_count_ == size_) {
    arrived_count_ = 0;
    arrived_.assign(size_, false);
    ++generation_;
    lock.unlock();
    cv_.notify_all();
    return core::Status::Ok();
  }
  const auto deadline = Clock::now() + timeout;
  const bool released = cv_.wait_until(
      lock, deadline, [&] { return generation_ != my_generation || !broken_.empty(); });
  if (generation_ != my_generation) return core::Status::Ok();
  if (!released) {
    std::string missing;
    for (int q = 0; q < size_; ++q) {
      if (arrived_[q]) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(q);
    }
    broken_ = "rank " + std::to_string(rank) + " timed out after " +
              std::to_string(timeout.count()) + " ms waiting for rank(s) " + missing;
    lock.unlock();
    cv_.notify_all();
    return core::timeoutError(what + ": " + broken_);
  }
  return core::unavailable(what + ": group is broken: " + broken_);
}

core::Status InProcGroup::post(int from, int to, const void* data, size_t bytes,
                               const std::string& what) {
  {
    std::lock_guard lock(mu_);
    if (!broken_.empty()) return core::unavailable(what + ": group is broken: " + broken_);
    const auto* begin = static_cast<const uint8_t*>(data);
    mailboxes_[{from, to}].emplace_back(begin, begin + bytes);
  }
  cv_.notify_all();
  return core::Status::Ok();
}

core::Status InProcGroup::take(int from, int to, void* data, size_t bytes,
                               std::chrono::milliseconds timeout, const std::string& what) {
  std::unique_lock lock(mu_);
  std::deque<std::vector<uint8_t>>& box = mailboxes_[{from, to}];
  const bool arrived = cv_.wait_until(lock, Clock::now() + timeout,
                                      [&] { return !box.empty() || !broken_.empty(); });
  if (!box.empty()) {
    std::vector<uint8_t> message = std::move(box.front());
    box.pop_front();
    if (message.size() != bytes) {
      return core::invalidArgument(what + ": rank " + std::to_string(from) + " sent " +
                                   std::to_string(message.size()) + " bytes");
    }
    if (bytes > 0) std::memcpy(data, message.data(), bytes);
    return core::Status::Ok();
  }
  if (!arrived) {
    return core::timeoutError(what + ": nothing from rank " + std::to_string(from) + " within " +
                              std::to_string(timeout.count()) + " ms");
  }
  return core::unavailable(what + ": group is broken: " + broken_);
}

InProcCommunicator::InProcCommunicator(std::shared_ptr<InProcGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {}

core::Status InProcCommunicator::checkSameSize(size_t bytes, const std::string& what) const {
  for (int q = 0; q < group_->size(); ++q) {
    const size_t theirs = group_->published(q).bytes;
    if (theirs != bytes) {
      return core::invalidArgument(what + ": rank " + std::to_string(q) + " passed " +
                                   std::to_string(theirs) + " bytes");
    }
  }
  return core::Status::Ok();
}

core::Status InProcCommunicator::allreduceSum(float* data, size_t count,
                                              const AllreduceOptions& opts) {
  const auto start = Clock::now();
  const size_t bytes = count * sizeof(float);
  const std::string what = describeRankCall(rank_, "allreduceSum", opts.tag, bytes);
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : group_->defaultTimeout();
  const int n = group_->size();

  const InProcGroup::Published mine{data, bytes};
  RM_RETURN_IF_ERROR(group_->arrive(rank_, &mine, timeout, what));
  // Every rank sees the same published sizes, so all return here together or none does.
  RM_RETURN_IF_ERROR(checkSameSize(bytes, what));

  std::vector<const float*> inputs(n);
  for (int q = 0; q < n; ++q) inputs[q] = static_cast<const float*>(group_->published(q).data);
  const auto [begin, end] = evenSliceOf(count, n, rank_);
  std::vector<const float*> slice(n);
  for (int q = 0; q < n; ++q) slice[q] = inputs[q] + begin;
  sumArrays(data + begin, slice.data(), n, end - begin);
  RM_RETURN_IF_ERROR(group_->arrive(rank_, nullptr, timeout, what));

  for (int q = 0; q < n; ++q) {
    if (q == rank_) continue;
    const auto [qb, qe] = evenSliceOf(count, n, q);
    if (qe > qb) std::memcpy(data + qb, inputs[q] + qb, (qe - qb) * sizeof(float));
  }
  // Nobody may return (and reuse its buffer) while others still copy from it.
  RM_RETURN_IF_ERROR(group_->arrive(rank_, nullptr, timeout, what));

  countAllreduce(bytes, start);
  return core::Status::Ok();
}

core::Status InProcCommunicator::broadcast(void* data, size_t bytes, int root) {
  const std::string what =
      describeRankCall(rank_, "broadcast from rank " + std::to_string(root), "", bytes);
  if (root < 0 || root >= group_->size()) {
    return core::invalidArgument(what + ": root out of range [0, " +
                                 std::to_string(group_->size()) + ")");
  }
  const auto timeout = group_->defaultTimeout();
  const InProcGroup::Published mine{data, bytes};
  RM_RETURN_IF_ERROR(group_->arrive(rank_, &mine, timeout, what));
  RM_RETURN_IF_ERROR(checkSameSize(bytes, what));
  if (rank_ != root && bytes > 0) std::memcpy(data, group_->published(root).data, bytes);
  return group_->arrive(rank_, nullptr, timeout, what);
}

core::Status InProcCommunicator::barrier() {
  return group_->arrive(rank_, nullptr, group_->defaultTimeout(),
                        "rank " + std::to_string(rank_) + ": barrier");
}

core::Status InProcCommunicator::send(const void* data, size_t bytes, int peer,
                                      const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("send to", peer, opts, bytes);
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  return group_->post(rank_, peer, data, bytes, what);
}

core::Status InProcCommunicator::recv(void* data, size_t bytes, int peer,
                                      const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("receive from", peer, opts, bytes);
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : group_->defaultTimeout();
  return group_->take(peer, rank_, data, bytes, timeout, what);
}

std::vector<std::unique_ptr<Communicator>> makeInProcCommunicators(
    int size, std::chrono::milliseconds default_timeout) {
  auto group = std::make_shared<InProcGroup>(size, default_timeout);
  std::vector<std::unique_ptr<Communicator>> out;
  out.reserve(size);
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<InProcCommunicator>(group, r));
  return out;
}

}  // namespace ringmaster::trainer::comm
