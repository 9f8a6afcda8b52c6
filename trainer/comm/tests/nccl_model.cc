#include "trainer/comm/tests/nccl_model.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace ringmaster::trainer::comm::testing {
namespace {

using core::Status;

class Fabric {
 public:
  explicit Fabric(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  Status group(int rank, const void* send, size_t send_bytes, int to, void* recv, size_t recv_bytes,
               int from) {
    Op send_op{send, nullptr, send_bytes, false, {}}, recv_op{nullptr, recv, recv_bytes, false, {}};
    std::unique_lock<std::mutex> lock(mu_);
    if (to >= 0) post(sends_, {rank, to}, &send_op);
    if (from >= 0) post(recvs_, {from, rank}, &recv_op);
    cv_.notify_all();
    const bool finished = cv_.wait_for(
        lock, timeout_, [&] { return (to < 0 || send_op.done) && (from < 0 || recv_op.done); });
    if (!finished) {
      std::string unmatched;
      if (to >= 0 && !send_op.done) {
        unmatched += "send to rank " + std::to_string(to);
        unpost(sends_, {rank, to}, &send_op);
      }
      if (from >= 0 && !recv_op.done) {
        unmatched += std::string(unmatched.empty() ? "" : " and ") + "receive from rank " +
                     std::to_string(from);
        unpost(recvs_, {from, rank}, &recv_op);
      }
      return core::timeoutError("rank " + std::to_string(rank) + ": " + unmatched +
                                " never matched: the ranks' streams wait on each other");
    }
    if (!send_op.error.ok()) return send_op.error;
    return recv_op.error;
  }

 private:
  struct Op {
    const void* send_data;
    void* recv_data;
    size_t bytes;
    bool done = false;
    Status error;
  };
  using Link = std::pair<int, int>;  // (sender, receiver)
  using Queues = std::map<Link, std::deque<Op*>>;

  void post(Queues& queues, Link link, Op* op) {
    queues[link].push_back(op);
    std::deque<Op*>& sends = sends_[link];
    std::deque<Op*>& recvs = recvs_[link];
    while (!sends.empty() && !recvs.empty()) {
      Op* s = sends.front();
      Op* r = recvs.front();
      sends.pop_front();
      recvs.pop_front();
      if (s->bytes != r->bytes) {
        const Status e = core::invalidArgument("rank " + std::to_string(link.first) + " sent " +
                                               std::to_string(s->bytes) + " bytes to rank " +
                                               std::to_string(link.second) + ", which received " +
                                               std::to_string(r->bytes));
        s->error = r->error = e;
      } else if (s->bytes > 0) {
        std::memcpy(r->recv_data, s->send_data, s->bytes);
      }
      s->done = r->done = true;
    }
  }
  static void unpost(Queues& queues, Link link, Op* op) {
    std::deque<Op*>& q = queues[link];
    q.erase(std::remove(q.begin(), q.end(), op), q.end());
  }

  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  Queues sends_, recvs_;
};

class NcclModelCommunicator final : public Communicator, public DeviceCollectives {
 public:
  NcclModelCommunicator(std::shared_ptr<Fabric> fabric, int rank, int size)
      : fabric_(std::move(fabric)), rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl-model"; }
  std::string allreduceAlgorithm(size_t) const override { return "none"; }
  Status allreduceSum(float*, size_t, const AllreduceOptions&) override { return unmodelled(); }
  Status broadcast(void*, size_t, int) override { return unmodelled(); }
  Status barrier() override { return unmodelled(); }
  DeviceCollectives* deviceCollectives() override { return this; }

  Status allreduceAverageAsync(float*, size_t, void*) override { return unmodelled(); }
  Status watch(void*, const std::string&) override { return Status::Ok(); }
  Status asyncError() const override { return Status::Ok(); }
  Status sendRecvAsync(const void* send_data, size_t send_bytes, int send_to, void* recv_data,
                       size_t recv_bytes, int recv_from, void*) override {
    for (int peer : {send_to, recv_from}) {
      if (peer != -1) RM_RETURN_IF_ERROR(checkPeer(peer, "rank " + std::to_string(rank_)));
    }
    return fabric_->group(rank_, send_data, send_bytes, send_to, recv_data, recv_bytes, recv_from);
  }

 private:
  static Status unmodelled() {
    return core::invalidArgument("the nccl-model backend models point-to-point only");
  }
  std::shared_ptr<Fabric> fabric_;
  const int rank_, size_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> makeNcclModelCommunicators(
    int n, std::chrono::milliseconds timeout) {
  auto fabric = std::make_shared<Fabric>(timeout);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<NcclModelCommunicator>(fabric, r, n));
  return out;
}

}  // namespace ringmaster::trainer::comm::testing
