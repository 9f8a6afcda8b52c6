// bench_allreduce: one rank of one allreduce implementation. For each size from --min-bytes to
// --max-bytes (times --factor), it checks the sum once, warms up, then times --repeats batches
// of allreduces on one persistent buffer and prints (rank 0) the median as
//   RESULT <label> <bytes> <seconds per allreduce> <bus bandwidth GB/s>
// Bus bandwidth is nccl-tests': bytes / seconds * 2 * (n - 1) / n.
// run.sh starts the ranks of every implementation and turns these lines into a table.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/allreduce/peer.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string impl;
  std::string label;
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 256 << 20;
  int64_t factor = 4;
  int64_t repeats = 5;
  int64_t warmup = 1;
  int64_t budget_bytes = 64 << 20;  // payload per timed batch: small sizes run many iterations
  int64_t max_iters = 2000;
  PeerEnv env;
};

core::Result<std::unique_ptr<Peer>> makePeer(const Options& o) {
  if (o.impl == "ours-shm") return makeOursPeer("shm", o.env);
  if (o.impl == "ours-gloo") return makeOursPeer("gloo", o.env);
  if (o.impl == "ours-tcp") return makeOursPeer("tcp", o.env);
  if (o.impl == "gloo-raw") return makeGlooRawPeer(o.env);
  if (o.impl == "mpi") return makeMpiPeer();
  return core::usageError("--impl must be ours-shm, ours-gloo, ours-tcp, gloo-raw or mpi, not '" +
                          o.impl + "'");
}

// Every rank contributes rank + 1; checks that each element holds the sum.
core::Status checkSum(Peer& peer, float* data, size_t count) {
  std::fill(data, data + count, static_cast<float>(peer.rank() + 1));
  RM_RETURN_IF_ERROR(peer.allreduce(data, count));
  const float expected = static_cast<float>(peer.size() * (peer.size() + 1) / 2);
  for (size_t i = 0; i < count; ++i) {
    if (data[i] != expected) {
      return core::internalError("wrong sum at element " + std::to_string(i) + " of " +
                                 std::to_string(count) + ": " + std::to_string(data[i]) +
                                 " != " + std::to_string(expected));
    }
  }
  return core::Status::Ok();
}

core::Status run(const Options& o) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<Peer> peer, makePeer(o));
  const std::string label = o.label.empty() ? o.impl : o.label;
  std::vector<float> buffer(static_cast<size_t>(o.max_bytes) / sizeof(float), 0.0f);
  if (peer->rank() == 0) {
    std::printf("# %s: %d ranks, %lld..%lld bytes x%lld, %lld repeats\n", label.c_str(),
                peer->size(), static_cast<long long>(o.min_bytes),
                static_cast<long long>(o.max_bytes), static_cast<long long>(o.factor),
                static_cast<long long>(o.repeats));
  }
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const size_t count = static_cast<size_t>(bytes) / sizeof(float);
    RM_RETURN_IF_ERROR_CTX(checkSum(*peer, buffer.data(), count),
                           label + " " + std::to_string(bytes) + " bytes");
    // Zeros keep the values finite however often they are summed.
    std::fill(buffer.begin(), buffer.begin() + count, 0.0f);
    const int64_t iters = std::clamp<int64_t>(o.budget_bytes / bytes, 1, o.max_iters);
    std::vector<double> per_op;
    for (int64_t rep = 0; rep < o.warmup + o.repeats; ++rep) {
      RM_RETURN_IF_ERROR(peer->barrier());
      const auto start = Clock::now();
      for (int64_t i = 0; i < iters; ++i) RM_RETURN_IF_ERROR(peer->allreduce(buffer.data(), count));
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (rep >= o.warmup) per_op.push_back(seconds / static_cast<double>(iters));
    }
    std::sort(per_op.begin(), per_op.end());
    const double median = per_op[per_op.size() / 2];
    if (peer->rank() == 0) {
      const double busbw =
          trainer::comm::allreduceBusBandwidth(static_cast<double>(bytes), median, peer->size());
      std::printf("RESULT %s %lld %.9g %.4f\n", label.c_str(), static_cast<long long>(bytes),
                  median, busbw / 1e9);
      std::fflush(stdout);
    }
  }
  return peer->barrier();
}

}  // namespace
}  // namespace ringmaster::bench

int main(int argc, char** argv) {
  using namespace ringmaster;
  core::log::initFromEnv();
  bench::Options o;
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t master_port = 29500;
  int64_t shm_slot_bytes = 0;
  int64_t shm_direct_max_bytes = 0;
  core::FlagSet flags("bench_allreduce", "Allreduce bus bandwidth of one implementation.");
  flags.addString("impl", &o.impl, "ours-shm | ours-gloo | ours-tcp | gloo-raw | mpi");
  flags.addString("label", &o.label, "name in the RESULT lines (default: --impl)");
  flags.addInt("min-bytes", &o.min_bytes, "smallest size");
  flags.addInt("max-bytes", &o.max_bytes, "largest size");
  flags.addInt("factor", &o.factor, "size step (multiplier)");
  flags.addInt("repeats", &o.repeats, "timed batches per size (median reported)");
  flags.addInt("warmup", &o.warmup, "untimed batches per size");
  flags.addInt("budget-bytes", &o.budget_bytes, "payload bytes per batch (sets iterations)");
  flags.addInt("max-iters", &o.max_iters, "most allreduces per batch");
  flags.addString("store-dir", &o.env.store_dir, "gloo-raw: directory for Gloo's FileStore");
  flags.addInt("shm-slot-bytes", &shm_slot_bytes, "ours-shm: staging slot size (0: default)");
  flags.addInt("shm-direct-max-bytes", &shm_direct_max_bytes,
               "ours-shm: largest single-synchronization call (0: default)");
  flags.addInt("rank", &rank, "this rank (not for mpi)", "RANK");
  flags.addInt("world-size", &world_size, "number of ranks (not for mpi)", "WORLD_SIZE");
  flags.addString("master-addr", &o.env.master_addr, "rendezvous host", "MASTER_ADDR");
  flags.addInt("master-port", &master_port, "rendezvous port", "MASTER_PORT");
  flags.addString("host", &o.env.host,
                  "address other ranks reach this one at (not for mpi; empty: this host)",
                  "BENCH_HOST");
  bool help = false;
  if (core::Status s = flags.parse(argc, argv, &help); !s.ok()) {
    std::fprintf(stderr, "%s\n%s", s.message().c_str(), flags.help().c_str());
    return s.exitCode();
  }
  if (help) {
    std::printf("%s", flags.help().c_str());
    return 0;
  }
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes || o.factor < 2 || o.repeats < 1) {
    std::fprintf(stderr, "bench_allreduce: bad size range, factor or repeats\n");
    return 2;
  }
  o.env.rank = static_cast<int>(rank);
  o.env.world_size = static_cast<int>(world_size);
  o.env.master_port = static_cast<int>(master_port);
  o.env.shm_slot_bytes = static_cast<size_t>(shm_slot_bytes);
  o.env.shm_direct_max_bytes = static_cast<size_t>(shm_direct_max_bytes);
  if (core::Status s = bench::run(o); !s.ok()) {
    std::fprintf(stderr, "bench_allreduce (rank %lld): %s\n", static_cast<long long>(rank),
                 s.message().c_str());
    return s.exitCode();
  }
  return 0;
}
