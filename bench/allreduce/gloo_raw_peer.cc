// Gloo as its users call it: FileStore rendezvous, TCP device, the classic AllreduceRing.

#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <exception>
#include <list>

#include "bench/allreduce/peer.h"

namespace ringmaster::bench {
namespace {

core::Status fromException(const std::string& what) {
  try {
    throw;
  } catch (const std::exception& e) {
    return core::unavailable(what + ": " + e.what());
  }
}

class GlooRawPeer final : public Peer {
 public:
  explicit GlooRawPeer(std::shared_ptr<gloo::rendezvous::Context> context)
      : context_(std::move(context)) {}
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }

  core::Status allreduce(float* data, size_t count) override {
    try {
      for (auto& kept : rings_) {
        if (kept.data == data && kept.count == count) {
          kept.ring->run();
          return core::Status::Ok();
        }
      }
      auto ring = std::make_unique<gloo::AllreduceRing<float>>(context_, std::vector<float*>{data},
                                                               static_cast<int>(count));
      rings_.push_back({data, count, std::move(ring)});
      rings_.back().ring->run();
      return core::Status::Ok();
    } catch (...) {
      return fromException("gloo AllreduceRing (" + std::to_string(count * 4) + " bytes)");
    }
  }

  core::Status barrier() override {
    try {
      gloo::BarrierOptions options(context_);
      gloo::barrier(options);
      return core::Status::Ok();
    } catch (...) {
      return fromException("gloo barrier");
    }
  }

 private:
  struct Kept {
    float* data;
    size_t count;
    std::unique_ptr<gloo::AllreduceRing<float>> ring;
  };
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::list<Kept> rings_;
};

}  // namespace

core::Result<std::unique_ptr<Peer>> makeGlooRawPeer(const PeerEnv& env) {
  if (env.store_dir.empty()) return core::usageError("gloo-raw needs --store-dir");
  try {
    gloo::rendezvous::FileStore file_store(env.store_dir);
    gloo::rendezvous::PrefixStore store("gloo-raw", file_store);
    gloo::transport::tcp::attr attr;
    attr.hostname = env.host.empty() ? "127.0.0.1" : env.host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(env.rank, env.world_size);
    context->setTimeout(std::chrono::seconds(60));
    context->connectFullMesh(store, device);
    return std::unique_ptr<Peer>(std::make_unique<GlooRawPeer>(std::move(context)));
  } catch (...) {
    return fromException("gloo-raw rendezvous in " + env.store_dir);
  }
}

}  // namespace ringmaster::bench
