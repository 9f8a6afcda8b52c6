#include "launcher/environment.h"

#include "ringmaster/contract/store_secret.h"
#include "ringmaster/core/flags.h"

namespace ringmaster::launcher {
namespace {

using core::Result;

// An integer variable in [lo, hi], or `fallback` when unset or empty.
Result<int64_t> intVar(const EnvLookup& lookup, const char* name, int64_t fallback, int64_t lo,
                       int64_t hi) {
  const char* v = lookup(name);
  if (v == nullptr || *v == '\0') return fallback;
  Result<int64_t> parsed = core::parseInt(v);
  if (!parsed.ok()) {
    return core::invalidArgument(std::string(name) + "='" + v + "': " + parsed.status().message());
  }
  if (*parsed < lo || *parsed > hi) {
    return core::invalidArgument(std::string(name) + "=" + v + " must be in [" +
                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return *parsed;
}

std::string stringVar(const EnvLookup& lookup, const char* name, std::string fallback) {
  const char* v = lookup(name);
  return v == nullptr || *v == '\0' ? fallback : std::string(v);
}

}  // namespace

std::string LauncherEnvironment::attemptPrefix() const {
  return job + "/attempt-" + std::to_string(attempt);
}

std::string LauncherEnvironment::describePod() const {
  std::string s = "pod " + std::to_string(node_rank);
  if (!pod_name.empty()) s += " (" + pod_name + ")";
  return s;
}

Result<LauncherEnvironment> parseEnvironment(const EnvLookup& lookup) {
  LauncherEnvironment e;
  RM_ASSIGN_OR_RETURN(int64_t nnodes, intVar(lookup, "NNODES", 1, 1, 65536));
  RM_ASSIGN_OR_RETURN(int64_t node_rank, intVar(lookup, "NODE_RANK", 0, 0, 65535));
  RM_ASSIGN_OR_RETURN(int64_t local, intVar(lookup, "LOCAL_WORLD_SIZE", 1, 1, 1024));
  RM_ASSIGN_OR_RETURN(int64_t world, intVar(lookup, "WORLD_SIZE", nnodes * local, 1, 1 << 26));
  RM_ASSIGN_OR_RETURN(int64_t port, intVar(lookup, "MASTER_PORT", 29500, 1, 65535));
  RM_ASSIGN_OR_RETURN(e.attempt, intVar(lookup, "RINGMASTER_ATTEMPT", 0, 0, INT64_MAX));
  if (node_rank >= nnodes) {
    return core::invalidArgument("NODE_RANK=" + std::to_string(node_rank) +
                                 " must be in [0, NNODES=" + std::to_string(nnodes) + ")");
  }
  if (world != nnodes * local) {
    return core::invalidArgument("WORLD_SIZE=" + std::to_string(world) +
                                 " must be NNODES * LOCAL_WORLD_SIZE = " + std::to_string(nnodes) +
                                 " * " + std::to_string(local) +
                                 " (WORLD_SIZE counts processes, not pods)");
  }
  e.nnodes = static_cast<int>(nnodes);
  e.node_rank = static_cast<int>(node_rank);
  e.local_world_size = static_cast<int>(local);
  e.world_size = static_cast<int>(world);
  e.master_port = static_cast<int>(port);
  e.master_addr = stringVar(lookup, "MASTER_ADDR", e.master_addr);
  e.job = stringVar(lookup, "RINGMASTER_JOB", e.job);
  if (e.job.find('/') != std::string::npos) {
    return core::invalidArgument("RINGMASTER_JOB='" + e.job + "' must not contain '/'");
  }
  e.backend = stringVar(lookup, "RINGMASTER_BACKEND", "");
  e.mode = stringVar(lookup, "RINGMASTER_LAUNCHER_MODE", e.mode);
  if (e.mode != "native" && e.mode != "mpi") {
    return core::invalidArgument("RINGMASTER_LAUNCHER_MODE='" + e.mode + "' must be native or mpi");
  }
  namespace secret = contract::store_secret;
  e.store_secret = stringVar(lookup, secret::kEnv, "");
  if (!e.store_secret.empty() && e.store_secret.size() < secret::kMinChars) {
    // The value itself stays out of the message: it is a secret even when it is a bad one.
    return core::invalidArgument(std::string(secret::kEnv) + " is " +
                                 std::to_string(e.store_secret.size()) +
                                 " characters, fewer than " + std::to_string(secret::kMinChars));
  }
  if (e.store_secret.empty() && e.nnodes > 1) {
    return core::invalidArgument(std::string(secret::kEnv) +
                                 " must be set when NNODES=" + std::to_string(e.nnodes) +
                                 " > 1: every pod proves it to the rendezvous store");
  }
  e.pod_ip = stringVar(lookup, "POD_IP", "");
  e.pod_name = stringVar(lookup, "POD_NAME", "");
  // The NVIDIA container runtime's convention: unset, "void" or "none" means no GPU.
  const std::string gpus = stringVar(lookup, "NVIDIA_VISIBLE_DEVICES", "");
  e.has_gpus = !gpus.empty() && gpus != "void" && gpus != "none";
  return e;
}

Result<LauncherEnvironment> parseEnvironment(const std::map<std::string, std::string>& env) {
  return parseEnvironment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace ringmaster::launcher
