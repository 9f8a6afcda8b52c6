#include "ringmaster/contract/pod_environment.h"

#include "env_var.h"

namespace ringmaster::contract {
namespace {

using core::Result;

// An integer variable in [lo, hi], or `fallback` when unset or empty.
Result<int64_t> intVar(const EnvLookup& lookup, const char* name, int64_t fallback, int64_t lo,
                       int64_t hi) {
  RM_ASSIGN_OR_RETURN(int64_t value, env_var::integer(lookup, name, fallback));
  if (value < lo || value > hi) {
    const char* v = env_var::text(lookup, name);
    return core::invalidArgument(std::string(name) + "=" + (v ? v : std::to_string(value)) +
                                 " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                 "]");
  }
  return value;
}

}  // namespace

std::string_view launcherModeName(LauncherMode mode) {
  return mode == LauncherMode::kMpi ? "mpi" : "native";
}

std::optional<LauncherMode> parseLauncherMode(std::string_view text) {
  if (text == "native") return LauncherMode::kNative;
  if (text == "mpi") return LauncherMode::kMpi;
  return std::nullopt;
}

std::string attemptKeyPrefix(const std::string& job, int64_t attempt) {
  return job + "/attempt-" + std::to_string(attempt);
}

std::string PodEnvironment::attemptPrefix() const { return attemptKeyPrefix(job, attempt); }

std::string PodEnvironment::describePod() const {
  std::string s = "pod " + std::to_string(node_rank);
  if (!pod_name.empty()) s += " (" + pod_name + ")";
  return s;
}

std::vector<int> PodEnvironment::emptyPods() const {
  std::vector<int> empty;
  for (int i = worker_pods; worker_pods > 0 && i < worker_slots; ++i) empty.push_back(i);
  return empty;
}

std::vector<std::pair<std::string, std::string>> encode(const PodEnvironment& env) {
  using namespace pod_env;
  std::vector<std::pair<std::string, std::string>> vars = {
      {kNodeRank, std::to_string(env.node_rank)},
      {kWorldSize, std::to_string(env.world_size)},
      {kLocalWorldSize, std::to_string(env.local_world_size)},
      {kNnodes, std::to_string(env.nnodes)},
      {kMasterAddr, env.master_addr},
      {kMasterPort, std::to_string(env.master_port)},
      {kStorePort, std::to_string(env.store_port)},
      {kJob, env.job},
      {kAttempt, std::to_string(env.attempt)},
      {kBackend, env.backend},
      {kStoreSecret, env.store_secret}};
  if (env.mode != LauncherMode::kNative) {
    vars.emplace_back(kLauncherMode, launcherModeName(env.mode));
  }
  if (!env.work_dir.empty()) vars.emplace_back(kWorkDir, env.work_dir);
  if (!env.pbt.empty()) vars.emplace_back(kPbt, env.pbt);
  if (env.worker_pods > 0) {
    vars.emplace_back(kWorkerPods, std::to_string(env.worker_pods));
    vars.emplace_back(kWorkerSlots, std::to_string(env.worker_slots));
  }
  return vars;
}

Result<PodEnvironment> parsePodEnvironment(const EnvLookup& lookup) {
  using namespace pod_env;
  PodEnvironment e;
  RM_ASSIGN_OR_RETURN(int64_t nnodes, intVar(lookup, kNnodes, 1, 1, kMaxNodes));
  RM_ASSIGN_OR_RETURN(int64_t node_rank, intVar(lookup, kNodeRank, 0, 0, kMaxNodes - 1));
  RM_ASSIGN_OR_RETURN(int64_t local, intVar(lookup, kLocalWorldSize, 1, 1, kMaxLocalWorldSize));
  RM_ASSIGN_OR_RETURN(int64_t world, intVar(lookup, kWorldSize, nnodes * local, 1, kMaxWorldSize));
  RM_ASSIGN_OR_RETURN(int64_t port, intVar(lookup, kMasterPort, e.master_port, 1, 65535));
  RM_ASSIGN_OR_RETURN(int64_t store_port, intVar(lookup, kStorePort, e.store_port, 1, 65535));
  if (store_port == port) {
    return core::invalidArgument(std::string(kStorePort) + "=" + std::to_string(store_port) +
                                 " must differ from " + kMasterPort +
                                 ": the training program binds MASTER_PORT on pod 0");
  }
  RM_ASSIGN_OR_RETURN(e.attempt, intVar(lookup, kAttempt, 0, 0, INT64_MAX));
  if (node_rank >= nnodes) {
    return core::invalidArgument(std::string(kNodeRank) + "=" + std::to_string(node_rank) +
                                 " must be in [0, " + kNnodes + "=" + std::to_string(nnodes) + ")");
  }
  if (world != nnodes * local) {
    return core::invalidArgument(std::string(kWorldSize) + "=" + std::to_string(world) +
                                 " must be NNODES * LOCAL_WORLD_SIZE = " + std::to_string(nnodes) +
                                 " * " + std::to_string(local) +
                                 " (WORLD_SIZE counts processes, not pods)");
  }
  e.nnodes = static_cast<int>(nnodes);
  e.node_rank = static_cast<int>(node_rank);
  e.local_world_size = static_cast<int>(local);
  e.world_size = static_cast<int>(world);
  e.master_port = static_cast<int>(port);
  e.store_port = static_cast<int>(store_port);
  e.master_addr = env_var::string(lookup, kMasterAddr, e.master_addr);
  e.job = env_var::string(lookup, kJob, e.job);
  if (e.job.find('/') != std::string::npos) {
    return core::invalidArgument(std::string(kJob) + "='" + e.job + "' must not contain '/'");
  }
  e.backend = env_var::string(lookup, kBackend, "");
  const std::string mode = env_var::string(lookup, kLauncherMode, "native");
  std::optional<LauncherMode> parsed_mode = parseLauncherMode(mode);
  if (!parsed_mode) {
    return core::invalidArgument(std::string(kLauncherMode) + "='" + mode +
                                 "' must be native or mpi");
  }
  e.mode = *parsed_mode;
  e.work_dir = env_var::string(lookup, kWorkDir, "");
  e.pbt = env_var::string(lookup, kPbt, "");
  // Unset: every worker slot is filled.
  if (env_var::text(lookup, kWorkerPods) != nullptr || env_var::text(lookup, kWorkerSlots)) {
    RM_ASSIGN_OR_RETURN(int64_t slots, intVar(lookup, kWorkerSlots, 0, 1, nnodes));
    RM_ASSIGN_OR_RETURN(int64_t pods, intVar(lookup, kWorkerPods, 0, 1, slots));
    e.worker_pods = static_cast<int>(pods);
    e.worker_slots = static_cast<int>(slots);
  }
  e.store_secret = env_var::string(lookup, kStoreSecret, "");
  if (!e.store_secret.empty() && e.store_secret.size() < store_secret::kMinChars) {
    // The value itself stays out of the message: it is a secret even when it is a bad one.
    return core::invalidArgument(
        std::string(kStoreSecret) + " is " + std::to_string(e.store_secret.size()) +
        " characters, fewer than " + std::to_string(store_secret::kMinChars));
  }
  if (e.store_secret.empty() && e.nnodes > 1) {
    return core::invalidArgument(std::string(kStoreSecret) +
                                 " must be set when NNODES=" + std::to_string(e.nnodes) +
                                 " > 1: every pod proves it to the rendezvous store");
  }
  e.pod_ip = env_var::string(lookup, kPodIp, "");
  e.pod_name = env_var::string(lookup, kPodName, "");
  // The NVIDIA container runtime's convention: unset, "void" or "none" means no GPU.
  const std::string gpus = env_var::string(lookup, kNvidiaVisibleDevices, "");
  e.has_gpus = !gpus.empty() && gpus != "void" && gpus != "none";
  return e;
}

Result<PodEnvironment> parsePodEnvironment(const std::map<std::string, std::string>& env) {
  return parsePodEnvironment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace ringmaster::contract
