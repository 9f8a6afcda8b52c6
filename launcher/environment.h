#pragma once
// The pod environment the launcher runs in (the operator sets it):
//   NODE_RANK          this pod's index in [0, NNODES)                       default 0
//   NNODES             pods in the gang                                      default 1
//   LOCAL_WORLD_SIZE   processes per pod (procsPerReplica)                   default 1
//   WORLD_SIZE         processes in the gang; must equal NNODES * LOCAL_WORLD_SIZE
//                      (torchrun's meaning: processes, not pods)              default the product
//   MASTER_ADDR        where pod 0 hosts the rendezvous store                default 127.0.0.1
//   MASTER_PORT        its port                                              default 29500
//   RINGMASTER_JOB     job name (key prefix)                                 default "local"
//   RINGMASTER_ATTEMPT the gang's attempt (status.restarts)                  default 0
//   RINGMASTER_BACKEND passed through to the trainer                         optional
//   RINGMASTER_LAUNCHER_MODE  native | mpi                                   default native
//   POD_IP, POD_NAME   from the downward API; POD_IP is where we listen       optional
//   RINGMASTER_STORE_SECRET  the attempt's rendezvous store secret (at least 32 characters;
//                      lib/contract store_secret.h)             required when NNODES > 1
//   NVIDIA_VISIBLE_DEVICES  set (and not void/none) on GPU pods               optional
// Defaults make a bare `ringmaster-launcher` a one-pod world on this machine.
//
// Thread-safety: value types and pure functions. Failure: kInvalidArgument naming the variable
// and its value ("NODE_RANK=3 must be in [0, NNODES=2)").

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

struct LauncherEnvironment {
  int node_rank = 0;
  int nnodes = 1;
  int local_world_size = 1;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string job = "local";
  int64_t attempt = 0;
  std::string backend;  // "" when unset
  std::string mode = "native";
  std::string pod_ip;    // "" when unset
  std::string pod_name;  // "" when unset
  bool has_gpus = false;
  // "" when unset (a one-pod world: the launcher makes one up, nobody else needs it).
  std::string store_secret;

  // "<job>/attempt-<attempt>": every key of this attempt lives under it.
  std::string attemptPrefix() const;
  // Where this pod's servers listen: POD_IP, else every interface.
  std::string bindHost() const { return pod_ip.empty() ? "0.0.0.0" : pod_ip; }
  // The first global rank of this pod's processes.
  int firstRank() const { return node_rank * local_world_size; }
  // "pod 1 (job-worker-1)" or "pod 1", for log lines.
  std::string describePod() const;
};

// Reads a variable; nullptr when unset. getenv in production, a map in tests.
using EnvLookup = std::function<const char*(const char*)>;

core::Result<LauncherEnvironment> parseEnvironment(const EnvLookup& lookup);
core::Result<LauncherEnvironment> parseEnvironment(const std::map<std::string, std::string>& env);

}  // namespace ringmaster::launcher
