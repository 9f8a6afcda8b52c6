#include "operator/validate.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <set>

#include "operator/builders.h"
#include "operator/pod_template.h"
#include "operator/queue_admission.h"
#include "ringmaster/contract/backend_rules.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/contract/spelling.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::op {
namespace {

// Environment the operator sets on every worker (builders.cc, read by the launcher and the
// trainer), and the ranks' own variables the launcher sets; a user may not override it.
const std::set<std::string>& reservedEnv() {
  namespace pod_env = contract::pod_env;
  static const std::set<std::string> kNames = {pod_env::kNodeRank,
                                               pod_env::kWorldSize,
                                               pod_env::kLocalWorldSize,
                                               pod_env::kNnodes,
                                               pod_env::kMasterAddr,
                                               pod_env::kMasterPort,
                                               pod_env::kStorePort,
                                               pod_env::kJob,
                                               pod_env::kAttempt,
                                               pod_env::kBackend,
                                               pod_env::kPbt,
                                               contract::rank_env::kCheckpointDir,
                                               contract::rank_env::kPbtInterval,
                                               contract::rank_env::kPbtIntervals,
                                               pod_env::kLauncherMode,
                                               pod_env::kStoreSecret,
                                               pod_env::kPodIp,
                                               pod_env::kPodName,
                                               "RANK",
                                               "LOCAL_RANK",
                                               contract::rank_env::kSummaryFile};
  return kNames;
}

using contract::FieldErrors;
using contract::invalidValue;

void validateVolumes(const WorkerAdditions& w, const ValidateOptions& options, FieldErrors& e) {
  std::set<std::string> names;
  for (const auto& [path, volume] : w.volumes) {
    const std::string p = path + ".name";
    const std::string& name = volume->name;
    if (name.empty()) {
      e.add(p, "required");
    } else if (auto why = kube::dns1123LabelProblems(name); !why.empty()) {
      std::string problems;
      for (const std::string& w : why) problems += (problems.empty() ? "" : ", ") + w;
      e.add(p, invalidValue(name, problems));
    } else if (name == "config" || name == "ssh" || name == kTmpVolume) {
      e.add(p, "\"" + name + "\" is reserved for the operator's own volume");
    } else if (!names.insert(name).second) {
      e.add(p, "duplicate volume name \"" + name + "\"");
    }
    // A hostPath volume is the node's filesystem: refused unless the cluster admin allows it.
    if (volume->host_path && !options.allow_host_path) {
      e.add(path + ".hostPath",
            "hostPath volumes are disabled by the cluster admin (operator flag "
            "--allow-host-path, chart value allowHostPath); use a persistentVolumeClaim");
    }
  }
  std::set<std::string> mount_paths;
  for (const auto& [p, mount] : w.volume_mounts) {
    const kube::VolumeMount& m = *mount;
    if (names.count(m.name) == 0) {
      e.add(p + ".name", "names no volume of the job: \"" + m.name + "\"");
    }
    if (m.mount_path.empty() || m.mount_path[0] != '/') {
      e.add(p + ".mountPath", "must be an absolute path, got \"" + m.mount_path + "\"");
    } else if (kube::hasBackstep(m.mount_path)) {
      e.add(p + ".mountPath", invalidValue(m.mount_path, "must not contain '..'"));
    } else if (m.mount_path == "/etc/ringmaster" || m.mount_path.starts_with("/etc/ringmaster/")) {
      e.add(p + ".mountPath", "/etc/ringmaster is reserved for the job's ConfigMap");
    } else if (m.mount_path == kTmpMountPath) {
      e.add(p + ".mountPath", std::string(kTmpMountPath) + " is reserved for the worker's TMPDIR");
    } else if (!mount_paths.insert(m.mount_path).second) {
      e.add(p + ".mountPath", "\"" + m.mount_path + "\" is mounted twice in the worker");
    }
    if (m.sub_path && !m.sub_path->empty()) {
      if (m.sub_path->front() == '/') {
        e.add(p + ".subPath", invalidValue(*m.sub_path, "must be a relative path"));
      } else if (kube::hasBackstep(*m.sub_path)) {
        e.add(p + ".subPath", invalidValue(*m.sub_path, "must not contain '..'"));
      }
    }
  }
}

// valueFrom may read the pod's own fields and resources, or a Secret or ConfigMap key of the
// job's own namespace: what any pod author there can do (a pod cannot name another
// namespace). Other sources are refused. In MPI mode the launcher hands the environment to
// sshd's SetEnv, which quotes anything but a line break.
void validateEnvSource(const kube::TrainingJobSpec& s, const kube::EnvVar& var,
                       const std::string& p, FieldErrors& e) {
  if (var.value_from) {
    const kube::EnvVarSource& from = *var.value_from;
    int sources = (from.field_ref ? 1 : 0) + (from.secret_key_ref ? 1 : 0) +
                  (from.config_map_key_ref ? 1 : 0);
    if (from.extra.is_object()) {
      for (const auto& [key, value] : from.extra.items()) {
        if (key == "resourceFieldRef") {
          ++sources;
        } else {
          e.add(p + ".valueFrom." + key,
                "unsupported: use fieldRef, resourceFieldRef, secretKeyRef or configMapKeyRef");
        }
      }
    }
    if (sources != 1) e.add(p + ".valueFrom", "must set exactly one source");
    if (var.value && !var.value->empty()) {
      e.add(p + ".valueFrom", "may not be specified when `value` is not empty");
    }
  }
  if (s.launcher == "mpi" && var.value &&
      var.value->find_first_of(std::string_view("\r\n")) != std::string::npos) {
    e.add(p + ".value",
          "must not contain a line break when spec.launcher is mpi (the launcher passes the "
          "environment through sshd's config, one line)");
  }
}

constexpr Backend kBackends[] = {Backend::kAuto, Backend::kNccl, Backend::kTcp, Backend::kGloo,
                                 Backend::kMpi};
constexpr RestartPolicy kRestartPolicies[] = {RestartPolicy::kNever, RestartPolicy::kOnFailure,
                                              RestartPolicy::kExitCode};
constexpr CleanPodPolicy kCleanPodPolicies[] = {CleanPodPolicy::kNone, CleanPodPolicy::kRunning,
                                                CleanPodPolicy::kAll};
constexpr contract::LauncherMode kLaunchers[] = {contract::LauncherMode::kNative,
                                                 contract::LauncherMode::kMpi};

// The job's backend as the contract's rules see it: the trainer's device and split (defaults
// where unset; a job of the user's own program has no trainer, so only the launcher matters).
contract::BackendUse backendUse(const kube::TrainingJobSpec& s) {
  contract::BackendUse use;
  use.backend = s.backend.value_or("auto");
  use.launcher = s.launcher.value_or("native");
  if (s.trainer) {
    const contract::TrainerSettings t = contract::trainerSettings(*s.trainer);
    use.device = name(t.device);
    use.pipeline_stages = t.pipeline.stages;
    use.tensor = t.tensor;
    use.pipeline_schedule = name(t.pipeline.schedule);
  }
  return use;
}

// A model split into pipeline stages and tensor ranks: the world must hold whole replicas of it
// (stages x tensor ranks each).
void validateParallelism(const kube::TrainingJobSpec& s, FieldErrors& e) {
  const contract::TrainerSettings settings = contract::trainerSettings(*s.trainer);
  const int64_t stages = settings.pipeline.stages, tensor = settings.tensor;
  const int64_t model_ranks = stages * tensor;  // the ranks of one replica of the model
  if (model_ranks <= 1) return;
  std::string what =
      "stages x tensor (" + std::to_string(stages) + " x " + std::to_string(tensor) + ")";
  if (tensor == 1)
    what = "spec.trainer.parallelism.pipeline.stages (" + std::to_string(stages) + ")";
  if (stages == 1) what = "spec.trainer.parallelism.tensor (" + std::to_string(tensor) + ")";
  if (s.replicas && s.procs_per_replica) {
    const int64_t world = int64_t{*s.replicas} * *s.procs_per_replica;
    if (world % model_ranks != 0) {
      e.add("spec.replicas", "replicas x procsPerReplica = " + std::to_string(world) +
                                 " ranks, not a multiple of " + what +
                                 ": every replica of the model needs all of its ranks");
    } else if (world > model_ranks && s.launcher == "mpi") {
      e.add("spec.launcher", "mpi runs one replica of a split model (" +
                                 std::to_string(model_ranks) + " ranks), not " +
                                 std::to_string(world / model_ranks) +
                                 " of them; use the native launcher");
    }
  }
}

// Parameter servers are ranks of the job's world: workers must remain beside them, under the
// native launcher (mpirun would start every rank as a trainer of one world), in a fixed world.
void validateParameterServers(const kube::TrainingJobSpec& s, FieldErrors& e) {
  const contract::TrainerSettings settings = contract::trainerSettings(*s.trainer);
  const int64_t servers = settings.parameter_servers.servers;
  // Servers in pods of their own: validateRoles checks the same under spec.roles.ps.
  if (servers == 0 || (s.roles && s.roles->ps)) return;
  const std::string field = "spec.trainer.parallelism.parameterServer";
  if (s.launcher == "mpi") {
    e.add("spec.launcher", "parameter servers run under launcher native, not mpi");
  }
  if (s.elastic) {
    e.add("spec.elastic",
          "parameter servers among the workers' ranks fix the world; give them pods of their own "
          "(spec.roles.ps) for a job whose worker count changes");
  }
  if (s.replicas && s.procs_per_replica) {
    const int64_t world = int64_t{*s.replicas} * *s.procs_per_replica;
    if (servers >= world) {
      e.add(field, std::to_string(servers) +
                       " servers leave no worker among replicas x "
                       "procsPerReplica = " +
                       std::to_string(world) + " ranks");
    }
  }
}

// The ranks of `ps_pods` ps pods of `procs` processes each: every one a server (saturating).
int32_t psRanks(int64_t ps_pods, int64_t procs) {
  return static_cast<int32_t>(
      std::min<int64_t>(ps_pods * procs, std::numeric_limits<int32_t>::max()));
}

// The worker container's additions and the pod template of one role's pods: env, volumes,
// mounts, resources, template.
void validatePodAdditions(const kube::TrainingJob& job, const ValidateOptions& options,
                          FieldErrors& e) {
  const kube::TrainingJobSpec& s = job.spec;
  const WorkerAdditions worker = workerAdditions(s);
  std::set<std::string> env_names;
  for (const auto& [path, var] : worker.env) {
    const std::string p = path + ".name";
    if (var->name.empty()) {
      e.add(p, "required");
    } else if (reservedEnv().count(var->name)) {
      e.add(p, "\"" + var->name + "\" is set by the operator or the launcher");
    } else if (!env_names.insert(var->name).second) {
      e.add(p, "\"" + var->name + "\" is given twice");
    }
    validateEnvSource(s, *var, path, e);
  }
  validateVolumes(worker, options, e);
  validatePodTemplate(job, metricsPort(job), e);
}

// A role's own resources and template (`spec` at `path`), checked as the workers' are: only
// the errors under the role's own fields are new (the rest are the workers' too, reported once).
void validateRolePod(const kube::TrainingJob& job, const ValidateOptions& options, Role role,
                     const kube::RoleSpec& spec, const std::string& path, FieldErrors& e) {
  if (!spec.resources && !spec.pod_template) return;
  kube::TrainingJob view = job;
  view.spec = specForRole(job.spec, role);
  FieldErrors role_errors;
  validatePodAdditions(view, options, role_errors);
  for (FieldError& error : role_errors.take()) {
    const std::string& f = error.field;
    for (const char* given : {"spec.template", "spec.resources"}) {
      const std::string g = given;
      const bool from_role =
          g == "spec.template" ? spec.pod_template.has_value() : spec.resources.has_value();
      if (from_role && (f == g || f.starts_with(g + ".") || f.starts_with(g + "["))) {
        // The message may name the role's fields by their top-level names too.
        std::string message = std::move(error.message);
        for (const char* top : {"spec.template", "spec.resources"}) {
          for (size_t at = message.find(top); at != std::string::npos;
               at = message.find(top, at + path.size())) {
            message.replace(at, 4, path);
          }
        }
        e.add(path + f.substr(4), std::move(message));
        break;
      }
    }
  }
}

// A role of one TensorFlow task a program of the user's own plays (the chief, the evaluator):
// one pod of one process under launcher native in a fixed world.
void validateTaskRole(const kube::TrainingJob& job, const ValidateOptions& options, Role role,
                      const kube::RoleSpec& spec, const std::string& path, FieldErrors& e) {
  const kube::TrainingJobSpec& s = job.spec;
  const std::string role_name = name(role);
  e.unknownFields(path, spec.extra);
  if (!spec.replicas) e.add(path + ".replicas", "required");
  e.inRange(path + ".replicas", spec.replicas, 1, 1);
  if (s.command.empty()) {
    e.add(path, role == Role::kChief
                    ? std::string("a chief pod runs a program of your own (spec.command), which "
                                  "finds it in TF_CONFIG's cluster.chief; the built-in trainer's "
                                  "chief is worker 0")
                    : std::string("an evaluator pod runs a program of your own (spec.command), "
                                  "which finds itself in TF_CONFIG's task; worker 0 evaluates "
                                  "the built-in trainer's model"));
  }
  if (s.procs_per_replica.value_or(1) != 1) {
    e.add(path, "a TensorFlow cluster has one " + role_name +
                    " task: procsPerReplica must be 1, got " +
                    std::to_string(*s.procs_per_replica));
  }
  if (s.launcher == "mpi") e.add(path, "TF_CONFIG's roles run under launcher native, not mpi");
  if (s.elastic) {
    e.add(path, "a job with a" + std::string(role == Role::kEvaluator ? "n " : " ") + role_name +
                    " has a fixed world; drop spec.elastic");
  }
  validateRolePod(job, options, role, spec, path, e);
}

// spec.roles: parameter servers, a user program's chief and evaluator in pods of their own,
// after the workers. Their pods run procsPerReplica ranks each like every pod of the gang (the
// ps pods' all servers); their resources and template, where given, are checked as the
// workers' are, under their own path.
void validateRoles(const kube::TrainingJob& job, const ValidateOptions& options, FieldErrors& e) {
  const kube::TrainingJobSpec& s = job.spec;
  if (!s.roles) return;
  const std::string field = "spec.roles";
  if (s.roles->extra.is_object()) {
    for (const auto& [key, value] : s.roles->extra.items()) {
      if (key == "worker") {
        e.add(field + "." + key, "the workers are spec.replicas, spec.resources and spec.template");
      } else {
        e.add(field + "." + key,
              "unknown role; the roles with pods of their own are ps, chief and evaluator");
      }
    }
  }
  if (s.roles->chief) {
    validateTaskRole(job, options, Role::kChief, *s.roles->chief, field + ".chief", e);
  }
  if (s.roles->evaluator) {
    validateTaskRole(job, options, Role::kEvaluator, *s.roles->evaluator, field + ".evaluator", e);
  }
  if (!s.roles->ps) return;
  const kube::RoleSpec& ps = *s.roles->ps;
  const std::string p = field + ".ps";
  e.unknownFields(p, ps.extra);
  if (!ps.replicas) e.add(p + ".replicas", "required");
  e.inRange(p + ".replicas", ps.replicas, 1, kMaxWorldSize);
  if (s.launcher == "mpi") {
    e.add(p,
          "parameter servers run under launcher native, not mpi (mpirun starts every rank as "
          "a trainer of one world)");
  }
  if (s.elastic) {
    // The workers come and go as spec.replicas changes, while the servers serve on.
    if (!s.command.empty()) {
      e.add("spec.elastic",
            "a job whose worker count changes runs the built-in trainer's servers and workers; "
            "a program of your own reads a fixed cluster (TF_CONFIG)");
    } else if (const contract::TrainerSettings::ParameterServers servers =
                   contract::trainerSettings(s.trainer.value_or(kube::TrainerSpec{}))
                       .parameter_servers;
               servers.consistency == contract::PsConsistency::kSync ||
               (servers.consistency == contract::PsConsistency::kBounded &&
                servers.staleness == 0)) {
      e.add("spec.trainer.parallelism.parameterServer.consistency",
            "a job whose worker count changes needs async or bounded: a sync step is every "
            "worker's batch, which would change size with it");
    }
  }
  if (s.trainer && ps.replicas && *ps.replicas >= 1) {
    const int64_t servers = contract::trainerSettings(*s.trainer).parameter_servers.servers;
    const int64_t ranks = int64_t{*ps.replicas} * s.procs_per_replica.value_or(1);
    if (servers != ranks) {
      e.add("spec.trainer.parallelism.parameterServer.servers",
            std::to_string(servers) + " servers, but spec.roles.ps gives " +
                std::to_string(*ps.replicas) + " pod(s) x procsPerReplica = " +
                std::to_string(ranks) + " server ranks: leave servers unset or make them equal");
    }
  }
  validateRolePod(job, options, Role::kPs, ps, p, e);
}

// spec.elastic: bounds around spec.replicas, and a job whose world can change at all: the
// native launcher, one data-parallel model, and a global batch that splits among every world.
void validateElastic(const kube::TrainingJob& job, FieldErrors& e) {
  const kube::TrainingJobSpec& s = job.spec;
  if (!s.elastic) return;
  // A gang scheduler's PodGroup and a Kueue pod group both fix the gang's size.
  if (podGroupKindFor(job)) {
    e.add("spec.elastic", "schedulerName " + s.scheduling_policy->scheduler_name.value_or("") +
                              " schedules a PodGroup of fixed size; elastic jobs use the "
                              "default scheduler");
  }
  const bool queued =
      job.metadata.labels.count(kQueueNameLabel) > 0 ||
      (s.pod_template && s.pod_template->metadata.labels.count(kQueueNameLabel) > 0);
  if (queued) {
    e.add("spec.elastic", std::string("Kueue admits a pod group of fixed size (label ") +
                              kQueueNameLabel + "); an elastic job cannot be queued");
  }
  const kube::ElasticPolicy& el = *s.elastic;
  e.unknownFields("spec.elastic", el.extra);
  if (!el.min_replicas) e.add("spec.elastic.minReplicas", "required");
  e.inRange("spec.elastic.minReplicas", el.min_replicas, 1, kMaxWorldSize);
  e.inRange("spec.elastic.maxReplicas", el.max_replicas, 1, kMaxWorldSize);
  if (!s.replicas || !el.min_replicas || !el.max_replicas) return;
  const int32_t lo = *el.min_replicas, hi = *el.max_replicas;
  if (lo < 1 || hi < 1) return;
  if (lo > *s.replicas || *s.replicas > hi) {
    e.add("spec.elastic", "minReplicas <= spec.replicas <= maxReplicas must hold, got " +
                              std::to_string(lo) + " <= " + std::to_string(*s.replicas) +
                              " <= " + std::to_string(hi));
    return;
  }
  if (s.launcher == "mpi") {
    e.add("spec.elastic", "an elastic job needs launcher native (mpirun's world is fixed)");
  }
  if (!s.trainer) return;
  const contract::TrainerSettings t = contract::trainerSettings(*s.trainer);
  if (t.pipeline.stages > 1 || t.tensor > 1) {
    e.add("spec.elastic",
          "a model split by pipeline or tensor parallelism cannot change its "
          "world; elastic jobs are data parallel");
    return;
  }
  // Parameter servers in pods of their own take workers in and let them go without a restart.
  if (t.checkpoint.path.empty() && !(s.roles && s.roles->ps)) {
    e.add("spec.trainer.checkpoint.path",
          "required for an elastic job: each resize restarts its ranks from the newest "
          "checkpoint (a path on a volume that outlives the pods, e.g. a PersistentVolumeClaim)");
  }
  if (t.global_batch_size <= 0 || hi > kMaxWorldSize) return;
  const int64_t procs = s.procs_per_replica.value_or(1);
  int64_t multiple = 1;  // every world's rank count divides it
  for (int64_t r = lo; r <= hi && multiple <= (int64_t{1} << 40); ++r) {
    multiple = std::lcm(multiple, r * procs);
  }
  if (t.global_batch_size % multiple != 0) {
    e.add("spec.trainer.globalBatchSize",
          std::to_string(t.global_batch_size) +
              " samples (unless given: batchSize x the ranks at spec.replicas) must split evenly "
              "among the ranks of every world from minReplicas to maxReplicas (" +
              std::to_string(lo * procs) + " to " + std::to_string(hi * procs) +
              " ranks): choose a multiple of " + std::to_string(multiple));
  }
}

// A pbt member: the built-in trainer meets after every epoch, a program of the user's own (run
// by the launcher once per interval) after every run, of which it must say how many.
void validatePbtMember(const kube::TrainingJobSpec& s, FieldErrors& e) {
  if (!s.trainer || !s.trainer->pbt) return;
  const bool intervals = s.trainer->pbt->intervals.has_value();
  if (!s.command.empty() && !intervals) {
    e.add("spec.trainer.pbt.intervals",
          "required for a program of your own (spec.command): how many times the launcher runs "
          "it, the members meeting after every run but the last");
  } else if (s.command.empty() && intervals) {
    e.add("spec.trainer.pbt.intervals",
          "only for a program of your own (spec.command); the built-in trainer meets after "
          "every epoch (spec.trainer.epochs)");
  }
  if (!s.command.empty() && s.replicas.value_or(1) * s.procs_per_replica.value_or(1) != 1) {
    e.add("spec.trainer.pbt",
          "a member of a program of your own runs on one rank: replicas 1, "
          "procsPerReplica 1");
  }
}

}  // namespace

const char* name(Backend value) {
  switch (value) {
    case Backend::kNccl:
      return "nccl";
    case Backend::kTcp:
      return "tcp";
    case Backend::kGloo:
      return "gloo";
    case Backend::kMpi:
      return "mpi";
    case Backend::kAuto:
      break;
  }
  return "auto";
}

const char* name(RestartPolicy value) {
  switch (value) {
    case RestartPolicy::kNever:
      return "Never";
    case RestartPolicy::kExitCode:
      return "ExitCode";
    case RestartPolicy::kOnFailure:
      break;
  }
  return "OnFailure";
}

const char* name(Role value) {
  switch (value) {
    case Role::kPs:
      return "ps";
    case Role::kChief:
      return "chief";
    case Role::kEvaluator:
      return "evaluator";
    case Role::kWorker:
      break;
  }
  return "worker";
}

kube::TrainingJobSpec specForRole(const kube::TrainingJobSpec& spec, Role role) {
  kube::TrainingJobSpec view = spec;
  if (!spec.roles) return view;
  const std::optional<kube::RoleSpec>* given = nullptr;
  if (role == Role::kPs) given = &spec.roles->ps;
  if (role == Role::kChief) given = &spec.roles->chief;
  if (role == Role::kEvaluator) given = &spec.roles->evaluator;
  if (given == nullptr || !*given) return view;
  if ((*given)->resources) view.resources = (*given)->resources;
  if ((*given)->pod_template) view.pod_template = (*given)->pod_template;
  return view;
}

const char* name(CleanPodPolicy value) {
  switch (value) {
    case CleanPodPolicy::kNone:
      return "None";
    case CleanPodPolicy::kAll:
      return "All";
    case CleanPodPolicy::kRunning:
      break;
  }
  return "Running";
}

bool managedByUs(const kube::TrainingJobSpec& spec) {
  return !spec.managed_by || *spec.managed_by == kControllerName;
}

JobSettings settingsOf(const kube::TrainingJobSpec& spec) {
  const JobSettings d;
  JobSettings s;
  s.replicas = spec.replicas.value_or(d.replicas);
  s.procs_per_replica = spec.procs_per_replica.value_or(d.procs_per_replica);
  s.launcher = contract::parseSpelling(spec.launcher, kLaunchers, d.launcher);
  s.backend = contract::parseSpelling(spec.backend, kBackends, d.backend);
  s.restart_policy =
      contract::parseSpelling(spec.restart_policy, kRestartPolicies, d.restart_policy);
  s.backoff_limit = spec.backoff_limit.value_or(d.backoff_limit);
  s.active_deadline_seconds = spec.active_deadline_seconds;
  s.finish_timeout_seconds = spec.finish_timeout_seconds.value_or(d.finish_timeout_seconds);
  s.ttl_seconds_after_finished = spec.ttl_seconds_after_finished;
  s.clean_pod_policy =
      contract::parseSpelling(spec.clean_pod_policy, kCleanPodPolicies, d.clean_pod_policy);
  s.suspend = spec.suspend.value_or(d.suspend);
  if (spec.scheduling_policy) {
    s.schedule_timeout_seconds =
        spec.scheduling_policy->schedule_timeout_seconds.value_or(d.schedule_timeout_seconds);
    s.scheduler_name = spec.scheduling_policy->scheduler_name.value_or("");
  }
  if (spec.roles && spec.roles->ps) {
    s.ps_pods = std::clamp(spec.roles->ps->replicas.value_or(0), 0, kMaxWorldSize);
  }
  if (spec.roles && spec.roles->chief) {
    s.chief_pods = std::clamp(spec.roles->chief->replicas.value_or(0), 0, 1);
  }
  if (spec.roles && spec.roles->evaluator) {
    s.evaluator_pods = std::clamp(spec.roles->evaluator->replicas.value_or(0), 0, 1);
  }
  if (spec.trainer) {
    s.parameter_servers = contract::trainerSettings(*spec.trainer).parameter_servers.servers;
  }
  // A user's program with ps pods: every rank on them is a server.
  if (s.parameter_servers == 0) s.parameter_servers = psRanks(s.ps_pods, s.procs_per_replica);
  s.min_replicas = s.max_replicas = s.replicas;
  if (spec.elastic) {
    s.elastic = true;
    s.min_replicas = spec.elastic->min_replicas.value_or(s.replicas);
    s.max_replicas = spec.elastic->max_replicas.value_or(s.replicas);
  }
  return s;
}

int32_t currentReplicas(const JobSettings& settings, const kube::TrainingJobStatus& status) {
  if (settings.scalesWorkers()) {
    return std::clamp(settings.replicas, settings.min_replicas, settings.max_replicas);
  }
  if (!settings.elastic || !status.current_replicas) return settings.replicas;
  return std::clamp(*status.current_replicas, settings.min_replicas, settings.max_replicas);
}

kube::TrainingJob atCurrentWorld(const kube::TrainingJob& job,
                                 const kube::TrainingJobStatus& status) {
  kube::TrainingJob at = job;
  at.spec.replicas = currentReplicas(settingsOf(job.spec), status);
  return at;
}

kube::TrainingJobSpec withDefaults(const kube::TrainingJobSpec& spec,
                                   const ValidateOptions& options) {
  const JobSettings d;
  kube::TrainingJobSpec s = spec;
  if (!s.procs_per_replica) s.procs_per_replica = d.procs_per_replica;
  if (!s.launcher) s.launcher = contract::name(d.launcher);
  if (!s.backend) s.backend = name(d.backend);
  if ((!s.image || s.image->empty()) && !options.default_image.empty()) {
    s.image = options.default_image;
  }
  if (!s.restart_policy) s.restart_policy = name(d.restart_policy);
  if (!s.backoff_limit) s.backoff_limit = d.backoff_limit;
  if (!s.finish_timeout_seconds) s.finish_timeout_seconds = d.finish_timeout_seconds;
  if (!s.clean_pod_policy) s.clean_pod_policy = name(d.clean_pod_policy);
  if (!s.suspend) s.suspend = d.suspend;
  if (!s.scheduling_policy) s.scheduling_policy = kube::SchedulingPolicy{};
  if (!s.scheduling_policy->schedule_timeout_seconds) {
    s.scheduling_policy->schedule_timeout_seconds = d.schedule_timeout_seconds;
  }
  if (s.command.empty() && !s.trainer) s.trainer = kube::TrainerSpec{};
  // ps pods serve the built-in trainer's parameters: every rank on them is a server.
  if (s.trainer && s.roles && s.roles->ps && s.roles->ps->replicas) {
    kube::ParallelismSpec& parallelism =
        s.trainer->parallelism.emplace(s.trainer->parallelism.value_or(kube::ParallelismSpec{}));
    kube::ParameterServerSpec& ps = parallelism.parameter_server.emplace(
        parallelism.parameter_server.value_or(kube::ParameterServerSpec{}));
    if (!ps.servers) ps.servers = psRanks(*s.roles->ps->replicas, s.procs_per_replica.value_or(1));
  }
  if (s.elastic && !s.elastic->max_replicas) s.elastic->max_replicas = s.replicas;
  // An elastic job keeps its global batch at every world: batchSize per rank is read at the
  // world the job starts at.
  // Parameter servers' workers each train batchSize a step, however many they are.
  if (s.elastic && s.trainer && !s.trainer->global_batch_size && s.replicas &&
      !(s.roles && s.roles->ps)) {
    const int64_t ranks = int64_t{*s.replicas} * s.procs_per_replica.value_or(1);
    const int64_t global = contract::trainerSettings(*s.trainer).batch_size * ranks;
    if (global <= std::numeric_limits<int32_t>::max()) {
      s.trainer->global_batch_size = static_cast<int32_t>(global);
      s.trainer->batch_size.reset();
    }
  }
  return s;
}

std::vector<FieldError> validate(const kube::TrainingJob& job, const ValidateOptions& options) {
  FieldErrors e;
  const kube::TrainingJobSpec& s = job.spec;
  const std::string& name = job.metadata.name;
  if (!kube::dns1035LabelProblems(name).empty()) {
    e.add("metadata.name",
          "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, "
          "at most 63 characters), got \"" +
              name + "\"");
  }
  e.unknownFields("spec", s.extra);
  if (!s.replicas) {
    e.add("spec.replicas", "required");
  } else if (*s.replicas < 1) {
    e.add("spec.replicas", "must be at least 1, got " + std::to_string(*s.replicas));
  }
  e.inRange("spec.procsPerReplica", s.procs_per_replica, 1, kMaxProcsPerReplica);
  validateElastic(job, e);
  if (s.replicas && s.procs_per_replica && *s.replicas >= 1 && *s.procs_per_replica >= 1) {
    const int32_t slots = settingsOf(s).podSlots();
    const int64_t world = int64_t{slots} * *s.procs_per_replica;
    if (world > kMaxWorldSize) {
      e.add(s.elastic ? "spec.elastic.maxReplicas" : "spec.replicas",
            "world size replicas x procsPerReplica = " + std::to_string(world) + " exceeds " +
                std::to_string(kMaxWorldSize));
    }
    // The last pod of each role: the workers', the ps pods', the gang's (or an elastic job's).
    const JobSettings settings = settingsOf(s);
    std::string longest;
    for (int32_t last :
         {settings.replicas - 1, settings.replicas + settings.ps_pods - 1, slots - 1}) {
      const std::string pod = podName(name, settings, last);
      if (pod.size() > longest.size()) longest = pod;
    }
    if (longest.size() > 63 && name.size() <= 63) {
      e.add("metadata.name", "too long for its pod names: \"" + longest + "\" has " +
                                 std::to_string(longest.size()) + " characters, at most 63");
    }
  }
  if (s.managed_by && (s.managed_by->empty() || s.managed_by->size() > kMaxManagedByLength)) {
    e.add("spec.managedBy", "must be 1 to " + std::to_string(kMaxManagedByLength) +
                                " characters, got " + std::to_string(s.managed_by->size()));
  }
  e.oneOf("spec.launcher", s.launcher, contract::spellings(kLaunchers));
  e.oneOf("spec.backend", s.backend, contract::spellings(kBackends));
  if (!s.image || s.image->empty()) {
    e.add("spec.image", "required: the operator has no default image (--trainer-image)");
  }
  e.oneOf("spec.restartPolicy", s.restart_policy, contract::spellings(kRestartPolicies));
  e.oneOf("spec.cleanPodPolicy", s.clean_pod_policy, contract::spellings(kCleanPodPolicies));
  e.atLeast("spec.backoffLimit", s.backoff_limit, 0);
  e.atLeast("spec.activeDeadlineSeconds", s.active_deadline_seconds, int64_t{1});
  e.atLeast("spec.finishTimeoutSeconds", s.finish_timeout_seconds, 0);
  e.atLeast("spec.ttlSecondsAfterFinished", s.ttl_seconds_after_finished, 0);
  if (s.scheduling_policy) {
    e.unknownFields("spec.schedulingPolicy", s.scheduling_policy->extra);
    e.atLeast("spec.schedulingPolicy.scheduleTimeoutSeconds",
              s.scheduling_policy->schedule_timeout_seconds, 1);
  }
  for (size_t i = 0; i < s.command.size(); ++i) {
    if (i == 0 && s.command[i].empty()) e.add("spec.command[0]", "must not be empty");
  }
  validatePodAdditions(job, options, e);
  validateRoles(job, options, e);
  if (s.trainer) {
    for (FieldError& error : contract::validateTrainer(*s.trainer, "spec.trainer")) {
      e.add(std::move(error.field), std::move(error.message));
    }
    validateParallelism(s, e);
    validateParameterServers(s, e);
    validatePbtMember(s, e);
  }
  // The backend must be able to read where the gradients live (the contract's rules).
  if (std::string why = contract::backendError(backendUse(s)); !why.empty()) {
    e.add("spec.backend", std::move(why));
  }
  return e.take();
}

core::Result<kube::TrainingJobSpec> defaultAndValidate(const kube::TrainingJob& job,
                                                       const ValidateOptions& options) {
  kube::TrainingJob defaulted = job;
  defaulted.spec = withDefaults(job.spec, options);
  std::vector<FieldError> errors = validate(defaulted, options);
  if (!errors.empty()) return core::invalidArgument(contract::describe(errors));
  return std::move(defaulted.spec);
}

}  // namespace ringmaster::op
