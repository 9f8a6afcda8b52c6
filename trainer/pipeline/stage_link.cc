#include "trainer/pipeline/stage_link.h"

#include <optional>
#include <utility>

namespace ringmaster::trainer::pipeline {
namespace {

using core::Status;

class HostLink final : public StageLink {
 public:
  explicit HostLink(comm::Communicator& comm) : comm_(comm) {}
  core::Result<std::unique_ptr<comm::PendingSend>> startSend(
      const void* data, size_t bytes, int peer, const comm::PointToPointOptions& opts) override {
    return comm_.startSend(data, bytes, peer, opts);
  }
  Status recv(void* data, size_t bytes, int peer, const comm::PointToPointOptions& opts) override {
    return comm_.recv(data, bytes, peer, opts);
  }
  Status flush() override { return Status::Ok(); }

 private:
  comm::Communicator& comm_;
};

class DeviceGroupLink final : public StageLink {
 public:
  DeviceGroupLink(comm::DeviceCollectives& device, void* stream)
      : device_(device), stream_(stream) {}

  core::Result<std::unique_ptr<comm::PendingSend>> startSend(
      const void* data, size_t bytes, int peer, const comm::PointToPointOptions& opts) override {
    // Two passes in a row that each send: the first's send goes out on its own.
    RM_RETURN_IF_ERROR(flush());
    held_ = Held{data, bytes, peer, opts.tag, ++sends_};
    return std::unique_ptr<comm::PendingSend>(new HeldSend(*this, sends_));
  }

  Status recv(void* data, size_t bytes, int peer, const comm::PointToPointOptions& opts) override {
    std::optional<Held> send = std::exchange(held_, std::nullopt);
    Status s = send ? device_.sendRecvAsync(send->data, send->bytes, send->peer, data, bytes, peer,
                                            stream_)
                    : device_.sendRecvAsync(nullptr, 0, -1, data, bytes, peer, stream_);
    if (s.ok()) return s;
    return std::move(s).withContext(send ? send->tag + " with " + opts.tag : opts.tag);
  }

  Status flush() override {
    std::optional<Held> send = std::exchange(held_, std::nullopt);
    if (!send) return Status::Ok();
    return device_.sendRecvAsync(send->data, send->bytes, send->peer, nullptr, 0, -1, stream_)
        .withContext(send->tag);
  }

 private:
  struct Held {
    const void* data;
    size_t bytes;
    int peer;
    std::string tag;
    uint64_t id;
  };
  // The send as the executor waits for it: enqueued by then (the stream orders the rest).
  class HeldSend final : public comm::PendingSend {
   public:
    HeldSend(DeviceGroupLink& link, uint64_t id) : link_(link), id_(id) {}
    Status wait() override {
      if (link_.held_ && link_.held_->id == id_) RM_RETURN_IF_ERROR(link_.flush());
      return link_.device_.asyncError();
    }

   private:
    DeviceGroupLink& link_;
    const uint64_t id_;
  };

  comm::DeviceCollectives& device_;
  void* const stream_;
  std::optional<Held> held_;
  uint64_t sends_ = 0;
};

}  // namespace

Status StageLink::send(const void* data, size_t bytes, int peer,
                       const comm::PointToPointOptions& opts) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<comm::PendingSend> started,
                      startSend(data, bytes, peer, opts));
  return started->wait();
}

std::unique_ptr<StageLink> makeStageLink(comm::Communicator& comm, void* stream) {
  if (comm::DeviceCollectives* device = comm.deviceCollectives()) {
    return std::make_unique<DeviceGroupLink>(*device, stream);
  }
  return std::make_unique<HostLink>(comm);
}

}  // namespace ringmaster::trainer::pipeline
