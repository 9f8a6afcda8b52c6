#pragma once
// TF_CONFIG, the variable a TensorFlow program reads to find its cluster
// (tf.distribute.cluster_resolver.TFConfigClusterResolver), shaped exactly as Kubeflow's TFJob
// writes it, so that a TFJob's program moves over unchanged:
//   {"cluster": {"worker": ["j-worker-0.j.ns.svc:2222", ...]},
//    "task": {"type": "worker", "index": 0}, "environment": "cloud"}
// One task per process: task k of pod i listens on kTfPort + k at pod i's name through the job's
// headless Service (with one process per pod, as TFJob runs, every task is on kTfPort). The
// operator writes the cluster with the pod's first task; the launcher gives the pod's k-th
// process index + k. The other roles of the training cluster (ps, chief) are keys of
// `cluster` like "worker"; the evaluator is not one (TFJob's rule, after TensorFlow's: it evaluates
// beside the cluster, which never addresses it), so its task names a type `cluster` lacks.
//
// Thread-safety: value types and pure functions. Failure: kInvalidArgument naming what in the
// JSON is wrong.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::contract {

inline constexpr char kTfConfigEnv[] = "TF_CONFIG";
// TFJob's default port for every task.
inline constexpr int32_t kTfPort = 2222;

struct TfConfig {
  std::map<std::string, std::vector<std::string>> cluster;  // role -> "host:port" per task
  std::string task_type = "worker";
  int task_index = 0;
  bool operator==(const TfConfig&) const = default;
};

inline constexpr char kEvaluatorTask[] = "evaluator";

// A job whose roles ("worker", "ps", ...) run in pods: `procs_per_pod` tasks at each of a role's
// pod hosts, in order, but none of the evaluator's; the task is `task_type`'s `task_index`.
TfConfig clusterTfConfig(const std::map<std::string, std::vector<std::string>>& role_pod_hosts,
                         int procs_per_pod, const std::string& task_type, int task_index);

std::string encodeTfConfig(const TfConfig& config);
core::Result<TfConfig> parseTfConfig(std::string_view json);

}  // namespace ringmaster::contract
