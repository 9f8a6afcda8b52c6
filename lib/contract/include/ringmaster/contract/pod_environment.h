#pragma once
// The worker pod's environment: the operator writes it (operator/builders.cc, through encode),
// the launcher reads it (parsePodEnvironment). Names, defaults and bounds live only here, so
// that writer and reader cannot drift apart.
//
//   NODE_RANK          this pod's index in [0, NNODES)                       default 0
//   NNODES             pods in the gang                                      default 1
//   LOCAL_WORLD_SIZE   processes per pod (procsPerReplica)                   default 1
//   WORLD_SIZE         processes in the gang; must equal NNODES * LOCAL_WORLD_SIZE
//                      (torchrun's meaning: processes, not pods)              default the product
//   MASTER_ADDR        pod 0's address: the launcher's store and the program's rank 0
//                                                                            default 127.0.0.1
//   MASTER_PORT        the training program's own port on pod 0 (torch.distributed's
//                      TCPStore on rank 0, as under PyTorchJob); the launcher never binds it
//                                                                            default 29500
//   RINGMASTER_STORE_PORT  where pod 0's launcher hosts the rendezvous store; must differ
//                      from MASTER_PORT                                      default 29510
//   RINGMASTER_JOB     job name (key prefix)                                 default "local"
//   RINGMASTER_ATTEMPT the gang's attempt (status.restarts)                  default 0
//   RINGMASTER_BACKEND passed through to the trainer                         optional
//   RINGMASTER_STORE_SECRET  the attempt's rendezvous store secret (at least 32 characters;
//                      store_secret.h)                          required when NNODES > 1
//   RINGMASTER_LAUNCHER_MODE  native | mpi                                   default native
//   RINGMASTER_WORK_DIR  MPI mode: where sshd's files go                     optional
//   RINGMASTER_PBT     a pbt member of a program of the user's own: its spec.trainer.pbt as
//                      JSON, which the launcher runs the program's intervals by   optional
//   RINGMASTER_WORKER_PODS, RINGMASTER_WORKER_SLOTS  an elastic parameter-server job's worker
//                      pods when this pod was made, and the worker pod slots before the
//                      servers' pods: 1 <= pods <= slots <= NNODES, both or neither. Slots
//                      [pods, slots) are empty until the job scales up         optional
//   POD_IP, POD_NAME   from the downward API; POD_IP is where we listen       optional
//   NVIDIA_VISIBLE_DEVICES  set (and not void/none) on GPU pods               optional
// Defaults make a bare `ringmaster-launcher` a one-pod world on this machine. An empty value
// reads as unset.
//
// Thread-safety: value types and pure functions. Failure: kInvalidArgument naming the variable
// and its value ("NODE_RANK=3 must be in [0, NNODES=2)").

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/contract/store_secret.h"
#include "ringmaster/contract/world_limits.h"
#include "ringmaster/core/status.h"

namespace ringmaster::contract {

namespace pod_env {

inline constexpr char kNodeRank[] = "NODE_RANK";
inline constexpr char kNnodes[] = "NNODES";
inline constexpr char kLocalWorldSize[] = "LOCAL_WORLD_SIZE";
inline constexpr char kWorldSize[] = "WORLD_SIZE";
inline constexpr char kMasterAddr[] = "MASTER_ADDR";
inline constexpr char kMasterPort[] = "MASTER_PORT";
inline constexpr char kStorePort[] = "RINGMASTER_STORE_PORT";
inline constexpr char kJob[] = "RINGMASTER_JOB";
inline constexpr char kAttempt[] = "RINGMASTER_ATTEMPT";
inline constexpr char kBackend[] = "RINGMASTER_BACKEND";
inline constexpr const char* kStoreSecret = store_secret::kEnv;
inline constexpr char kLauncherMode[] = "RINGMASTER_LAUNCHER_MODE";
inline constexpr char kWorkDir[] = "RINGMASTER_WORK_DIR";
inline constexpr char kPbt[] = "RINGMASTER_PBT";
inline constexpr char kWorkerPods[] = "RINGMASTER_WORKER_PODS";
inline constexpr char kWorkerSlots[] = "RINGMASTER_WORKER_SLOTS";
// Set by Kubernetes from these pod fields (the downward API), not by encode().
inline constexpr char kPodIp[] = "POD_IP";
inline constexpr char kPodIpField[] = "status.podIP";
inline constexpr char kPodName[] = "POD_NAME";
inline constexpr char kPodNameField[] = "metadata.name";
// Set by the NVIDIA container runtime, not by the operator.
inline constexpr char kNvidiaVisibleDevices[] = "NVIDIA_VISIBLE_DEVICES";

// The worker container's own ports: the training program's MASTER_PORT (given to it, never bound
// by the launcher, so that torch.distributed's store on rank 0 can take it), the launcher's
// rendezvous store, its /healthz, its sshd in MPI mode (the launcher's --ssh-port default). A
// user's other listeners may not take them.
inline constexpr int32_t kMasterPortDefault = 29500;
inline constexpr int32_t kRendezvousPort = 29510;
inline constexpr int32_t kHealthPort = 8080;
inline constexpr int32_t kSshPort = 2222;

// What the launcher accepts (world_limits.h): pods of a world, processes of a pod, the world.
inline constexpr int64_t kMaxNodes = kMaxWorldSize;
inline constexpr int64_t kMaxLocalWorldSize = kMaxProcsPerPod;

}  // namespace pod_env

// "<job>/attempt-<attempt>": the prefix of every rendezvous key of one attempt of a job.
std::string attemptKeyPrefix(const std::string& job, int64_t attempt);

enum class LauncherMode { kNative, kMpi };

// "native" or "mpi": RINGMASTER_LAUNCHER_MODE's spelling.
std::string_view launcherModeName(LauncherMode mode);
// The same, for contract/spelling.h.
inline std::string_view name(LauncherMode mode) { return launcherModeName(mode); }
// The mode spelled `text`; nullopt for anything else.
std::optional<LauncherMode> parseLauncherMode(std::string_view text);

struct PodEnvironment {
  int node_rank = 0;
  int nnodes = 1;
  int local_world_size = 1;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = pod_env::kMasterPortDefault;
  int store_port = pod_env::kRendezvousPort;
  std::string job = "local";
  int64_t attempt = 0;
  std::string backend;  // "" when unset
  LauncherMode mode = LauncherMode::kNative;
  std::string work_dir;  // "" when unset
  std::string pbt;       // RINGMASTER_PBT's JSON; "" when unset
  int worker_pods = 0;   // RINGMASTER_WORKER_PODS; 0 when unset (every worker slot is filled)
  int worker_slots = 0;  // RINGMASTER_WORKER_SLOTS; 0 when unset
  // "" when unset (a one-pod world: the launcher makes one up, nobody else needs it).
  std::string store_secret;
  std::string pod_ip;    // "" when unset
  std::string pod_name;  // "" when unset
  bool has_gpus = false;

  // "<job>/attempt-<attempt>": every key of this attempt lives under it.
  std::string attemptPrefix() const;
  // Where this pod's servers listen: POD_IP, else every interface.
  std::string bindHost() const { return pod_ip.empty() ? "0.0.0.0" : pod_ip; }
  // The first global rank of this pod's processes.
  int firstRank() const { return node_rank * local_world_size; }
  // "pod 1 (job-worker-1)" or "pod 1", for log lines.
  std::string describePod() const;
  // The pods of the gang that did not exist when this pod was made: the empty worker slots
  // [worker_pods, worker_slots) of an elastic parameter-server job; none otherwise.
  std::vector<int> emptyPods() const;

  bool operator==(const PodEnvironment&) const = default;
};

// The variables the operator writes, in the order it writes them: every one from NODE_RANK to
// RINGMASTER_STORE_SECRET, then RINGMASTER_LAUNCHER_MODE in MPI mode only (native pods have
// never carried it) and RINGMASTER_WORK_DIR when set. pod_ip, pod_name and has_gpus are not
// among them: Kubernetes and the container runtime set those.
std::vector<std::pair<std::string, std::string>> encode(const PodEnvironment& env);

// Reads a variable; nullptr when unset. getenv in production, a map in tests.
using EnvLookup = std::function<const char*(const char*)>;

core::Result<PodEnvironment> parsePodEnvironment(const EnvLookup& lookup);
core::Result<PodEnvironment> parsePodEnvironment(const std::map<std::string, std::string>& env);

}  // namespace ringmaster::contract
