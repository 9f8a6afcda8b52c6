#pragma once
// The environment of one rank's process: the launcher writes it (launcher/rank_processes.h and,
// under mpirun, launcher/mpi_mode.cc, through encode and encodeForMpirun), the trainer reads it
// (parseRankEnvironment). Names, defaults and bounds live only here, so that writer and reader
// cannot drift apart. torchrun's names, so that a user's program started by the launcher finds
// its place in the world as it would under torchrun.
//
//   RANK               this process's rank in [0, WORLD_SIZE)                default 0
//   LOCAL_RANK         its index among its pod's processes (not negative)    default 0
//   GROUP_RANK         torchrun's name for NODE_RANK; written, never read
//   NODE_RANK          its pod's index (pod_environment.h's bounds)          default 0
//   WORLD_SIZE         processes in the world, in [1, kMaxWorldSize]         default 1
//   LOCAL_WORLD_SIZE   processes per pod (pod_environment.h's bounds)        default 1
//   NNODES             pods in the gang (pod_environment.h's bounds)         default 1
//   MASTER_ADDR        pod 0's address (the store's host)                    default 127.0.0.1
//   MASTER_PORT        the program's own port on pod 0, in [1, 65535]        default 29500
//   RINGMASTER_STORE_PORT  the rendezvous store's port, in [1, 65535]; unset: MASTER_PORT (a
//                      trainer outside the launcher hosts its own store there)
//   RINGMASTER_JOB     job name (key prefix)                                 default "local"
//   RINGMASTER_ATTEMPT the gang's attempt (not negative)                     default 0
//   RINGMASTER_USE_AGENT_STORE  1: the launcher hosts the store, rank 0 only connects to it and
//                      every rank heartbeats into it; 0: rank 0 hosts one   default 0
//   RINGMASTER_STORE_SECRET  what connections to the store prove they know (store_secret.h);
//                      "" when unset: a store of the trainer's own, opened by the same ""
//   RINGMASTER_HEARTBEAT_MS  how often a rank heartbeats (positive)         default 1000
//   RINGMASTER_BACKEND the collective backend; the trainer reads it as its --backend flag's
//                      default                                              optional
//   RINGMASTER_WORKER_PODS  the pod's (pod_environment.h), passed on: an elastic
//                      parameter-server job's worker pods when the pod was made  optional
//   POD_IP             where the process listens; inherited from the pod (the downward API),
//                      never written by encode                              optional
//   RINGMASTER_SUMMARY_FILE  where a program of the user's own, on the pod of rank 0, writes its
//                      run's summary (a JSON object with the trainer summary's names:
//                      testAccuracy, finalTrainLoss, ...) for the pod's termination message,
//                      whence the job's status.progress and a search's objective; the launcher
//                      sets it (not encode), the built-in trainer gets --summary-json instead
//   RINGMASTER_PBT_INTERVAL, RINGMASTER_PBT_INTERVALS, RINGMASTER_CHECKPOINT_DIR  a pbt member's
//                      run of a program of the user's own: interval i (1-based) of n, and the
//                      directory it resumes from and leaves its checkpoint in; the launcher's
// Under mpirun (OMPI_COMM_WORLD_RANK set and RANK unset) Open MPI's variables take the place of
// RANK, WORLD_SIZE and LOCAL_RANK: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE and
// OMPI_COMM_WORLD_LOCAL_RANK, with the same defaults and bounds. Defaults make a bare
// `ringmaster-trainer` a world of one process. An empty value reads as unset.
//
// Thread-safety: value types and pure functions. Failure: kInvalidArgument naming the variable
// and its value ("RANK=2 must be in [0, WORLD_SIZE=2)").

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/world_limits.h"
#include "ringmaster/core/status.h"

namespace ringmaster::contract {

namespace rank_env {

inline constexpr char kRank[] = "RANK";
inline constexpr char kLocalRank[] = "LOCAL_RANK";
inline constexpr char kGroupRank[] = "GROUP_RANK";
// The pod's variables, passed on under the same names.
inline constexpr const char* kNodeRank = pod_env::kNodeRank;
inline constexpr const char* kWorldSize = pod_env::kWorldSize;
inline constexpr const char* kLocalWorldSize = pod_env::kLocalWorldSize;
inline constexpr const char* kNnodes = pod_env::kNnodes;
inline constexpr const char* kMasterAddr = pod_env::kMasterAddr;
inline constexpr const char* kMasterPort = pod_env::kMasterPort;
inline constexpr const char* kStorePort = pod_env::kStorePort;
inline constexpr const char* kJob = pod_env::kJob;
inline constexpr const char* kAttempt = pod_env::kAttempt;
inline constexpr const char* kStoreSecret = pod_env::kStoreSecret;
inline constexpr const char* kBackend = pod_env::kBackend;
inline constexpr const char* kPodIp = pod_env::kPodIp;
inline constexpr const char* kWorkerPods = pod_env::kWorkerPods;
inline constexpr char kUseAgentStore[] = "RINGMASTER_USE_AGENT_STORE";
inline constexpr char kHeartbeatMs[] = "RINGMASTER_HEARTBEAT_MS";
inline constexpr char kSummaryFile[] = "RINGMASTER_SUMMARY_FILE";
// A pbt member's run of a program of the user's own (launcher/pbt_rounds.h): which interval
// (1-based) of how many, and the directory it resumes from and saves its checkpoint to.
inline constexpr char kPbtInterval[] = "RINGMASTER_PBT_INTERVAL";
inline constexpr char kPbtIntervals[] = "RINGMASTER_PBT_INTERVALS";
inline constexpr char kCheckpointDir[] = "RINGMASTER_CHECKPOINT_DIR";
// What torchrun (torch's elastic agent) reads, as PyTorchJob sets them: torchrun then starts
// PET_NPROC_PER_NODE ranks itself and gives them RANK, LOCAL_RANK, WORLD_SIZE, ...
inline constexpr char kPetNnodes[] = "PET_NNODES";
inline constexpr char kPetNprocPerNode[] = "PET_NPROC_PER_NODE";
inline constexpr char kPetNodeRank[] = "PET_NODE_RANK";
inline constexpr char kPetMasterAddr[] = "PET_MASTER_ADDR";
inline constexpr char kPetMasterPort[] = "PET_MASTER_PORT";
// Set by mpirun, not by the launcher.
inline constexpr char kMpiRank[] = "OMPI_COMM_WORLD_RANK";
inline constexpr char kMpiWorldSize[] = "OMPI_COMM_WORLD_SIZE";
inline constexpr char kMpiLocalRank[] = "OMPI_COMM_WORLD_LOCAL_RANK";

// What the trainer accepts: world_limits.h's, as the launcher.
using contract::kMaxWorldSize;

}  // namespace rank_env

struct RankEnvironment {
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int nnodes = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = pod_env::kMasterPortDefault;
  int store_port = pod_env::kMasterPortDefault;  // MASTER_PORT unless set apart
  std::string job = "local";
  int64_t attempt = 0;
  bool use_agent_store = false;
  std::string store_secret;  // "" when unset
  int64_t heartbeat_ms = 1000;
  std::string backend;  // "" when unset
  std::string pod_ip;   // "" when unset
  int worker_pods = 0;  // 0 when unset

  // "<job>/attempt-<attempt>": every key of this attempt lives under it.
  std::string attemptPrefix() const;
  // Where this process's servers listen: POD_IP, else every interface.
  std::string bindHost() const { return pod_ip.empty() ? "0.0.0.0" : pod_ip; }

  bool operator==(const RankEnvironment&) const = default;
};

// What the launcher gives its process of local rank `local_rank` in `pod`: the pod's world, its
// store (use_agent_store) and heartbeats every `heartbeat_ms`. backend and pod_ip stay unset:
// the process inherits the pod's RINGMASTER_BACKEND and POD_IP with the launcher's environment.
RankEnvironment launchedRank(const PodEnvironment& pod, int local_rank, int64_t heartbeat_ms);

// The variables the launcher sets for one process, in the order it sets them: every one from
// RANK to RINGMASTER_HEARTBEAT_MS (GROUP_RANK and NODE_RANK both node_rank; RINGMASTER_STORE_PORT
// after MASTER_PORT), then
// RINGMASTER_BACKEND when set. pod_ip is not among them: Kubernetes sets it.
std::vector<std::pair<std::string, std::string>> encode(const RankEnvironment& env);

// What the launcher gives torchrun when it is the pod's program (one process per pod, which
// starts the pod's LOCAL_WORLD_SIZE ranks): PET_NNODES, PET_NPROC_PER_NODE (LOCAL_WORLD_SIZE),
// PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT (the program's MASTER_PORT, which torchrun's
// static rendezvous binds on pod 0), in that order.
std::vector<std::pair<std::string, std::string>> encodeTorchrunAgent(const PodEnvironment& pod);

// What mpirun passes to every rank (-x), in the launcher's order: RINGMASTER_JOB,
// RINGMASTER_ATTEMPT, RINGMASTER_BACKEND (when set), RINGMASTER_USE_AGENT_STORE,
// RINGMASTER_HEARTBEAT_MS, MASTER_ADDR, MASTER_PORT, RINGMASTER_STORE_PORT. Not the ranks (mpirun
// sets OMPI_COMM_WORLD_*), not the pod's shape (every rank sees its pod's through sshd), not the
// store secret (forwarded by name, so that its value stays off mpirun's command line).
std::vector<std::pair<std::string, std::string>> encodeForMpirun(const RankEnvironment& env);

// Whether mpirun started this process: Open MPI's rank is set and RANK is not (then
// parseRankEnvironment reads Open MPI's variables, and backend auto means MPI).
bool startedByMpirun(const EnvLookup& lookup);

core::Result<RankEnvironment> parseRankEnvironment(const EnvLookup& lookup);
core::Result<RankEnvironment> parseRankEnvironment(const std::map<std::string, std::string>& env);

}  // namespace ringmaster::contract
