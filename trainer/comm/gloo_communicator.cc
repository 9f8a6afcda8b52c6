#include "trainer/comm/gloo_communicator.h"

#include <arpa/inet.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <exception>
#include <utility>

#include "ringmaster/core/log.h"
#include "trainer/comm/call_context.h"
#include "trainer/comm/gloo_store_adapter.h"
#include "trainer/comm/rank_keys.h"
#include "trainer/comm/sum_kernel.h"

namespace ringmaster::trainer::comm {
namespace {

using Clock = std::chrono::steady_clock;

bool isLoopbackSockaddr(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

// True when every address `host` resolves to is a loopback address.
bool resolvesToLoopbackOnly(const std::string& host) {
  if (host.empty()) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  bool any = false;
  bool all_loopback = true;
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    any = true;
    all_loopback = all_loopback && isLoopbackSockaddr(ai->ai_addr);
  }
  freeaddrinfo(result);
  return any && all_loopback;
}

// The Gloo reduction: c = a + b elementwise (Gloo passes c == a).
void sumFloats(void* c, const void* a, const void* b, size_t n) {
  const float* in[2] = {static_cast<const float*>(a), static_cast<const float*>(b)};
  sumArrays(static_cast<float*>(c), in, 2, n);
}

// Gloo reports timeouts as IoException "Timed out waiting ..."; keep them apart from other I/O
// errors so callers can tell a slow peer from a dead connection.
core::Status statusFromGlooMessage(const std::string& message, core::Code io_code) {
  if (message.find("Timed out") != std::string::npos ||
      message.find("timed out") != std::string::npos ||
      message.find("timeout") != std::string::npos) {
    return core::timeoutError(message);
  }
  return {io_code, message};
}

// Turns whatever Gloo threw into a Status with `what` as context.
core::Status statusFromCurrentException(const std::string& what) {
  try {
    throw;
  } catch (const StoreError& e) {
    return e.status.withContext(what);
  } catch (const gloo::IoException& e) {
    return statusFromGlooMessage(e.what(), core::Code::kUnavailable).withContext(what);
  } catch (const gloo::Exception& e) {
    return statusFromGlooMessage(e.what(), core::Code::kInternal).withContext(what);
  } catch (const std::exception& e) {
    return core::internalError(what + ": " + e.what());
  } catch (...) {
    return core::internalError(what + ": unknown exception from Gloo");
  }
}

}  // namespace

// A kept gloo::allreduce setup (the segmented ring over unbound buffers; its slots come from the
// tag, so buffers may differ between ranks). Gloo's classic AllreduceRing is deliberately not
// used, although it has fewer round trips for small buffers: its bound buffers make Gloo's TCP
// pair set SO_SNDBUF to the first bound message's size, which pins the socket's send buffer there
// for good (no more kernel autotuning). After one 22 KiB bucket the pair had a 45 KiB send
// buffer, below one loopback segment (64 KiB), so every later large send went out one segment
// per delayed ACK (40 ms): 2 ranks, 2.7 MB of gradients in 2 buckets took 96 ms a step, not 15.
// Measured on loopback TCP, 2 ranks: the segmented ring is within 10% of the classic one at 4-16
// KiB and faster from 64 KiB.
struct GlooCommunicator::CachedAllreduce {
  float* data;
  size_t count;
  std::unique_ptr<gloo::AllreduceOptions> options;
};

std::string defaultGlooHostname(const std::string& master_addr) {
  return resolvesToLoopbackOnly(master_addr) ? "127.0.0.1" : "";
}

core::Result<std::unique_ptr<GlooCommunicator>> GlooCommunicator::create(const GlooConfig& config) {
  const std::string what = "rank " + std::to_string(config.rank) + ": gloo rendezvous (world " +
                           std::to_string(config.size) + ")";
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
    return core::invalidArgument(what + ": rank out of range");
  }
  if (config.store == nullptr) return core::invalidArgument(what + ": no store");
  rendezvous::PrefixStore store(config.store, "gloo");
  // Everyone announces itself first, so that a rank that never starts is named in the error.
  RM_RETURN_IF_ERROR_CTX(store.set(rankKey("joined", config.rank), rendezvous::toBytes("1")), what);
  RM_RETURN_IF_ERROR_CTX(waitForRankKeys(store, "joined", config.size, config.timeout, "join"),
                         what);

  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = config.hostname;
    attr.iface = config.iface;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (...) {
    return statusFromCurrentException(what + ": create TCP device (hostname '" + config.hostname +
                                      "', iface '" + config.iface + "')");
  }
  try {
    GlooStoreAdapter adapter(&store, config.timeout);
    context = std::make_shared<gloo::rendezvous::Context>(config.rank, config.size);
    context->setTimeout(config.timeout);
    context->connectFullMesh(adapter, device);
  } catch (...) {
    return statusFromCurrentException(what + ": connectFullMesh on " + device->str());
  }
  RM_LOG(DEBUG, COMM) << "gloo: rank " << config.rank << "/" << config.size << " connected via "
                      << device->str();
  return std::unique_ptr<GlooCommunicator>(new GlooCommunicator(
      config.rank, config.size, config.timeout, std::move(device), std::move(context)));
}

GlooCommunicator::GlooCommunicator(int rank, int size, std::chrono::milliseconds timeout,
                                   std::shared_ptr<gloo::transport::Device> device,
                                   std::shared_ptr<gloo::rendezvous::Context> context)
    : rank_(rank),
      size_(size),
      timeout_(timeout),
      device_(std::move(device)),
      context_(std::move(context)),
      sent_(static_cast<size_t>(size), 0),
      received_(static_cast<size_t>(size), 0) {}

GlooCommunicator::~GlooCommunicator() {
  // Buffers hold raw pointers into the context's pairs: drop them before the context.
  cache_.clear();
  context_.reset();
}

template <typename Fn>
core::Status GlooCommunicator::guarded(const std::string& what, Fn&& fn) {
  if (!broken_.ok()) {
    return core::unavailable(
        what + ": communicator unusable after an earlier error: " + broken_.message());
  }
  try {
    fn();
    return core::Status::Ok();
  } catch (...) {
    broken_ = statusFromCurrentException(what);
    return broken_;
  }
}

gloo::AllreduceOptions& GlooCommunicator::allreduceFor(float* data, size_t count) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->data == data && it->count == count) {
      if (it != cache_.begin()) cache_.splice(cache_.begin(), cache_, it);
      return *cache_.front().options;
    }
  }
  auto options = std::make_unique<gloo::AllreduceOptions>(context_);
  options->setOutput(data, count);
  options->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  options->setReduceFunction(&sumFloats);
  cache_.push_front(CachedAllreduce{data, count, std::move(options)});
  if (cache_.size() > kMaxCachedBuffers) cache_.pop_back();
  return *cache_.front().options;
}

core::Status GlooCommunicator::allreduceSum(float* data, size_t count,
                                            const AllreduceOptions& opts) {
  const auto start = Clock::now();
  const size_t bytes = count * sizeof(float);
  const std::string what = describeRankCall(rank_, "allreduceSum", opts.tag, bytes) +
                           " over gloo ring (world " + std::to_string(size_) + ")";
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : timeout_;
  RM_RETURN_IF_ERROR(guarded(what, [&] {
    if (count == 0) return;
    gloo::AllreduceOptions& options = allreduceFor(data, count);
    options.setTimeout(timeout);
    gloo::allreduce(options);
  }));
  countAllreduce(bytes, start);
  return core::Status::Ok();
}

core::Status GlooCommunicator::broadcast(void* data, size_t bytes, int root) {
  const std::string what =
      describeRankCall(rank_, "broadcast from rank " + std::to_string(root), "", bytes) +
      " over gloo";
  if (root < 0 || root >= size_) return core::invalidArgument(what + ": root out of range");
  return guarded(what, [&] {
    if (bytes == 0) return;
    gloo::BroadcastOptions options(context_);
    options.setOutput(static_cast<char*>(data), bytes);
    options.setRoot(root);
    options.setTimeout(timeout_);
    gloo::broadcast(options);
  });
}

core::Status GlooCommunicator::barrier() {
  return guarded("rank " + std::to_string(rank_) + ": barrier over gloo", [&] {
    gloo::BarrierOptions options(context_);
    options.setTimeout(timeout_);
    gloo::barrier(options);
  });
}

namespace {

// Slots of point-to-point messages: a prefix beside Gloo's collectives' (gloo/types.h).
constexpr uint8_t kPointToPointSlotPrefix = 0x40;

}  // namespace

class GlooCommunicator::GlooSend final : public PendingSend {
 public:
  GlooSend(GlooCommunicator* comm, std::unique_ptr<gloo::transport::UnboundBuffer> buffer,
           std::chrono::milliseconds timeout, std::string what)
      : comm_(comm), buffer_(std::move(buffer)), timeout_(timeout), what_(std::move(what)) {}
  ~GlooSend() override { (void)wait(); }

  core::Status wait() override {
    if (buffer_ == nullptr) return result_;
    // Gloo reads the buffer until this wait returns; after a failure the peer is gone and the
    // communicator broken, so the buffer is released either way.
    result_ = comm_->guarded(what_, [&] {
      if (!buffer_->waitSend(timeout_)) throw std::runtime_error("send aborted");
    });
    buffer_.reset();
    return result_;
  }

 private:
  GlooCommunicator* comm_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;
  std::chrono::milliseconds timeout_;
  std::string what_;
  core::Status result_;
};

core::Result<std::unique_ptr<PendingSend>> GlooCommunicator::startSend(
    const void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
  std::string what = describePointToPoint("send to", peer, opts, bytes) + " over gloo";
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : timeout_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  RM_RETURN_IF_ERROR(guarded(what, [&] {
    const uint64_t slot = gloo::Slot::build(kPointToPointSlotPrefix, sent_[peer]++);
    buffer = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buffer->send(peer, slot);
  }));
  return std::unique_ptr<PendingSend>(
      std::make_unique<GlooSend>(this, std::move(buffer), timeout, std::move(what)));
}

core::Status GlooCommunicator::send(const void* data, size_t bytes, int peer,
                                    const PointToPointOptions& opts) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<PendingSend> pending, startSend(data, bytes, peer, opts));
  return pending->wait();
}

core::Status GlooCommunicator::recv(void* data, size_t bytes, int peer,
                                    const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("receive from", peer, opts, bytes) + " over gloo";
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  const auto timeout = opts.timeout.count() > 0 ? opts.timeout : timeout_;
  return guarded(what, [&] {
    const uint64_t slot = gloo::Slot::build(kPointToPointSlotPrefix, received_[peer]++);
    auto buffer = context_->createUnboundBuffer(data, bytes);
    buffer->recv(peer, slot);
    if (!buffer->waitRecv(timeout)) throw std::runtime_error("receive aborted");
  });
}

}  // namespace ringmaster::trainer::comm
