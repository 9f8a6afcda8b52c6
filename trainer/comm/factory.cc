#include "trainer/comm/factory.h"

#include <cstdlib>
#include <utility>

#include "ringmaster/contract/backend_rules.h"
#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/core/log.h"
#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/gloo_communicator.h"
#include "trainer/comm/inproc_communicator.h"
#include "trainer/comm/shm_communicator.h"
#include "trainer/comm/single_rank_communicator.h"
#include "trainer/comm/tcp_communicator.h"

#if RM_HAVE_MPI
#include "trainer/comm/mpi_communicator.h"
constexpr bool kMpiBuilt = true;
#else
constexpr bool kMpiBuilt = false;
#endif

namespace ringmaster::trainer::comm {
namespace {

// Keeps the store client / server that the factory made alive as long as the communicator
// (peers may still be reading keys when this rank is done), and forwards every call.
class StoreOwningCommunicator final : public Communicator {
 public:
  StoreOwningCommunicator(std::unique_ptr<rendezvous::TcpStoreServer> server,
                          std::unique_ptr<rendezvous::TcpStoreClient> client,
                          std::unique_ptr<Communicator> inner)
      : server_(std::move(server)), client_(std::move(client)), inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  std::string allreduceAlgorithm(size_t bytes) const override {
    return inner_->allreduceAlgorithm(bytes);
  }
  std::optional<size_t> doublingMaxBytes() const override { return inner_->doublingMaxBytes(); }
  core::Status setDoublingMaxBytes(size_t bytes) override {
    return inner_->setDoublingMaxBytes(bytes);
  }
  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override {
    core::Status s = inner_->allreduceSum(data, count, opts);
    stats_ = inner_->stats();
    return s;
  }
  core::Status broadcast(void* data, size_t bytes, int root) override {
    return inner_->broadcast(data, bytes, root);
  }
  core::Status barrier() override { return inner_->barrier(); }
  core::Status send(const void* data, size_t bytes, int peer,
                    const PointToPointOptions& opts) override {
    return inner_->send(data, bytes, peer, opts);
  }
  core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) override {
    return inner_->recv(data, bytes, peer, opts);
  }
  core::Result<std::unique_ptr<PendingSend>> startSend(const void* data, size_t bytes, int peer,
                                                       const PointToPointOptions& opts) override {
    return inner_->startSend(data, bytes, peer, opts);
  }
  DeviceCollectives* deviceCollectives() override { return inner_->deviceCollectives(); }

 private:
  // Destroyed in reverse order: the communicator first, the server last.
  std::unique_ptr<rendezvous::TcpStoreServer> server_;
  std::unique_ptr<rendezvous::TcpStoreClient> client_;
  std::unique_ptr<Communicator> inner_;
};

struct Rendezvous {
  std::unique_ptr<rendezvous::TcpStoreServer> server;
  std::unique_ptr<rendezvous::TcpStoreClient> client;
  rendezvous::Store* store = nullptr;  // the caller's or `client`
};

core::Result<Rendezvous> connectStore(const CommConfig& config, const std::string& what) {
  Rendezvous r;
  if (config.store != nullptr) {
    r.store = config.store;
    return r;
  }
  std::string host_error;
  if (config.rank == 0 && config.host_store) {
    core::Result<std::unique_ptr<rendezvous::TcpStoreServer>> server =
        rendezvous::TcpStoreServer::start("", config.master_port, config.store_secret);
    if (server.ok()) {
      r.server = std::move(server).value();
      RM_LOG(INFO, RDZV) << what << ": hosting the rendezvous store on port " << r.server->port();
    } else {
      // Usually the launcher already hosts it on this port; connecting will tell.
      host_error = server.status().message();
      RM_LOG(DEBUG, RDZV) << what << ": not hosting the store: " << host_error;
    }
  }
  core::Result<std::unique_ptr<rendezvous::TcpStoreClient>> client =
      rendezvous::TcpStoreClient::connect(config.master_addr, config.master_port,
                                          config.store_secret, config.timeout);
  if (!client.ok()) {
    core::Status s = client.status().withContext(what + ": connect to the rendezvous store");
    if (!host_error.empty()) s = std::move(s).withContext("could not host it (" + host_error + ")");
    return s;
  }
  r.client = std::move(client).value();
  r.store = r.client.get();
  return r;
}

core::Result<std::unique_ptr<Communicator>> makeMpi(const CommConfig& config,
                                                    const std::string& what) {
#if RM_HAVE_MPI
  RM_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> mpi, MpiCommunicator::create());
  if (config.world_size != 1 && (mpi->size() != config.world_size || mpi->rank() != config.rank)) {
    return core::invalidArgument(what + ": mpirun says rank " + std::to_string(mpi->rank()) +
                                 " of " + std::to_string(mpi->size()) + ", the config says " +
                                 std::to_string(config.rank) + " of " +
                                 std::to_string(config.world_size));
  }
  return std::unique_ptr<Communicator>(std::move(mpi));
#else
  return core::unavailable(what + ": this build has no MPI backend (Open MPI not found)");
#endif
}

core::Result<std::unique_ptr<Communicator>> makeShm(const CommConfig& config,
                                                    rendezvous::Store* store) {
  ShmConfig shm;
  shm.rank = config.rank;
  shm.size = config.world_size;
  shm.store = store;
  shm.timeout = config.timeout;
  shm.slot_bytes = config.shm_slot_bytes;
  shm.direct_max_bytes = config.shm_direct_max_bytes;
  if (config.point_to_point) shm.ring_bytes = defaultShmRingBytes(config.world_size);
  shm.pretend_unreachable_for_testing = config.shm_pretend_unreachable_for_testing;
  RM_ASSIGN_OR_RETURN(auto comm, ShmCommunicator::create(shm));
  return std::unique_ptr<Communicator>(std::move(comm));
}

// The address peers dial to reach this rank over tcp or gloo.
std::string advertisedHost(const CommConfig& config) {
  return config.host.empty() ? defaultGlooHostname(config.master_addr) : config.host;
}

core::Result<std::unique_ptr<Communicator>> makeGloo(const CommConfig& config,
                                                     rendezvous::Store* store) {
  GlooConfig gloo;
  gloo.rank = config.rank;
  gloo.size = config.world_size;
  gloo.store = store;
  gloo.timeout = config.timeout;
  gloo.hostname = advertisedHost(config);
  gloo.iface = config.gloo_iface;
  RM_ASSIGN_OR_RETURN(auto comm, GlooCommunicator::create(gloo));
  return std::unique_ptr<Communicator>(std::move(comm));
}

core::Result<std::unique_ptr<Communicator>> makeTcp(const CommConfig& config,
                                                    rendezvous::Store* store) {
  TcpConfig tcp;
  tcp.rank = config.rank;
  tcp.size = config.world_size;
  tcp.store = store;
  tcp.timeout = config.timeout;
  tcp.hostname = advertisedHost(config);
  RM_ASSIGN_OR_RETURN(auto comm, TcpCommunicator::create(tcp));
  if (config.tcp_doubling_max_bytes > 0) {
    RM_RETURN_IF_ERROR(comm->setDoublingMaxBytes(config.tcp_doubling_max_bytes));
  }
  return std::unique_ptr<Communicator>(std::move(comm));
}

core::Result<std::unique_ptr<Communicator>> makeNccl(const CommConfig& config,
                                                     rendezvous::Store* store,
                                                     const std::string& what) {
  if (!config.make_nccl)
    return core::unavailable(what + ": no NCCL backend (the GPU module is not loaded)");
  NcclConfig nccl;
  nccl.rank = config.rank;
  nccl.size = config.world_size;
  nccl.store = store;
  nccl.timeout = config.timeout;
  nccl.collective_timeout = config.collective_timeout;
  return config.make_nccl(nccl);
}

}  // namespace

bool runningUnderMpirun() {
  return contract::startedByMpirun([](const char* name) { return std::getenv(name); });
}

bool mpiBackendBuilt() { return kMpiBuilt; }

core::Result<std::unique_ptr<Communicator>> makeMpiGroup(Communicator& world,
                                                         const std::string& name, int rank,
                                                         int size) {
#if RM_HAVE_MPI
  auto* mpi = dynamic_cast<MpiCommunicator*>(&world);
  if (mpi == nullptr) {
    return core::invalidArgument("communicator group " + name + ": the world's backend is " +
                                 world.backend() + ", not mpi");
  }
  RM_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> group, mpi->split(name, rank, size));
  return std::unique_ptr<Communicator>(std::move(group));
#else
  (void)world;
  (void)rank;
  (void)size;
  return core::unavailable("communicator group " + name +
                           ": this build has no MPI backend (Open MPI not found)");
#endif
}

core::Result<std::unique_ptr<Communicator>> makeCommunicator(const CommConfig& config) {
  const std::string& backend = config.backend;
  const std::string what = "rank " + std::to_string(config.rank) + ": communicator '" + backend +
                           "' (world " + std::to_string(config.world_size) + ")";
  if (backend != "auto" && backend != "shm" && backend != "gloo" && backend != "mpi" &&
      backend != "inproc" && backend != "nccl" && backend != "tcp") {
    return core::invalidArgument(what +
                                 ": unknown backend (auto, nccl, shm, tcp, gloo, mpi, inproc)");
  }
  if (config.device != "cpu" && config.device != "cuda")
    return core::invalidArgument(what + ": device '" + config.device + "' (cpu or cuda)");
  // The contract's rules: gradients in GPU memory go through NCCL, host memory through the rest.
  contract::BackendUse use;
  use.backend = backend;
  use.device = config.device;
  if (std::string why = contract::backendError(use); !why.empty()) {
    return core::invalidArgument(what + ": " + why);
  }
  const bool cuda = config.device == "cuda";
  const contract::AutoBackend automatic =
      contract::autoBackend(cuda, runningUnderMpirun() && mpiBackendBuilt(), config.world_size);
  const bool nccl =
      backend == "nccl" || (backend == "auto" && automatic == contract::AutoBackend::kNccl);
  if (backend == "mpi" || (backend == "auto" && automatic == contract::AutoBackend::kMpi)) {
    return makeMpi(config, what);
  }
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size) {
    return core::invalidArgument(what + ": rank must be in [0, world size)");
  }
  if (backend == "inproc") {
    if (config.inproc_group == nullptr || config.inproc_group->size() != config.world_size) {
      return core::invalidArgument(what + ": needs an inproc_group of the world size");
    }
    return std::unique_ptr<Communicator>(
        std::make_unique<InProcCommunicator>(config.inproc_group, config.rank));
  }
  if (nccl && config.world_size == 1 && config.store == nullptr) {
    // One rank needs no rendezvous: the unique id goes through a store of its own.
    std::unique_ptr<rendezvous::Store> own = rendezvous::makeInMemoryStore();
    return makeNccl(config, own.get(), what);
  }
  if (backend == "auto" && automatic == contract::AutoBackend::kSingleRank) {
    return std::unique_ptr<Communicator>(std::make_unique<SingleRankCommunicator>());
  }

  RM_ASSIGN_OR_RETURN(Rendezvous rdzv, connectStore(config, what));
  rendezvous::PrefixStore store(
      rdzv.store, config.key_prefix.empty() ? std::string("comm") : config.key_prefix + "/comm");
  core::Result<std::unique_ptr<Communicator>> comm = core::internalError(what + ": no backend");
  if (nccl) {
    comm = makeNccl(config, &store, what);
  } else if (backend == "shm") {
    comm = makeShm(config, &store);
  } else if (backend == "gloo") {
    comm = makeGloo(config, &store);
  } else if (backend == "tcp") {
    comm = makeTcp(config, &store);
  } else {
    comm = makeShm(config, &store);
    if (!comm.ok() && comm.status().code() == core::Code::kUnavailable) {
      RM_LOG(INFO, COMM) << what << ": shm not possible, using tcp: " << comm.status().message();
      comm = makeTcp(config, &store);
    }
  }
  if (!comm.ok()) return comm.status();
  RM_LOG(INFO, COMM) << what << ": using " << (*comm)->backend();
  if (rdzv.server == nullptr && rdzv.client == nullptr) return comm;
  return std::unique_ptr<Communicator>(std::make_unique<StoreOwningCommunicator>(
      std::move(rdzv.server), std::move(rdzv.client), std::move(comm).value()));
}

}  // namespace ringmaster::trainer::comm
