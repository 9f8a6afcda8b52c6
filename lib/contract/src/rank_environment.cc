#include "ringmaster/contract/rank_environment.h"

#include <climits>

#include "env_var.h"

namespace ringmaster::contract {
namespace {

using core::Result;

core::Status refuse(const char* name, int64_t value, const std::string& why) {
  return core::invalidArgument(std::string(name) + "=" + std::to_string(value) + " " + why);
}

// The pod's shape as the launcher passed it on, within pod_env's bounds. Not checked against
// the ranks: outside the launcher (a bare trainer, mpirun) nobody sets these.
Result<int> podShapeVar(const EnvLookup& lookup, const char* name, int64_t fallback, int64_t lo,
                        int64_t hi) {
  RM_ASSIGN_OR_RETURN(int64_t value, env_var::integer(lookup, name, fallback));
  if (value < lo || value > hi) {
    return refuse(name, value,
                  "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int>(value);
}

}  // namespace

std::string RankEnvironment::attemptPrefix() const { return attemptKeyPrefix(job, attempt); }

RankEnvironment launchedRank(const PodEnvironment& pod, int local_rank, int64_t heartbeat_ms) {
  RankEnvironment e;
  e.rank = pod.firstRank() + local_rank;
  e.local_rank = local_rank;
  e.node_rank = pod.node_rank;
  e.world_size = pod.world_size;
  e.local_world_size = pod.local_world_size;
  e.nnodes = pod.nnodes;
  e.master_addr = pod.master_addr;
  e.master_port = pod.master_port;
  e.store_port = pod.store_port;
  e.job = pod.job;
  e.attempt = pod.attempt;
  e.use_agent_store = true;
  e.store_secret = pod.store_secret;
  e.heartbeat_ms = heartbeat_ms;
  e.worker_pods = pod.worker_pods;
  return e;
}

std::vector<std::pair<std::string, std::string>> encode(const RankEnvironment& env) {
  using namespace rank_env;
  std::vector<std::pair<std::string, std::string>> vars = {
      {kRank, std::to_string(env.rank)},
      {kLocalRank, std::to_string(env.local_rank)},
      {kGroupRank, std::to_string(env.node_rank)},
      {kNodeRank, std::to_string(env.node_rank)},
      {kWorldSize, std::to_string(env.world_size)},
      {kLocalWorldSize, std::to_string(env.local_world_size)},
      {kNnodes, std::to_string(env.nnodes)},
      {kMasterAddr, env.master_addr},
      {kMasterPort, std::to_string(env.master_port)},
      {kStorePort, std::to_string(env.store_port)},
      {kJob, env.job},
      {kAttempt, std::to_string(env.attempt)},
      {kUseAgentStore, env.use_agent_store ? "1" : "0"},
      {kStoreSecret, env.store_secret},
      {kHeartbeatMs, std::to_string(env.heartbeat_ms)}};
  if (!env.backend.empty()) vars.emplace_back(kBackend, env.backend);
  if (env.worker_pods > 0) vars.emplace_back(kWorkerPods, std::to_string(env.worker_pods));
  return vars;
}

std::vector<std::pair<std::string, std::string>> encodeTorchrunAgent(const PodEnvironment& pod) {
  using namespace rank_env;
  return {{kPetNnodes, std::to_string(pod.nnodes)},
          {kPetNprocPerNode, std::to_string(pod.local_world_size)},
          {kPetNodeRank, std::to_string(pod.node_rank)},
          {kPetMasterAddr, pod.master_addr},
          {kPetMasterPort, std::to_string(pod.master_port)}};
}

std::vector<std::pair<std::string, std::string>> encodeForMpirun(const RankEnvironment& env) {
  using namespace rank_env;
  std::vector<std::pair<std::string, std::string>> vars = {{kJob, env.job},
                                                           {kAttempt, std::to_string(env.attempt)}};
  if (!env.backend.empty()) vars.emplace_back(kBackend, env.backend);
  vars.insert(vars.end(), {{kUseAgentStore, env.use_agent_store ? "1" : "0"},
                           {kHeartbeatMs, std::to_string(env.heartbeat_ms)},
                           {kMasterAddr, env.master_addr},
                           {kMasterPort, std::to_string(env.master_port)},
                           {kStorePort, std::to_string(env.store_port)}});
  return vars;
}

bool startedByMpirun(const EnvLookup& lookup) {
  // Only an unset RANK (not an empty one) lets mpirun's variables through.
  return lookup(rank_env::kMpiRank) != nullptr && lookup(rank_env::kRank) == nullptr;
}

Result<RankEnvironment> parseRankEnvironment(const EnvLookup& lookup) {
  using namespace rank_env;
  RankEnvironment e;
  // Under mpirun Open MPI's variables are the truth; otherwise torchrun's names.
  const bool mpi = startedByMpirun(lookup);
  const char* rank_name = mpi ? kMpiRank : kRank;
  const char* size_name = mpi ? kMpiWorldSize : kWorldSize;
  const char* local_name = mpi ? kMpiLocalRank : kLocalRank;
  RM_ASSIGN_OR_RETURN(int64_t rank, env_var::integer(lookup, rank_name, e.rank));
  RM_ASSIGN_OR_RETURN(int64_t size, env_var::integer(lookup, size_name, e.world_size));
  RM_ASSIGN_OR_RETURN(int64_t local, env_var::integer(lookup, local_name, e.local_rank));
  RM_ASSIGN_OR_RETURN(int64_t port, env_var::integer(lookup, kMasterPort, e.master_port));
  RM_ASSIGN_OR_RETURN(int64_t store_port, env_var::integer(lookup, kStorePort, port));
  RM_ASSIGN_OR_RETURN(e.attempt, env_var::integer(lookup, kAttempt, e.attempt));
  RM_ASSIGN_OR_RETURN(int64_t agent, env_var::integer(lookup, kUseAgentStore, 0));
  RM_ASSIGN_OR_RETURN(e.heartbeat_ms, env_var::integer(lookup, kHeartbeatMs, e.heartbeat_ms));
  if (agent != 0 && agent != 1) return refuse(kUseAgentStore, agent, "must be 0 or 1");
  if (e.heartbeat_ms < 1) return refuse(kHeartbeatMs, e.heartbeat_ms, "must be positive");
  if (e.attempt < 0) return refuse(kAttempt, e.attempt, "must not be negative");
  if (size < 1 || size > kMaxWorldSize) {
    return refuse(size_name, size, "must be in [1, " + std::to_string(kMaxWorldSize) + "]");
  }
  if (local < 0) return refuse(local_name, local, "must not be negative");
  // An int, as every rank is.
  if (local > INT_MAX)
    return refuse(local_name, local, "must be at most " + std::to_string(INT_MAX));
  if (rank < 0 || rank >= size) {
    return refuse(rank_name, rank,
                  "must be in [0, " + std::string(size_name) + "=" + std::to_string(size) + ")");
  }
  if (port < 1 || port > 65535) return refuse(kMasterPort, port, "is not a TCP port");
  if (store_port < 1 || store_port > 65535) {
    return refuse(kStorePort, store_port, "is not a TCP port");
  }
  e.use_agent_store = agent == 1;
  e.rank = static_cast<int>(rank);
  e.world_size = static_cast<int>(size);
  e.local_rank = static_cast<int>(local);
  e.master_port = static_cast<int>(port);
  e.store_port = static_cast<int>(store_port);
  RM_ASSIGN_OR_RETURN(e.node_rank,
                      podShapeVar(lookup, kNodeRank, e.node_rank, 0, pod_env::kMaxNodes - 1));
  RM_ASSIGN_OR_RETURN(e.nnodes, podShapeVar(lookup, kNnodes, e.nnodes, 1, pod_env::kMaxNodes));
  RM_ASSIGN_OR_RETURN(e.local_world_size, podShapeVar(lookup, kLocalWorldSize, e.local_world_size,
                                                      1, pod_env::kMaxLocalWorldSize));
  e.master_addr = env_var::string(lookup, kMasterAddr, e.master_addr);
  e.job = env_var::string(lookup, kJob, e.job);
  e.store_secret = env_var::string(lookup, kStoreSecret, "");
  e.backend = env_var::string(lookup, kBackend, "");
  e.pod_ip = env_var::string(lookup, kPodIp, "");
  RM_ASSIGN_OR_RETURN(int64_t worker_pods, env_var::integer(lookup, kWorkerPods, 0));
  if (worker_pods < 0 || worker_pods > e.nnodes) {
    return refuse(kWorkerPods, worker_pods,
                  "must be in [1, " + std::string(kNnodes) + "=" + std::to_string(e.nnodes) + "]");
  }
  e.worker_pods = static_cast<int>(worker_pods);
  return e;
}

Result<RankEnvironment> parseRankEnvironment(const std::map<std::string, std::string>& env) {
  return parseRankEnvironment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace ringmaster::contract
