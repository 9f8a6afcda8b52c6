#pragma once
// The launcher's rendezvous: how the pods of one attempt find each other.
//
// Protocol (all keys under "<job>/attempt-<A>/", so nothing an earlier attempt wrote can be
// read by this one; a restarted gang starts from an empty key space even on a store that
// survived):
//   1. Pod 0 hosts the TCP store on $POD_IP-or-0.0.0.0:RINGMASTER_STORE_PORT (never MASTER_PORT,
//      which belongs to the training program) for the whole attempt and
//      sets "launcher/store-host" = its description. Every connection authenticates with the
//      attempt's RINGMASTER_STORE_SECRET, so a stranger reads and writes nothing, and a store
//      of another attempt (a different secret) is refused like one without that key.
//   2. Every pod connects to MASTER_ADDR:RINGMASTER_STORE_PORT, retrying with backoff until the
//   deadline
//      (start order never matters), and reads "launcher/store-host". A store without that key
//      is not this attempt's (e.g. the last attempt's pod 0, still terminating, answers on the
//      same name): the pod drops the connection and tries again.
//   3. Every pod sets "launcher/node/<NODE_RANK>" = NodeInfo (host, IP, first rank, local ranks)
//      and waits until all NNODES node keys exist. Registration is idempotent (a set, not a
//      counter), and the wait names the pods that are missing. Having read every NodeInfo, it
//      sets "launcher/started/<NODE_RANK>".
//   4. At the end every pod sets "launcher/exited/<NODE_RANK>"; pod 0, whose exit takes the
//      store away, first waits until every pod has started (so none is cut off while still
//      reading the rendezvous) and, up to a linger time, until every pod has exited (so their
//      last heartbeats land).
//
// Thread-safety: joinGang is as thread-safe as the store; AttemptStore is used from one thread
// (its connectAnother() hands other threads their own client). Failure: kTimeout naming the
// missing pods / the unreachable address and the deadline; kCancelled when `stop` is requested;
// kInvalidArgument when pods disagree on the shape of the world.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/rendezvous/store.h"
#include "ringmaster/rendezvous/tcp_store.h"

namespace ringmaster::launcher {

struct NodeInfo {
  int node_rank = 0;
  std::string host;  // POD_NAME or this machine's hostname
  std::string ip;    // POD_IP, may be empty
  int first_rank = 0;
  int local_world_size = 1;
  bool operator==(const NodeInfo&) const = default;
};

// "node_rank=1 host=j-worker-1 ip=127.1.0.3 first_rank=2 local_world_size=2" (one line).
std::string encodeNodeInfo(const NodeInfo& info);
core::Result<NodeInfo> decodeNodeInfo(const std::string& text);

inline constexpr char kStoreHostKey[] = "launcher/store-host";
std::string nodeKey(int node_rank);     // "launcher/node/<i>"
std::string startedKey(int node_rank);  // "launcher/started/<i>"
std::string exitedKey(int node_rank);   // "launcher/exited/<i>"

// Step 3 over a store already scoped to the attempt. Returns every pod's NodeInfo by node rank,
// but for the `empty` ones (an elastic parameter-server job's worker slots without a pod when
// this one was made: PodEnvironment::emptyPods), which it neither waits for nor returns.
core::Result<std::vector<NodeInfo>> joinGang(rendezvous::Store& attempt_store, const NodeInfo& me,
                                             int nnodes, std::chrono::milliseconds timeout,
                                             const core::StopSource* stop = nullptr,
                                             const std::vector<int>& empty = {});

// Step 4. Never fails the pod: what it cannot do it logs. `start_timeout` bounds pod 0's wait
// for pods that have not started, `linger` its wait for pods still running; a stop request
// ends both at once. Pod 0 waits for the pods that joined the gang (those of an elastic job
// that came and went included), not for slots that never had one.
void finishGang(rendezvous::Store& attempt_store, int node_rank, int nnodes,
                std::chrono::milliseconds start_timeout, std::chrono::milliseconds linger,
                const core::StopSource* stop = nullptr);

// Steps 1 and 2: the connection to this attempt's store (and, on pod 0, the store itself).
//
// Ownership: owns the server (pod 0), its client and the attempt-scoped view over it; the store
// lives as long as this object, so pod 0 keeps it for the whole attempt.
class AttemptStore {
 public:
  static core::Result<std::unique_ptr<AttemptStore>> open(const contract::PodEnvironment& env,
                                                          std::chrono::milliseconds timeout,
                                                          const core::StopSource* stop = nullptr);
  // Scoped to "<job>/attempt-<A>/".
  rendezvous::Store& store() { return scoped_; }
  // Another client of the same store (one per thread that blocks on it).
  core::Result<std::unique_ptr<rendezvous::TcpStoreClient>> connectAnother(
      std::chrono::milliseconds timeout) const;
  // "host:port" this pod connects to.
  std::string address() const { return host_ + ":" + std::to_string(port_); }

 private:
  AttemptStore(std::unique_ptr<rendezvous::TcpStoreServer> server,
               std::unique_ptr<rendezvous::TcpStoreClient> client, std::string host, int port,
               std::string secret, const std::string& prefix);

  std::unique_ptr<rendezvous::TcpStoreServer> server_;  // pod 0 only
  std::unique_ptr<rendezvous::TcpStoreClient> client_;
  std::string host_;
  int port_;
  std::string secret_;
  rendezvous::PrefixStore scoped_;  // over client_
};

}  // namespace ringmaster::launcher
