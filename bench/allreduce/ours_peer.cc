#include "bench/allreduce/peer.h"
#include "trainer/comm/factory.h"

namespace ringmaster::bench {
namespace {

class OursPeer final : public Peer {
 public:
  explicit OursPeer(std::unique_ptr<trainer::comm::Communicator> comm) : comm_(std::move(comm)) {}
  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  core::Status allreduce(float* data, size_t count) override {
    return comm_->allreduceSum(data, count, {});
  }
  core::Status barrier() override { return comm_->barrier(); }

 private:
  std::unique_ptr<trainer::comm::Communicator> comm_;
};

}  // namespace

core::Result<std::unique_ptr<Peer>> makeOursPeer(const std::string& backend, const PeerEnv& env) {
  trainer::comm::CommConfig config;
  config.backend = backend;
  config.rank = env.rank;
  config.world_size = env.world_size;
  config.master_addr = env.master_addr;
  config.master_port = env.master_port;
  config.key_prefix = "bench";
  config.host = env.host;
  config.timeout = std::chrono::seconds(60);
  if (env.shm_slot_bytes > 0) config.shm_slot_bytes = env.shm_slot_bytes;
  if (env.shm_direct_max_bytes > 0) config.shm_direct_max_bytes = env.shm_direct_max_bytes;
  RM_ASSIGN_OR_RETURN(auto comm, trainer::comm::makeCommunicator(config));
  if (comm->backend() != backend) {
    return core::unavailable("asked for backend " + backend + ", got " + comm->backend());
  }
  return std::unique_ptr<Peer>(std::make_unique<OursPeer>(std::move(comm)));
}

}  // namespace ringmaster::bench
