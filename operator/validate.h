#pragma once
// Defaulting and validation of a TrainingJob spec: what the CRD schema (crds/trainingjob.yaml)
// already enforces, checked again for objects that slipped past it (an API server without schema
// enforcement, an older CRD), plus the rules a schema cannot express (volume mounts naming
// volumes, reserved environment names, the operator's default image). spec.trainer's defaults
// and limits are the trainer's own (ringmaster/contract/trainer_spec.h). A job that fails here
// ends Failed with reason InvalidSpec and a message naming each field; nothing is created.
//
// Thread-safety: pure functions. Failure: validate() returns the list of field errors;
// defaultAndValidate() folds them into one InvalidArgument Status.

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/contract/field_errors.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/world_limits.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// The world limits every component shares (world_limits.h), as the spec's int32 fields hold them.
inline constexpr int32_t kMaxWorldSize = static_cast<int32_t>(contract::kMaxWorldSize);
inline constexpr int32_t kMaxProcsPerReplica = static_cast<int32_t>(contract::kMaxProcsPerPod);
inline constexpr int32_t kDefaultScheduleTimeoutSeconds = 300;
inline constexpr int32_t kDefaultBackoffLimit = 3;
inline constexpr int32_t kDefaultFinishTimeoutSeconds = 600;
// spec.managedBy naming this operator (the same as leaving it unset).
inline constexpr const char* kControllerName = "ringmaster.dev/trainingjob-controller";
inline constexpr size_t kMaxManagedByLength = 63;

// Whether this operator reconciles `spec`: spec.managedBy unset or kControllerName. A job
// another controller manages (a multi-cluster dispatcher's copy) is never touched: no pods, no
// status.
bool managedByUs(const kube::TrainingJobSpec& spec);

struct ValidateOptions {
  std::string default_image;  // the operator's --trainer-image; "" = none
  // The cluster admin's --allow-host-path: spec.volumes may use hostPath (the node's files).
  bool allow_host_path = false;
};

using contract::FieldError;

enum class Backend { kAuto, kNccl, kTcp, kGloo, kMpi };
// What a pod of the gang is: a worker, or one of spec.roles' (a parameter server, the chief, the
// evaluator).
enum class Role { kWorker, kPs, kChief, kEvaluator };
enum class RestartPolicy { kNever, kOnFailure, kExitCode };
// Which pods a finished job deletes: none, the unfinished ones, or all.
enum class CleanPodPolicy { kNone, kRunning, kAll };

// A job's spec as the operator acts on it: every default applied, each choice an enum. The
// initializers below are the defaults of the CRD's schema, and their only home in the operator
// (withDefaults writes them into a stored spec). Meaningful for a spec validate() accepts.
struct JobSettings {
  int32_t replicas = 1;  // required by the schema; 1 only for a spec that lacks it
  int32_t procs_per_replica = 1;
  contract::LauncherMode launcher = contract::LauncherMode::kNative;
  Backend backend = Backend::kAuto;
  RestartPolicy restart_policy = RestartPolicy::kOnFailure;
  int32_t backoff_limit = kDefaultBackoffLimit;
  std::optional<int64_t> active_deadline_seconds;  // none: no deadline
  // Once a worker succeeded, the others must finish within this (0: no bound).
  int32_t finish_timeout_seconds = kDefaultFinishTimeoutSeconds;
  std::optional<int32_t> ttl_seconds_after_finished;  // none: kept
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  bool suspend = false;
  int32_t schedule_timeout_seconds = kDefaultScheduleTimeoutSeconds;
  std::string scheduler_name;  // "": the cluster's default scheduler
  // spec.elastic: the world may shrink to min_replicas and grow back to max_replicas. Without
  // it both are `replicas`.
  bool elastic = false;
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;

  // spec.roles.ps.replicas: parameter-server pods of their own, after the worker pods (0: none).
  int32_t ps_pods = 0;
  // spec.roles.chief.replicas: the chief's pod, after the ps pods (0: none; at most 1).
  int32_t chief_pods = 0;
  // spec.roles.evaluator.replicas: the evaluator's pod, last (0: none; at most 1).
  int32_t evaluator_pods = 0;
  // Ranks that serve parameters (spec.trainer.parallelism.parameterServer.servers, or every rank
  // of the ps pods): the last ones of the world; 0 without parameter servers.
  int32_t parameter_servers = 0;

  // An elastic job whose parameter servers have pods of their own: its worker count follows
  // spec.replicas, within [min_replicas, max_replicas], while it runs and without a restart (the
  // servers take workers in and let them go). Its worker pods keep max_replicas slots, the ps
  // pods after them, so that no rank moves when the count changes.
  bool scalesWorkers() const { return elastic && ps_pods > 0; }
  // Worker pod indices before the other roles' pods: spec.replicas, or max_replicas when the job
  // scales its workers.
  int32_t workerSlots() const { return scalesWorkers() ? max_replicas : replicas; }

  // The pods of the gang: the workers, then the ps pods, the chief's, the evaluator's. Every pod
  // runs procs_per_replica ranks, so that pod i holds ranks [i x procs, (i + 1) x procs)
  // whatever its role (a job that scales its workers: whether or not slot i has a pod now).
  int32_t gangPods() const { return podsWith(workerSlots()); }
  // The gang's pods with `workers` worker pods (an elastic job's current world); saturating:
  // validation reads it for specs it then refuses.
  int32_t podsWith(int32_t workers) const {
    const int64_t pods = int64_t{workers} + ps_pods + chief_pods + evaluator_pods;
    return static_cast<int32_t>(std::min<int64_t>(pods, std::numeric_limits<int32_t>::max()));
  }
  // The chief's pod index; -1 without one.
  int32_t chiefPod() const { return chief_pods > 0 ? workerSlots() + ps_pods : -1; }
  // The evaluator's pod index; -1 without one.
  int32_t evaluatorPod() const {
    return evaluator_pods > 0 ? workerSlots() + ps_pods + chief_pods : -1;
  }
  int32_t worldSize() const { return gangPods() * procs_per_replica; }
  // The role of pod `index`, and its index among that role's pods (an elastic job's standby
  // pods beyond the world are workers: such a job has no other roles).
  Role roleOf(int32_t index) const {
    const int32_t workers = workerSlots();
    if (index < workers || (ps_pods == 0 && chief_pods == 0 && evaluator_pods == 0)) {
      return Role::kWorker;
    }
    if (index < workers + ps_pods) return Role::kPs;
    return index < workers + ps_pods + chief_pods ? Role::kChief : Role::kEvaluator;
  }
  int32_t indexInRole(int32_t index) const {
    switch (roleOf(index)) {
      case Role::kPs:
        return index - workerSlots();
      case Role::kChief:
        return index - workerSlots() - ps_pods;
      case Role::kEvaluator:
        return index - workerSlots() - ps_pods - chief_pods;
      case Role::kWorker:
        break;
    }
    return index;
  }
  // Whether a failed pod at `replica` is replaced alone rather than restarting the gang: the
  // evaluator's (no task of the cluster talks to it), or one whose every rank is a
  // parameter-server job's worker, whose servers drop it and take it back, other than pod 0,
  // which hosts the attempt's rendezvous store.
  bool replacedAlone(int32_t replica) const {
    if (replica > 0 && roleOf(replica) == Role::kEvaluator) return true;
    if (parameter_servers == 0 || replica <= 0 || roleOf(replica) != Role::kWorker) return false;
    // Servers among the worker pods' ranks: the last ones.
    return ps_pods > 0 || (replica + 1) * procs_per_replica <= worldSize() - parameter_servers;
  }
  // Whether pod `index` belongs to the world at `replicas` worker pods: a job that scales its
  // workers leaves its worker slots from there on empty.
  bool slotFilled(int32_t index) const {
    return !scalesWorkers() || index < replicas || roleOf(index) != Role::kWorker;
  }
  // Pod indices the job may ever use: 0 .. podSlots()-1 (an elastic job's standby pods too).
  int32_t podSlots() const { return elastic && !scalesWorkers() ? max_replicas : gangPods(); }
  bool operator==(const JobSettings&) const = default;
};

JobSettings settingsOf(const kube::TrainingJobSpec& spec);

// The worker pods of the current world: spec.replicas, or status.currentReplicas of an elastic
// job (within its bounds) that does not scale its workers by spec.replicas.
int32_t currentReplicas(const JobSettings& settings, const kube::TrainingJobStatus& status);

// `job` as its current world runs it: spec.replicas is currentReplicas(), so that pods, their
// environment and status counts follow the world, not the spec.
kube::TrainingJob atCurrentWorld(const kube::TrainingJob& job,
                                 const kube::TrainingJobStatus& status);

// The spelling in the spec of each enum value ("gloo", "OnFailure", "Running", ...).
const char* name(Backend value);
const char* name(RestartPolicy value);
const char* name(CleanPodPolicy value);
// "worker" | "ps" | "chief" | "evaluator": pod names, labels, TF_CONFIG's task types
const char* name(Role value);

// The spec the pods of `role` are built from: the job's, with the role's resources and template
// in place of spec.resources and spec.template where it gives them.
kube::TrainingJobSpec specForRole(const kube::TrainingJobSpec& spec, Role role);

// The spec with every default of the CRD applied (and the operator's default image).
kube::TrainingJobSpec withDefaults(const kube::TrainingJobSpec& spec,
                                   const ValidateOptions& options);

// Every problem of a *defaulted* job; empty when it is valid.
std::vector<FieldError> validate(const kube::TrainingJob& job, const ValidateOptions& options = {});

// withDefaults + validate; InvalidArgument with describe() of the errors.
core::Result<kube::TrainingJobSpec> defaultAndValidate(const kube::TrainingJob& job,
                                                       const ValidateOptions& options);

}  // namespace ringmaster::op
