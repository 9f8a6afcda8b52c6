#include "operator/validate.h"

#include <algorithm>
#include <array>
#include <set>

#include "operator/builders.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::op {
namespace {

// Every pod the operator may build must parse in the launcher.
static_assert(kMaxWorldSize <= contract::pod_env::kMaxNodes);
static_assert(kMaxProcsPerReplica <= contract::pod_env::kMaxLocalWorldSize);

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
                                               pod_env::kJob,
                                               pod_env::kAttempt,
                                               pod_env::kBackend,
                                               pod_env::kLauncherMode,
                                               pod_env::kStoreSecret,
                                               pod_env::kPodIp,
                                               pod_env::kPodName,
                                               "RANK",
                                               "LOCAL_RANK"};
  return kNames;
}

// Kubernetes' field.Invalid text: `Invalid value: "x": why`.
std::string invalidValue(const std::string& value, const std::string& why) {
  return "Invalid value: " + nlohmann::json(value).dump() + ": " + why;
}

// Whether `path` has a ".." segment (Kubernetes' validatePathNoBacksteps).
bool hasBackstep(const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (path.compare(start, end - start, "..") == 0) return true;
    start = end + 1;
  }
  return false;
}

class Errors {
 public:
  void add(std::string field, std::string message) {
    errors_.push_back({std::move(field), std::move(message)});
  }
  template <class T>
  void oneOf(const std::string& field, const std::optional<std::string>& value, const T& allowed) {
    if (!value) return;
    for (const char* a : allowed) {
      if (*value == a) return;
    }
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    add(field, "must be one of " + list + ", got \"" + *value + "\"");
  }
  template <class N>
  void atLeast(const std::string& field, const std::optional<N>& value, N min) {
    if (value && *value < min) {
      add(field, "must be at least " + std::to_string(min) + ", got " + std::to_string(*value));
    }
  }
  template <class N>
  void inRange(const std::string& field, const std::optional<N>& value, N min, N max) {
    if (value && (*value < min || *value > max)) {
      add(field, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                     std::to_string(*value));
    }
  }
  void unknownFields(const std::string& prefix, const nlohmann::json& extra) {
    if (!extra.is_object()) return;
    for (const auto& [key, value] : extra.items()) add(prefix + "." + key, "unknown field");
  }
  std::vector<FieldError> take() { return std::move(errors_); }

 private:
  std::vector<FieldError> errors_;
};

// fp32 weights, gradients and optimizer moments: about 16 bytes a parameter on every rank.
std::string gigabytes(int64_t parameters) {
  const int64_t tenths = parameters * 16 / 100'000'000;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GB";
}

void validateTrainer(const kube::TrainerSpec& t, Errors& e) {
  const std::string p = "spec.trainer";
  e.unknownFields(p, t.extra);
  if (t.model) {
    e.unknownFields(p + ".model", t.model->extra);
    e.oneOf(p + ".model.type", t.model->type, std::array{"mlp", "cnn"});
    for (size_t i = 0; i < t.model->hidden.size(); ++i) {
      e.inRange(p + ".model.hidden[" + std::to_string(i) + "]",
                std::optional<int32_t>(t.model->hidden[i]), 1, 65536);
    }
    for (size_t i = 0; i < t.model->channels.size(); ++i) {
      e.inRange(p + ".model.channels[" + std::to_string(i) + "]",
                std::optional<int32_t>(t.model->channels[i]), 1, 1024);
    }
    e.inRange(p + ".model.cnnHidden", t.model->cnn_hidden, 0, 65536);
    if (const int64_t n = modelParameters(*t.model); n > kMaxModelParameters) {
      const std::string field =
          t.model->type.value_or("mlp") == "cnn" ? "channels, cnnHidden" : "hidden";
      e.add(p + ".model",
            "the model has " + std::to_string(n) + " parameters (~" + gigabytes(n) +
                " per rank for weights, gradients and optimizer state), more than the " +
                std::to_string(kMaxModelParameters) + " allowed; make " + field + " smaller");
    }
  }
  if (t.dataset) {
    e.unknownFields(p + ".dataset", t.dataset->extra);
    e.oneOf(p + ".dataset.name", t.dataset->name, std::array{"fashion-mnist"});
  }
  if (t.optimizer) {
    e.unknownFields(p + ".optimizer", t.optimizer->extra);
    e.oneOf(p + ".optimizer.type", t.optimizer->type, std::array{"sgd", "adam"});
    e.oneOf(p + ".optimizer.schedule", t.optimizer->schedule, std::array{"constant", "cosine"});
    if (t.optimizer->learning_rate && !(*t.optimizer->learning_rate > 0)) {
      e.add(p + ".optimizer.learningRate", "must be greater than 0");
    }
    if (t.optimizer->momentum && !(*t.optimizer->momentum >= 0 && *t.optimizer->momentum < 1)) {
      e.add(p + ".optimizer.momentum", "must be in [0, 1)");
    }
    e.inRange(p + ".optimizer.beta1", t.optimizer->beta1, 0.0, 1.0);
    e.inRange(p + ".optimizer.beta2", t.optimizer->beta2, 0.0, 1.0);
    e.atLeast(p + ".optimizer.epsilon", t.optimizer->epsilon, 0.0);
    e.atLeast(p + ".optimizer.weightDecay", t.optimizer->weight_decay, 0.0);
  }
  if (t.checkpoint) {
    e.unknownFields(p + ".checkpoint", t.checkpoint->extra);
    // A relative path resolves against the trainer's working directory: ".." could leave it.
    if (t.checkpoint->path && hasBackstep(*t.checkpoint->path)) {
      e.add(p + ".checkpoint.path", invalidValue(*t.checkpoint->path, "must not contain '..'"));
    }
    e.atLeast(p + ".checkpoint.everySteps", t.checkpoint->every_steps, 0);
    e.atLeast(p + ".checkpoint.keep", t.checkpoint->keep, 1);
  }
  e.inRange(p + ".epochs", t.epochs, 1, 100000);
  e.inRange(p + ".batchSize", t.batch_size, 1, 65536);
  if (t.bucket_cap_mb && !(*t.bucket_cap_mb > 0 && *t.bucket_cap_mb <= 4096)) {
    e.add(p + ".bucketCapMB", "must be in (0, 4096]");
  }
  if (t.first_bucket_cap_mb && !(*t.first_bucket_cap_mb > 0)) {
    e.add(p + ".firstBucketCapMB", "must be greater than 0");
  }
  e.atLeast(p + ".seed", t.seed, int64_t{0});
  e.inRange(p + ".metricsPort", t.metrics_port, 1, 65535);
  // The worker container's other ports: a second listener on one of them cannot bind.
  for (auto [port, what] : {std::pair{kHealthPort, "the launcher's health port"},
                            std::pair{kRendezvousPort, "the rendezvous port"},
                            std::pair{kSshPort, "the MPI launcher's sshd port"}}) {
    if (t.metrics_port == port) {
      e.add(p + ".metricsPort", invalidValue(std::to_string(port), std::string("is ") + what));
    }
  }
  e.atLeast(p + ".maxSteps", t.max_steps, int64_t{0});
  e.atLeast(p + ".logEverySteps", t.log_every_steps, 0);
  e.atLeast(p + ".commTimeoutSeconds", t.comm_timeout_seconds, 1);
  e.inRange(p + ".blasThreads", t.blas_threads, 1, 256);
  e.oneOf(p + ".device", t.device, std::array{"auto", "cpu", "cuda"});
  e.oneOf(p + ".precision", t.precision, std::array{"fp32", "bf16"});
  if (t.precision == "bf16" && t.device == "cpu") e.add(p + ".precision", "bf16 needs the GPU");
}

void validateVolumes(const kube::TrainingJobSpec& s, const ValidateOptions& options, Errors& e) {
  std::set<std::string> names;
  for (size_t i = 0; i < s.volumes.size(); ++i) {
    const std::string p = "spec.volumes[" + std::to_string(i) + "].name";
    const std::string& name = s.volumes[i].name;
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
  }
  // A hostPath volume is the node's filesystem: refused unless the cluster admin allows it.
  for (size_t i = 0; i < s.volumes.size(); ++i) {
    if (s.volumes[i].host_path && !options.allow_host_path) {
      e.add("spec.volumes[" + std::to_string(i) + "].hostPath",
            "hostPath volumes are disabled by the cluster admin (operator flag "
            "--allow-host-path, chart value allowHostPath); use a persistentVolumeClaim");
    }
  }
  for (size_t i = 0; i < s.volume_mounts.size(); ++i) {
    const std::string p = "spec.volumeMounts[" + std::to_string(i) + "]";
    const kube::VolumeMount& m = s.volume_mounts[i];
    if (names.count(m.name) == 0) {
      e.add(p + ".name", "names no volume in spec.volumes: \"" + m.name + "\"");
    }
    if (m.mount_path.empty() || m.mount_path[0] != '/') {
      e.add(p + ".mountPath", "must be an absolute path, got \"" + m.mount_path + "\"");
    } else if (hasBackstep(m.mount_path)) {
      e.add(p + ".mountPath", invalidValue(m.mount_path, "must not contain '..'"));
    } else if (m.mount_path == "/etc/ringmaster" || m.mount_path.starts_with("/etc/ringmaster/")) {
      e.add(p + ".mountPath", "/etc/ringmaster is reserved for the job's ConfigMap");
    } else if (m.mount_path == kTmpMountPath) {
      e.add(p + ".mountPath", std::string(kTmpMountPath) + " is reserved for the worker's TMPDIR");
    }
    if (m.sub_path && !m.sub_path->empty()) {
      if (m.sub_path->front() == '/') {
        e.add(p + ".subPath", invalidValue(*m.sub_path, "must be a relative path"));
      } else if (hasBackstep(*m.sub_path)) {
        e.add(p + ".subPath", invalidValue(*m.sub_path, "must not contain '..'"));
      }
    }
  }
}

// valueFrom may read the pod's own fields and resources, or a Secret or ConfigMap key of the
// job's own namespace: what any pod author there can do (a pod cannot name another
// namespace). Other sources are refused. In MPI mode the launcher hands the environment to
// sshd's SetEnv, which quotes anything but a line break.
void validateEnvSource(const kube::TrainingJobSpec& s, size_t i, Errors& e) {
  const kube::EnvVar& var = s.env[i];
  const std::string p = "spec.env[" + std::to_string(i) + "]";
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

}  // namespace

int64_t modelParameters(const kube::ModelSpec& model) {
  constexpr int64_t kInputs = 28 * 28, kClasses = 10;  // Fashion-MNIST
  auto dense = [](int64_t in, int64_t out) { return in * out + out; };
  int64_t n = 0;
  if (model.type.value_or("mlp") == "cnn") {
    // Two conv(5x5) blocks, each halving the 28x28 image (the trainer's defaults: 16, 32).
    const int64_t c1 = std::clamp(model.channels.size() > 0 ? model.channels[0] : 16, 1, 1024);
    const int64_t c2 = std::clamp(model.channels.size() > 1 ? model.channels[1] : 32, 1, 1024);
    n = (25 * c1 + c1) + (25 * c1 * c2 + c2);
    const int64_t flat = 7 * 7 * c2;
    const int64_t fc = std::max<int64_t>(0, model.cnn_hidden.value_or(0));
    n += fc > 0 ? dense(flat, fc) + dense(fc, kClasses) : dense(flat, kClasses);
    return n;
  }
  // The trainer's default widths when none are given.
  const std::vector<int32_t> hidden =
      model.hidden.empty() ? std::vector<int32_t>{512, 512} : model.hidden;
  int64_t in = kInputs;
  for (int32_t width : hidden) {
    // Clamped as validate() bounds it (an out-of-range width is its own error): no overflow.
    const int64_t w = std::clamp(width, 1, 65536);
    n += dense(in, w);
    in = w;
  }
  return n + dense(in, kClasses);
}

kube::TrainingJobSpec withDefaults(const kube::TrainingJobSpec& spec,
                                   const ValidateOptions& options) {
  kube::TrainingJobSpec s = spec;
  if (!s.procs_per_replica) s.procs_per_replica = 1;
  if (!s.launcher) s.launcher = "native";
  if (!s.backend) s.backend = "auto";
  if ((!s.image || s.image->empty()) && !options.default_image.empty()) {
    s.image = options.default_image;
  }
  if (!s.restart_policy) s.restart_policy = "OnFailure";
  if (!s.backoff_limit) s.backoff_limit = kDefaultBackoffLimit;
  if (!s.clean_pod_policy) s.clean_pod_policy = "Running";
  if (!s.suspend) s.suspend = false;
  if (!s.scheduling_policy) s.scheduling_policy = kube::SchedulingPolicy{};
  if (!s.scheduling_policy->schedule_timeout_seconds) {
    s.scheduling_policy->schedule_timeout_seconds = kDefaultScheduleTimeoutSeconds;
  }
  if (s.command.empty() && !s.trainer) s.trainer = kube::TrainerSpec{};
  return s;
}

std::vector<FieldError> validate(const kube::TrainingJob& job, const ValidateOptions& options) {
  Errors e;
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
  if (s.replicas && s.procs_per_replica && *s.replicas >= 1 && *s.procs_per_replica >= 1) {
    const int64_t world = int64_t{*s.replicas} * *s.procs_per_replica;
    if (world > kMaxWorldSize) {
      e.add("spec.replicas", "world size replicas x procsPerReplica = " + std::to_string(world) +
                                 " exceeds " + std::to_string(kMaxWorldSize));
    }
    const std::string longest = name + "-worker-" + std::to_string(*s.replicas - 1);
    if (longest.size() > 63 && name.size() <= 63) {
      e.add("metadata.name", "too long for its pod names: \"" + longest + "\" has " +
                                 std::to_string(longest.size()) + " characters, at most 63");
    }
  }
  e.oneOf("spec.launcher", s.launcher, std::array{"native", "mpi"});
  e.oneOf("spec.backend", s.backend, std::array{"auto", "nccl", "gloo", "mpi"});
  if (s.launcher == "mpi" && s.backend && *s.backend != "auto" && *s.backend != "mpi") {
    e.add("spec.backend",
          "must be auto or mpi when spec.launcher is mpi, got \"" + *s.backend + "\"");
  }
  if (!s.image || s.image->empty()) {
    e.add("spec.image", "required: the operator has no default image (--trainer-image)");
  }
  e.oneOf("spec.restartPolicy", s.restart_policy, std::array{"Never", "OnFailure", "ExitCode"});
  e.oneOf("spec.cleanPodPolicy", s.clean_pod_policy, std::array{"None", "Running", "All"});
  e.atLeast("spec.backoffLimit", s.backoff_limit, 0);
  e.atLeast("spec.activeDeadlineSeconds", s.active_deadline_seconds, int64_t{1});
  e.atLeast("spec.ttlSecondsAfterFinished", s.ttl_seconds_after_finished, 0);
  if (s.scheduling_policy) {
    e.unknownFields("spec.schedulingPolicy", s.scheduling_policy->extra);
    e.atLeast("spec.schedulingPolicy.scheduleTimeoutSeconds",
              s.scheduling_policy->schedule_timeout_seconds, 1);
  }
  for (size_t i = 0; i < s.command.size(); ++i) {
    if (i == 0 && s.command[i].empty()) e.add("spec.command[0]", "must not be empty");
  }
  for (size_t i = 0; i < s.env.size(); ++i) {
    const std::string p = "spec.env[" + std::to_string(i) + "].name";
    if (s.env[i].name.empty()) {
      e.add(p, "required");
    } else if (reservedEnv().count(s.env[i].name)) {
      e.add(p, "\"" + s.env[i].name + "\" is set by the operator or the launcher");
    }
    validateEnvSource(s, i, e);
  }
  validateVolumes(s, options, e);
  if (s.trainer) validateTrainer(*s.trainer, e);
  return e.take();
}

std::string describe(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& error : errors) {
    if (!out.empty()) out += "; ";
    out += error.field + ": " + error.message;
  }
  return out;
}

core::Result<kube::TrainingJobSpec> defaultAndValidate(const kube::TrainingJob& job,
                                                       const ValidateOptions& options) {
  kube::TrainingJob defaulted = job;
  defaulted.spec = withDefaults(job.spec, options);
  std::vector<FieldError> errors = validate(defaulted, options);
  if (!errors.empty()) return core::invalidArgument(describe(errors));
  return std::move(defaulted.spec);
}

}  // namespace ringmaster::op
