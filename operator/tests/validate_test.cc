#include "operator/validate.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <vector>

#include "ringmaster/contract/trainer_spec.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using testing::makeJob;

kube::Volume namedVolume(const std::string& name) {
  kube::Volume v;
  v.name = name;
  v.empty_dir = kube::EmptyDirVolumeSource{};
  return v;
}

// A volume "data" mounted at `path` (with `sub_path` when given).
void mountData(kube::TrainingJob& job, const std::string& path,
               std::optional<std::string> sub_path = std::nullopt) {
  job.spec.volumes.push_back(namedVolume("data"));
  kube::VolumeMount m;
  m.name = "data";
  m.mount_path = path;
  m.sub_path = std::move(sub_path);
  job.spec.volume_mounts.push_back(m);
}

// spec.trainer with `stages` pipeline stages of `micro` micro-batches.
kube::TrainerSpec pipelineTrainer(int stages, int micro) {
  kube::PipelineSpec pipeline;
  pipeline.stages = stages;
  pipeline.micro_batches = micro;
  kube::TrainerSpec trainer;
  trainer.parallelism.emplace().pipeline = pipeline;
  return trainer;
}

// spec.trainer.parallelism.parameterServer {servers, consistency, staleness}.
void psTrainer(kube::TrainingJob& job, int32_t servers, std::optional<std::string> consistency = {},
               std::optional<int32_t> staleness = {}) {
  kube::ParameterServerSpec ps;
  ps.servers = servers;
  ps.consistency = std::move(consistency);
  ps.staleness = staleness;
  job.spec.trainer.emplace().parallelism.emplace().parameter_server = ps;
}

// spec.roles.ps {replicas}.
void psPods(kube::TrainingJob& job, int32_t replicas) {
  job.spec.roles.emplace().ps.emplace().replicas = replicas;
}

// spec.trainer.pbt: a member of a population of two; `intervals` when given (a program of one's
// own), `path` its one explored field.
void pbtMember(kube::TrainingJob& job, std::optional<int32_t> intervals, const std::string& path) {
  kube::PbtSpec pbt;
  pbt.directory = "/pbt";
  pbt.member = "a";
  pbt.population = {"a", "b"};
  pbt.intervals = intervals;
  kube::SearchParameterSpec p;
  p.path = path;
  p.choices = {0.1, 0.2};
  pbt.parameters = {p};
  if (!job.spec.trainer) job.spec.trainer.emplace();
  job.spec.trainer->pbt = pbt;
}

// spec.elastic {minReplicas: lo, maxReplicas: hi}.
void elastic(kube::TrainingJob& job, int32_t lo, int32_t hi) {
  job.spec.elastic = kube::ElasticPolicy{};
  job.spec.elastic->min_replicas = lo;
  job.spec.elastic->max_replicas = hi;
}

struct BadSpec {
  std::string what;
  std::function<void(kube::TrainingJob&)> mutate;
  std::string field;  // the field the message must name
};

class RejectsBadSpec : public ::testing::TestWithParam<BadSpec> {};

TEST_P(RejectsBadSpec, WithAMessageNamingTheField) {
  kube::TrainingJob job = makeJob();
  GetParam().mutate(job);
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_FALSE(spec.ok()) << GetParam().what << " was accepted";
  EXPECT_EQ(spec.status().code(), core::Code::kInvalidArgument);
  EXPECT_NE(spec.status().message().find(GetParam().field + ":"), std::string::npos)
      << GetParam().what << ": " << spec.status().message();
}

INSTANTIATE_TEST_SUITE_P(Table, RejectsBadSpec,
                         ::testing::Values(BadSpec{"replicas 0",
                                                   [](auto& j) { j.spec.replicas = 0; },
                                                   "spec.replicas"},
                                           BadSpec{"an empty managedBy",
                                                   [](auto& j) { j.spec.managed_by = ""; },
                                                   "spec.managedBy"},
                                           BadSpec{"a managedBy past 63 characters",
                                                   [](auto& j) {
                                                     j.spec.managed_by = std::string(64, 'm');
                                                   },
                                                   "spec.managedBy"},
                                           BadSpec{"replicas -1",
                                                   [](auto& j) { j.spec.replicas = -1; },
                                                   "spec.replicas"},
                                           BadSpec{"replicas missing",
                                                   [](auto& j) { j.spec.replicas.reset(); },
                                                   "spec.replicas"},
                                           BadSpec{"huge replicas",
                                                   [](auto& j) { j.spec.replicas = 100000; },
                                                   "spec.replicas"},
                                           BadSpec{"world size over the limit",
                                                   [](auto& j) {
                                                     j.spec.replicas = 100;
                                                     j.spec.procs_per_replica = 64;
                                                   },
                                                   "spec.replicas"},
                                           BadSpec{"procsPerReplica 0",
                                                   [](auto& j) { j.spec.procs_per_replica = 0; },
                                                   "spec.procsPerReplica"},
                                           BadSpec{"name too long for the pod names",
                                                   [](auto& j) {
                                                     j.metadata.name = std::string(56, 'a');
                                                     j.spec.replicas = 10;
                                                   },
                                                   "metadata.name"},
                                           BadSpec{"name not a DNS label",
                                                   [](auto& j) { j.metadata.name = "Fmnist_1"; },
                                                   "metadata.name"},
                                           BadSpec{"unknown backend",
                                                   [](auto& j) { j.spec.backend = "rccl"; },
                                                   "spec.backend"},
                                           BadSpec{"three pipeline stages on two ranks",
                                                   [](auto& j) {
                                                     j.spec.trainer = pipelineTrainer(3, 4);
                                                   },
                                                   "spec.replicas"},
                                           BadSpec{"two stages on three ranks",
                                                   [](auto& j) {
                                                     j.spec.replicas = 3;
                                                     j.spec.trainer = pipelineTrainer(2, 4);
                                                   },
                                                   "spec.replicas"},
                                           BadSpec{"replicas of a pipeline under mpirun",
                                                   [](auto& j) {
                                                     j.spec.replicas = 4;
                                                     j.spec.launcher = "mpi";
                                                     j.spec.trainer = pipelineTrainer(2, 4);
                                                   },
                                                   "spec.launcher"},
                                           BadSpec{"a PipeDream pipeline over nccl",
                                                   [](auto& j) {
                                                     j.spec.trainer = pipelineTrainer(2, 4);
                                                     j.spec.trainer->parallelism->pipeline
                                                         ->schedule = "pipedream";
                                                     j.spec.backend = "nccl";
                                                   },
                                                   "spec.backend"},
                                           BadSpec{"tensor ranks over nccl",
                                                   [](auto& j) {
                                                     j.spec.trainer.emplace()
                                                         .parallelism.emplace()
                                                         .tensor = 2;
                                                     j.spec.backend = "nccl";
                                                   },
                                                   "spec.backend"},
                                           BadSpec{"tcp with the gradients on the GPU",
                                                   [](auto& j) {
                                                     j.spec.trainer.emplace().device = "cuda";
                                                     j.spec.backend = "tcp";
                                                   },
                                                   "spec.backend"},
                                           BadSpec{"gloo with the gradients on the GPU",
                                                   [](auto& j) {
                                                     j.spec.trainer.emplace().device = "cuda";
                                                     j.spec.backend = "gloo";
                                                   },
                                                   "spec.backend"},
                                           BadSpec{"two tensor ranks on three",
                [](auto& j) {
                  j.spec.replicas = 3;
                  j.spec.trainer.emplace().parallelism.emplace().tensor = 2;
                },
                "spec.replicas"},
        BadSpec{"more pipeline stages than layers",
                                                   [](auto& j) {
                                                     j.spec.replicas = 4;
                                                     j.spec.trainer = pipelineTrainer(4, 4);
                                                   },
                                                   "spec.trainer.parallelism.pipeline"},
                                           BadSpec{"nccl under the mpi launcher",
                                                   [](auto& j) {
                                                     j.spec.launcher = "mpi";
                                                     j.spec.backend = "nccl";
                                                   },
                                                   "spec.backend"},
                                           BadSpec{"a program's pbt member without intervals",
                                                   [](auto& j) {
                                                     j.spec.replicas = 1;
                                                     j.spec.command = {"python3", "train.py"};
                                                     pbtMember(j, std::nullopt, "env.LR");
                                                   },
                                                   "spec.trainer.pbt.intervals"},
                                           BadSpec{"intervals for the built-in trainer",
                                                   [](auto& j) {
                                                     j.spec.replicas = 1;
                                                     pbtMember(j, 3, "optimizer.learningRate");
                                                   },
                                                   "spec.trainer.pbt.intervals"},
                                           BadSpec{"a program's pbt member exploring a "
                                                   "trainer field",
                                                   [](auto& j) {
                                                     j.spec.replicas = 1;
                                                     j.spec.command = {"python3", "train.py"};
                                                     pbtMember(j, 3, "optimizer.learningRate");
                                                   },
                                                   "spec.trainer.pbt.parameters[0].path"},
                                           BadSpec{"a program's pbt member on two pods",
                                                   [](auto& j) {
                                                     j.spec.replicas = 2;
                                                     j.spec.command = {"python3", "train.py"};
                                                     pbtMember(j, 3, "env.LR");
                                                   },
                                                   "spec.trainer.pbt"},
                                           BadSpec{"0 parameter servers",
                                                   [](auto& j) { psTrainer(j, 0); },
                                                   "spec.trainer.parallelism.parameterServer"
                                                   ".servers"},
                                           BadSpec{"parameter servers without workers",
                                                   [](auto& j) { psTrainer(j, 2); },
                                                   "spec.trainer.parallelism.parameterServer"},
                                           BadSpec{"a negative staleness bound",
                                                   [](auto& j) {
                                                     psTrainer(j, 1, "bounded", -1);
                                                   },
                                                   "spec.trainer.parallelism.parameterServer"
                                                   ".staleness"},
                                           BadSpec{"a staleness bound under sync",
                                                   [](auto& j) { psTrainer(j, 1, "sync", 4); },
                                                   "spec.trainer.parallelism.parameterServer"},
                                           BadSpec{"an unknown consistency",
                                                   [](auto& j) { psTrainer(j, 1, "eventual"); },
                                                   "spec.trainer.parallelism.parameterServer"
                                                   ".consistency"},
                                           BadSpec{"parameter servers under mpirun",
                                                   [](auto& j) {
                                                     psTrainer(j, 1);
                                                     j.spec.launcher = "mpi";
                                                   },
                                                   "spec.launcher"},
                                           BadSpec{"an allreduce threshold for parameter servers",
                                                   [](auto& j) {
                                                     psTrainer(j, 1);
                                                     j.spec.trainer->tcp_doubling_max_kb = 64;
                                                   },
                                                   "spec.trainer.parallelism.parameterServer"},
                                           BadSpec{"parameter servers on the GPU",
                                                   [](auto& j) {
                                                     psTrainer(j, 1);
                                                     j.spec.trainer->device = "cuda";
                                                   },
                                                   "spec.trainer.parallelism.parameterServer"},
                                           BadSpec{"0 ps pods",
                                                   [](auto& j) { psPods(j, 0); },
                                                   "spec.roles.ps.replicas"},
                                           BadSpec{"ps pods without a count",
                                                   [](auto& j) {
                                                     j.spec.roles.emplace().ps.emplace();
                                                   },
                                                   "spec.roles.ps.replicas"},
                                           BadSpec{"ps pods under mpirun",
                                                   [](auto& j) {
                                                     psPods(j, 1);
                                                     j.spec.launcher = "mpi";
                                                   },
                                                   "spec.roles.ps"},
                                           BadSpec{"ps pods in an elastic sync job",
                                                   [](auto& j) {
                                                     psPods(j, 1);
                                                     elastic(j, 1, 2);
                                                   },
                                                   "spec.trainer.parallelism.parameterServer"
                                                   ".consistency"},
                                           BadSpec{"ps pods in an elastic job of staleness 0",
                                                   [](auto& j) {
                                                     psTrainer(j, 1, "bounded", 0);
                                                     psPods(j, 1);
                                                     elastic(j, 1, 2);
                                                   },
                                                   "spec.trainer.parallelism.parameterServer"
                                                   ".consistency"},
                                           BadSpec{"a program's ps pods in an elastic job",
                                                   [](auto& j) {
                                                     j.spec.trainer.reset();
                                                     j.spec.command = {"python3", "tf.py"};
                                                     psPods(j, 1);
                                                     elastic(j, 1, 2);
                                                   },
                                                   "spec.elastic"},
                                           BadSpec{"servers among the workers in an elastic job",
                                                   [](auto& j) {
                                                     j.spec.replicas = 3;
                                                     psTrainer(j, 1, "async");
                                                     elastic(j, 2, 3);
                                                   },
                                                   "spec.elastic"},
                                           BadSpec{"servers that are not the ps pods' ranks",
                                                   [](auto& j) {
                                                     psTrainer(j, 2);
                                                     psPods(j, 1);
                                                   },
                                                   "spec.trainer.parallelism.parameterServer"
                                                   ".servers"},
                                           BadSpec{"an evaluator for the built-in trainer",
                                                   [](auto& j) {
                                                     j.spec.roles.emplace().evaluator.emplace()
                                                         .replicas = 1;
                                                   },
                                                   "spec.roles.evaluator"},
                                           BadSpec{"two evaluators",
                                                   [](auto& j) {
                                                     j.spec.command = {"python3", "tf.py"};
                                                     j.spec.roles.emplace().evaluator.emplace()
                                                         .replicas = 2;
                                                   },
                                                   "spec.roles.evaluator.replicas"},
                                           BadSpec{"an evaluator in an elastic job",
                                                   [](auto& j) {
                                                     j.spec.command = {"python3", "tf.py"};
                                                     j.spec.roles.emplace().evaluator.emplace()
                                                         .replicas = 1;
                                                     elastic(j, 1, 2);
                                                   },
                                                   "spec.roles.evaluator"},
                                           BadSpec{"an evaluator under mpirun",
                                                   [](auto& j) {
                                                     j.spec.command = {"python3", "tf.py"};
                                                     j.spec.launcher = "mpi";
                                                     j.spec.roles.emplace().evaluator.emplace()
                                                         .replicas = 1;
                                                   },
                                                   "spec.roles.evaluator"},
                                           BadSpec{"a chief for the built-in trainer",
                                                   [](auto& j) {
                                                     j.spec.roles.emplace().chief.emplace()
                                                         .replicas = 1;
                                                   },
                                                   "spec.roles.chief"},
                                           BadSpec{"two chiefs",
                                                   [](auto& j) {
                                                     j.spec.command = {"python3", "tf.py"};
                                                     j.spec.roles.emplace().chief.emplace()
                                                         .replicas = 2;
                                                   },
                                                   "spec.roles.chief.replicas"},
                                           BadSpec{"a chief of two processes",
                                                   [](auto& j) {
                                                     j.spec.command = {"python3", "tf.py"};
                                                     j.spec.procs_per_replica = 2;
                                                     j.spec.roles.emplace().chief.emplace()
                                                         .replicas = 1;
                                                   },
                                                   "spec.roles.chief"},
                                           BadSpec{"an unknown role",
                                                   [](auto& j) {
                                                     j.spec.roles.emplace().extra = {
                                                         {"coordinator", {{"replicas", 1}}}};
                                                   },
                                                   "spec.roles.coordinator"},
                                           BadSpec{"an unknown field of the ps role",
                                                   [](auto& j) {
                                                     psPods(j, 1);
                                                     j.spec.roles->ps->extra = {{"replica", 1}};
                                                   },
                                                   "spec.roles.ps.replica"},
                                           BadSpec{"a ps template that sets the worker's image",
                                                   [](auto& j) {
                                                     psPods(j, 1);
                                                     kube::Container worker;
                                                     worker.name = "worker";
                                                     worker.image = "other:1";
                                                     j.spec.roles->ps->pod_template.emplace()
                                                         .spec.containers.push_back(worker);
                                                   },
                                                   "spec.roles.ps.template.spec.containers[0]"
                                                   ".image"},
                                           BadSpec{"ps resources beside a ps template's",
                                                   [](auto& j) {
                                                     psPods(j, 1);
                                                     kube::Container worker;
                                                     worker.name = "worker";
                                                     worker.resources.emplace();
                                                     j.spec.roles->ps->pod_template.emplace()
                                                         .spec.containers.push_back(worker);
                                                     j.spec.roles->ps->resources.emplace();
                                                   },
                                                   "spec.roles.ps.template.spec.containers[0]"
                                                   ".resources"},
                                           BadSpec{"a ps pod name past 63 characters",
                                                   [](auto& j) {
                                                     j.metadata.name = std::string(57, 'a');
                                                     psPods(j, 10);
                                                   },
                                                   "metadata.name"},
                                           BadSpec{"ps pods past the world limit",
                                                   [](auto& j) {
                                                     j.spec.replicas = 4000;
                                                     psPods(j, 97);
                                                   },
                                                   "spec.replicas"},
                                           BadSpec{"unknown launcher",
                                                   [](auto& j) { j.spec.launcher = "ssh"; },
                                                   "spec.launcher"},
                                           BadSpec{"missing image, no default",
                                                   [](auto& j) { j.spec.image.reset(); },
                                                   "spec.image"},
                                           BadSpec{
                                               "negative activeDeadlineSeconds",
                                               [](auto& j) { j.spec.active_deadline_seconds = -5; },
                                               "spec.activeDeadlineSeconds"},
                                           BadSpec{"negative ttlSecondsAfterFinished",
                                                   [](auto& j) {
                                                     j.spec.ttl_seconds_after_finished = -1;
                                                   },
                                                   "spec.ttlSecondsAfterFinished"},
                                           BadSpec{"negative backoffLimit",
                                                   [](auto& j) { j.spec.backoff_limit = -1; },
                                                   "spec.backoffLimit"},
                                           BadSpec{"elastic minReplicas 0",
                                                   [](auto& j) { elastic(j, 0, 2); },
                                                   "spec.elastic.minReplicas"},
                                           BadSpec{"elastic minReplicas above replicas",
                                                   [](auto& j) { elastic(j, 3, 4); },
                                                   "spec.elastic"},
                                           BadSpec{"elastic maxReplicas below replicas",
                                                   [](auto& j) { elastic(j, 1, 1); },
                                                   "spec.elastic"},
                                           BadSpec{"elastic maxReplicas past the world bound",
                                                   [](auto& j) { elastic(j, 1, 5000); },
                                                   "spec.elastic.maxReplicas"},
                                           BadSpec{"elastic under mpirun",
                                                   [](auto& j) {
                                                     elastic(j, 1, 2);
                                                     j.spec.launcher = "mpi";
                                                   },
                                                   "spec.elastic"},
                                           BadSpec{"elastic with a pipeline",
                                                   [](auto& j) {
                                                     elastic(j, 1, 2);
                                                     j.spec.trainer = pipelineTrainer(2, 2);
                                                   },
                                                   "spec.elastic"},
                                           BadSpec{"elastic with a PodGroup scheduler",
                                                   [](auto& j) {
                                                     elastic(j, 1, 2);
                                                     j.spec.scheduling_policy =
                                                         kube::SchedulingPolicy{};
                                                     j.spec.scheduling_policy->scheduler_name =
                                                         "volcano";
                                                   },
                                                   "spec.elastic"},
                                           BadSpec{"elastic in a Kueue queue",
                                                   [](auto& j) {
                                                     elastic(j, 1, 2);
                                                     j.metadata.labels["kueue.x-k8s.io/queue-name"] =
                                                         "team";
                                                   },
                                                   "spec.elastic"},
                                           BadSpec{"elastic without checkpoints",
                                                   [](auto& j) {
                                                     elastic(j, 1, 2);
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                   },
                                                   "spec.trainer.checkpoint.path"},
                                           BadSpec{"elastic global batch that 3 ranks cannot split",
                                                   [](auto& j) {
                                                     elastic(j, 1, 3);
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->global_batch_size = 128;
                                                   },
                                                   "spec.trainer.globalBatchSize"},
                                           BadSpec{"zero scheduleTimeoutSeconds",
                                                   [](auto& j) {
                                                     j.spec.scheduling_policy =
                                                         kube::SchedulingPolicy{};
                                                     j.spec.scheduling_policy
                                                         ->schedule_timeout_seconds = 0;
                                                   },
                                                   "spec.schedulingPolicy.scheduleTimeoutSeconds"},
                                           BadSpec{
                                               "unknown restartPolicy",
                                               [](auto& j) { j.spec.restart_policy = "Always"; },
                                               "spec.restartPolicy"},
                                           BadSpec{
                                               "unknown cleanPodPolicy",
                                               [](auto& j) { j.spec.clean_pod_policy = "Some"; },
                                               "spec.cleanPodPolicy"},
                                           BadSpec{"unknown spec field",
                                                   [](auto& j) { j.spec.extra["gpus"] = 4; },
                                                   "spec.gpus"},
                                           BadSpec{"unknown trainer field",
                                                   [](auto& j) {
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->extra["lr"] = 0.1;
                                                   },
                                                   "spec.trainer.lr"},
                                           BadSpec{"trainer epochs 0",
                                                   [](auto& j) {
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->epochs = 0;
                                                   },
                                                   "spec.trainer.epochs"},
                                           BadSpec{"fp16 precision",
                                                   [](auto& j) {
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->precision = "fp16";
                                                   },
                                                   "spec.trainer.precision"},
                                           BadSpec{"bf16 on the cpu",
                                                   [](auto& j) {
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->device = "cpu";
                                                     j.spec.trainer->precision = "bf16";
                                                   },
                                                   "spec.trainer.precision"},
                                           BadSpec{"unknown device",
                                                   [](auto& j) {
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->device = "gpu";
                                                   },
                                                   "spec.trainer.device"},
                                           BadSpec{"reserved env",
                                                   [](auto& j) {
                                                     j.spec.env.push_back(
                                                         kube::EnvVar{"WORLD_SIZE", "3", {}, {}});
                                                   },
                                                   "spec.env[0].name"},
                                           BadSpec{"mount of an unknown volume",
                                                   [](auto& j) {
                                                     kube::VolumeMount m;
                                                     m.name = "ckpt";
                                                     m.mount_path = "/ckpt";
                                                     j.spec.volume_mounts.push_back(m);
                                                   },
                                                   "spec.volumeMounts[0].name"},
                                           BadSpec{"volume named like the operator's own",
                                                   [](auto& j) {
                                                     kube::Volume v;
                                                     v.name = "config";
                                                     j.spec.volumes.push_back(v);
                                                   },
                                                   "spec.volumes[0].name"},
                                           BadSpec{"volume name climbing out of its directory",
                                                   [](auto& j) {
                                                     j.spec.volumes.push_back(
                                                         namedVolume("../../etc"));
                                                   },
                                                   "spec.volumes[0].name"},
                                           BadSpec{"volume name with a slash",
                                                   [](auto& j) {
                                                     j.spec.volumes.push_back(
                                                         namedVolume("data/x"));
                                                   },
                                                   "spec.volumes[0].name"},
                                           BadSpec{"volume name with dots",
                                                   [](auto& j) {
                                                     j.spec.volumes.push_back(
                                                         namedVolume("data.set"));
                                                   },
                                                   "spec.volumes[0].name"},
                                           BadSpec{"mountPath with a .. segment",
                                                   [](auto& j) { mountData(j, "/data/../etc"); },
                                                   "spec.volumeMounts[0].mountPath"},
                                           BadSpec{"absolute subPath",
                                                   [](auto& j) { mountData(j, "/data", "/etc"); },
                                                   "spec.volumeMounts[0].subPath"},
                                           BadSpec{
                                               "subPath with a .. segment",
                                               [](auto& j) { mountData(j, "/data", "a/../../b"); },
                                               "spec.volumeMounts[0].subPath"},
                                           BadSpec{"relative checkpoint path climbing out",
                                                   [](auto& j) {
                                                     j.spec.trainer = kube::TrainerSpec{};
                                                     j.spec.trainer->checkpoint =
                                                         kube::CheckpointSpec{};
                                                     j.spec.trainer->checkpoint->path =
                                                         "../../ckpt";
                                                   },
                                                   "spec.trainer.checkpoint.path"}),
                         [](const ::testing::TestParamInfo<BadSpec>& info) {
                           std::string name;
                           for (char c : info.param.what)
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(Validate, VolumeNameErrorNamesTheFieldWithKubernetesWording) {
  kube::TrainingJob job = makeJob();
  job.spec.volumes = {namedVolume("data"), namedVolume("ckpt"), namedVolume("../x")};
  std::vector<FieldError> errors = validate(testing::defaulted(job));
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(describe(errors),
            "spec.volumes[2].name: Invalid value: \"../x\": a lowercase RFC 1123 label must "
            "consist of lower case alphanumeric characters or '-', and must start and end with an "
            "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
}

TEST(Validate, SafeVolumesMountsAndCheckpointPathsAreAccepted) {
  kube::TrainingJob job = makeJob();
  mountData(job, "/data/./set", "fashion-mnist/v1");
  job.spec.volumes.push_back(namedVolume(std::string(63, 'v')));
  job.spec.trainer = kube::TrainerSpec{};
  job.spec.trainer->checkpoint = kube::CheckpointSpec{};
  job.spec.trainer->checkpoint->path = "ckpt/..hidden/run...1";
  std::vector<FieldError> errors = validate(testing::defaulted(job));
  EXPECT_TRUE(errors.empty()) << describe(errors);
}

TEST(Validate, AcceptsTheDesignExampleAndFillsDefaults) {
  kube::TrainingJob job = makeJob();
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();
  EXPECT_EQ(spec->procs_per_replica, 1);
  EXPECT_EQ(spec->launcher, "native");
  EXPECT_EQ(spec->backend, "auto");
  EXPECT_EQ(spec->restart_policy, "OnFailure");
  EXPECT_EQ(spec->backoff_limit, 3);
  EXPECT_EQ(spec->clean_pod_policy, "Running");
  EXPECT_EQ(spec->suspend, false);
  EXPECT_EQ(spec->scheduling_policy->schedule_timeout_seconds, 300);
  EXPECT_TRUE(spec->trainer.has_value());
}

// GPU pipeline stages pass activations over NCCL: a split model may ask for it, with device
// cuda or auto (nccl puts auto on the GPU).
TEST(Validate, APipelineOverNcclIsAccepted) {
  for (const char* device : {"cuda", "auto"}) {
    kube::TrainingJob job = makeJob("pipe", 1);
    job.spec.procs_per_replica = 2;
    job.spec.trainer = pipelineTrainer(2, 4);
    job.spec.trainer->device = device;
    job.spec.backend = "nccl";
    core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
    EXPECT_TRUE(spec.ok()) << device << ": " << spec.status().toString();
  }
}

TEST(Validate, ParameterServersBesideWorkersAreAcceptedAndDefaulted) {
  struct Case {
    std::optional<std::string> consistency;
    std::optional<int32_t> staleness;
    contract::PsConsistency want;
    int32_t want_staleness;
  };
  for (const Case& c : {Case{{}, {}, contract::PsConsistency::kSync, 0},
                        Case{"async", {}, contract::PsConsistency::kAsync, 0},
                        Case{"bounded", {}, contract::PsConsistency::kBounded, 4},
                        Case{"bounded", 0, contract::PsConsistency::kBounded, 0},
                        Case{"bounded", 16, contract::PsConsistency::kBounded, 16}}) {
    kube::TrainingJob job = makeJob("ps", 3);
    psTrainer(job, 1, c.consistency, c.staleness);
    core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
    ASSERT_TRUE(spec.ok()) << c.consistency.value_or("(unset)") << ": " << spec.status().toString();
    const contract::TrainerSettings settings = contract::trainerSettings(*spec->trainer);
    EXPECT_EQ(settings.parameter_servers.servers, 1);
    EXPECT_EQ(settings.parameter_servers.consistency, c.want);
    EXPECT_EQ(settings.parameter_servers.staleness, c.want_staleness);
  }
}

// spec.roles.ps: the servers are every rank of the ps pods, after the workers; the built-in
// trainer's server count is defaulted from them.
TEST(Validate, PsPodsOfTheirOwnAreAcceptedAndServeEveryRankOnThem) {
  struct Case {
    int32_t workers, ps, procs;
    std::optional<int32_t> servers;  // given in spec.trainer
  };
  for (const Case& c : {Case{2, 1, 1, {}}, Case{2, 2, 1, {}}, Case{3, 1, 2, {}}, Case{2, 1, 1, 1},
                        Case{1, 2, 2, 4}}) {
    kube::TrainingJob job = makeJob("ps", c.workers);
    job.spec.procs_per_replica = c.procs;
    kube::ParameterServerSpec ps;
    ps.servers = c.servers;
    ps.consistency = "bounded";
    job.spec.trainer.emplace().parallelism.emplace().parameter_server = ps;
    psPods(job, c.ps);
    core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
    ASSERT_TRUE(spec.ok()) << c.workers << "+" << c.ps << ": " << spec.status().toString();
    EXPECT_EQ(contract::trainerSettings(*spec->trainer).parameter_servers.servers, c.ps * c.procs);
    const JobSettings s = settingsOf(*spec);
    EXPECT_EQ(s.gangPods(), c.workers + c.ps);
    EXPECT_EQ(s.worldSize(), (c.workers + c.ps) * c.procs);
    EXPECT_EQ(s.parameter_servers, c.ps * c.procs);
    for (int i = 0; i < s.gangPods(); ++i) {
      const bool server = i >= c.workers;
      EXPECT_EQ(s.roleOf(i), server ? Role::kPs : Role::kWorker) << "pod " << i;
      EXPECT_EQ(s.indexInRole(i), server ? i - c.workers : i) << "pod " << i;
      EXPECT_EQ(s.replacedAlone(i), !server && i > 0) << "pod " << i;
    }
  }
  // A user's program with ps pods: every rank on them is a server, no trainer spec needed.
  kube::TrainingJob job = makeJob("tf", 2);
  job.spec.trainer.reset();
  job.spec.command = {"python3", "train.py"};
  psPods(job, 1);
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();
  EXPECT_FALSE(spec->trainer.has_value());
  EXPECT_EQ(settingsOf(*spec).parameter_servers, 1);
}

// A user program's chief and evaluator: one pod each after the ps pods, the evaluator's last;
// the evaluator's failure is its own.
TEST(Validate, AChiefAndAnEvaluatorComeAfterTheServersInThatOrder) {
  kube::TrainingJob job = makeJob("tf", 2);
  job.spec.trainer.reset();
  job.spec.command = {"python3", "train.py"};
  psPods(job, 1);
  job.spec.roles->chief.emplace().replicas = 1;
  job.spec.roles->evaluator.emplace().replicas = 1;
  kube::ResourceRequirements small;
  small.limits["cpu"] = kube::Quantity(1);
  job.spec.roles->evaluator->resources = small;
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();
  const JobSettings s = settingsOf(*spec);
  EXPECT_EQ(s.gangPods(), 5);
  EXPECT_EQ(s.worldSize(), 5);
  EXPECT_EQ(s.chiefPod(), 3);
  EXPECT_EQ(s.evaluatorPod(), 4);
  const Role roles[] = {Role::kWorker, Role::kWorker, Role::kPs, Role::kChief, Role::kEvaluator};
  const bool alone[] = {false, true, false, false, true};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(s.roleOf(i), roles[i]) << "pod " << i;
    EXPECT_EQ(s.indexInRole(i), i < 2 ? i : 0) << "pod " << i;
    EXPECT_EQ(s.replacedAlone(i), alone[i]) << "pod " << i;
  }
  EXPECT_STREQ(name(Role::kEvaluator), "evaluator");
  EXPECT_EQ(specForRole(*spec, Role::kEvaluator).resources, small);
  EXPECT_EQ(specForRole(*spec, Role::kChief).resources, spec->resources);
  // Beside plain workers too: the evaluator is the second pod, replaced alone.
  job.spec.roles.reset();
  job.spec.roles.emplace().evaluator.emplace().replicas = 1;
  spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();
  const JobSettings plain = settingsOf(*spec);
  EXPECT_EQ(plain.evaluatorPod(), 2);
  EXPECT_EQ(plain.chiefPod(), -1);
  EXPECT_FALSE(plain.replacedAlone(1));
  EXPECT_TRUE(plain.replacedAlone(2));
}

// Servers in pods of their own let the worker count follow spec.replicas: the workers keep
// maxReplicas slots before the ps pods, so that no rank moves when it changes.
TEST(Validate, AnElasticJobWithPsPodsScalesItsWorkersInSlotsOfTheirOwn) {
  kube::TrainingJob job = makeJob("ps", 2);
  psTrainer(job, 1, "async");
  job.spec.trainer->parallelism->parameter_server->servers.reset();
  psPods(job, 1);
  elastic(job, 1, 4);
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();  // no checkpoint needed: nothing restarts
  EXPECT_FALSE(spec->trainer->global_batch_size.has_value());  // each worker trains batchSize
  const JobSettings s = settingsOf(*spec);
  EXPECT_TRUE(s.scalesWorkers());
  EXPECT_EQ(s.workerSlots(), 4);
  EXPECT_EQ(s.gangPods(), 5);
  EXPECT_EQ(s.worldSize(), 5);
  EXPECT_EQ(s.podSlots(), 5);
  EXPECT_EQ(s.parameter_servers, 1);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(s.roleOf(i), i < 4 ? Role::kWorker : Role::kPs) << "pod " << i;
    EXPECT_EQ(s.slotFilled(i), i < 2 || i == 4) << "pod " << i;
    EXPECT_EQ(s.replacedAlone(i), i > 0 && i < 4) << "pod " << i;
  }
  EXPECT_EQ(s.indexInRole(4), 0);
  // The count is spec.replicas, whatever the status says.
  kube::TrainingJobStatus status;
  status.current_replicas = 3;
  EXPECT_EQ(currentReplicas(s, status), 2);
  // A job that does not scale this way keeps its positions.
  kube::TrainingJob fixed = makeJob("ps", 2);
  psPods(fixed, 1);
  const JobSettings f = settingsOf(withDefaults(fixed.spec, ValidateOptions{}));
  EXPECT_FALSE(f.scalesWorkers());
  EXPECT_EQ(f.roleOf(2), Role::kPs);
  EXPECT_TRUE(f.slotFilled(1));
}

// The ps pods' own resources and template: the spec each role's pods are built from.
TEST(Validate, EachRoleIsBuiltFromItsOwnResourcesAndTemplateWhereItGivesThem) {
  kube::TrainingJob job = makeJob("ps", 2);
  kube::ResourceRequirements workers;
  workers.limits["cpu"] = kube::Quantity(2);
  job.spec.resources = workers;
  job.spec.pod_template.emplace().spec.node_selector["pool"] = "gpu";
  psPods(job, 1);
  EXPECT_EQ(specForRole(job.spec, Role::kPs), job.spec);  // nothing of its own yet
  kube::ResourceRequirements servers;
  servers.requests["memory"] = *kube::Quantity::parse("4Gi");
  job.spec.roles->ps->resources = servers;
  kube::TrainingJobSpec ps = specForRole(job.spec, Role::kPs);
  EXPECT_EQ(ps.resources, servers);
  EXPECT_EQ(ps.pod_template, job.spec.pod_template);  // still the workers'
  job.spec.roles->ps->pod_template.emplace().spec.node_selector["pool"] = "cpu";
  ps = specForRole(job.spec, Role::kPs);
  EXPECT_EQ(ps.pod_template->spec.node_selector.at("pool"), "cpu");
  EXPECT_EQ(specForRole(job.spec, Role::kWorker), job.spec);
  EXPECT_TRUE(defaultAndValidate(job, ValidateOptions{}).ok());
}

TEST(Validate, WholeReplicasOfAPipelineAreAccepted) {
  for (int replicas : {1, 2}) {
    kube::TrainingJob job = makeJob("pipe", replicas);
    job.spec.procs_per_replica = 2;
    job.spec.trainer = pipelineTrainer(2, 4);
    core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
    EXPECT_TRUE(spec.ok()) << replicas << " replicas: " << spec.status().toString();
  }
}

// An elastic job keeps its global batch: batchSize is read at the world it starts at.
TEST(Validate, ElasticJobKeepsTheGlobalBatchOfItsFirstWorld) {
  kube::TrainingJob job = makeJob("fmnist", 4);
  job.spec.elastic = kube::ElasticPolicy{};
  job.spec.elastic->min_replicas = 2;  // worlds 2, 3, 4: 30 x 4 = 120 splits among each
  job.spec.trainer = kube::TrainerSpec{};
  job.spec.trainer->batch_size = 30;
  job.spec.trainer->checkpoint.emplace().path = "/ckpt";
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->trainer->global_batch_size, 120);
  EXPECT_FALSE(spec->trainer->batch_size.has_value());
  EXPECT_EQ(spec->elastic->max_replicas, 4);  // defaults to replicas
  const JobSettings settings = settingsOf(*spec);
  EXPECT_TRUE(settings.elastic);
  EXPECT_EQ(settings.min_replicas, 2);
  EXPECT_EQ(settings.podSlots(), 4);

  job.spec.trainer->batch_size = 32;  // 128 samples: 3 ranks cannot split them
  core::Result<kube::TrainingJobSpec> bad = defaultAndValidate(job, ValidateOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("choose a multiple of 12"), std::string::npos)
      << bad.status().message();
}

TEST(Validate, MissingImageTakesTheOperatorDefault) {
  kube::TrainingJob job = makeJob();
  job.spec.image.reset();
  core::Result<kube::TrainingJobSpec> spec =
      defaultAndValidate(job, ValidateOptions{"ringmaster/trainer:dev"});
  ASSERT_TRUE(spec.ok()) << spec.status().toString();
  EXPECT_EQ(spec->image, "ringmaster/trainer:dev");
}

TEST(Validate, LongestPodNameOfExactly63CharactersIsAccepted) {
  kube::TrainingJob job = makeJob(std::string(54, 'a'), 10);  // + "-worker-9" = 63
  EXPECT_TRUE(defaultAndValidate(job, ValidateOptions{}).ok());
  job.spec.replicas = 11;  // "-worker-10" = 64
  EXPECT_FALSE(defaultAndValidate(job, ValidateOptions{}).ok());
}

TEST(Validate, ReportsEveryErrorNotJustTheFirst) {
  kube::TrainingJob job = makeJob();
  job.spec.replicas = 0;
  job.spec.backend = "rccl";
  std::vector<FieldError> errors = validate(testing::defaulted(job));
  ASSERT_EQ(errors.size(), 2u) << describe(errors);
  EXPECT_EQ(errors[0].field, "spec.replicas");
  EXPECT_EQ(errors[1].field, "spec.backend");
}

kube::Volume hostPathVolume() {
  kube::Volume v;
  v.name = "host";
  v.host_path = kube::HostPathVolumeSource{};
  v.host_path->path = "/etc";
  return v;
}

kube::EnvVar envFrom(const std::string& name, const nlohmann::json& value_from) {
  kube::EnvVar e;
  e.name = name;
  e.value_from = *kube::decode<kube::EnvVarSource>(value_from);
  return e;
}

void setModel(kube::TrainingJob& j, const std::string& type, std::vector<int32_t> hidden,
              std::vector<int32_t> channels = {}, std::optional<int32_t> cnn_hidden = {}) {
  j.spec.trainer = kube::TrainerSpec{};
  j.spec.trainer->model = kube::ModelSpec{};
  j.spec.trainer->model->type = type;
  j.spec.trainer->model->hidden = std::move(hidden);
  j.spec.trainer->model->channels = std::move(channels);
  j.spec.trainer->model->cnn_hidden = cnn_hidden;
}

void setMetricsPort(kube::TrainingJob& j, int32_t port) {
  j.spec.trainer = kube::TrainerSpec{};
  j.spec.trainer->metrics_port = port;
}

// What a job could otherwise put into the pods the operator creates for it.
INSTANTIATE_TEST_SUITE_P(
    Security, RejectsBadSpec,
    ::testing::Values(
        BadSpec{"hostPath volume without --allow-host-path",
                [](auto& j) { j.spec.volumes.push_back(hostPathVolume()); },
                "spec.volumes[0].hostPath"},
        BadSpec{"env from an unknown source",
                [](auto& j) {
                  j.spec.env.push_back(
                      envFrom("X", {{"fileKeyRef", {{"path", "/etc/shadow"}, {"key", "k"}}}}));
                },
                "spec.env[0].valueFrom.fileKeyRef"},
        BadSpec{"env from two sources",
                [](auto& j) {
                  j.spec.env.push_back(
                      envFrom("X", {{"fieldRef", {{"fieldPath", "metadata.name"}}},
                                    {"configMapKeyRef", {{"name", "cm"}, {"key", "k"}}}}));
                },
                "spec.env[0].valueFrom"},
        BadSpec{"env with a value and valueFrom",
                [](auto& j) {
                  kube::EnvVar e = envFrom("X", {{"fieldRef", {{"fieldPath", "metadata.name"}}}});
                  e.value = "v";
                  j.spec.env.push_back(e);
                },
                "spec.env[0].valueFrom"},
        BadSpec{"MPI env value with a line break (sshd's SetEnv is one line)",
                [](auto& j) {
                  j.spec.launcher = "mpi";
                  j.spec.env.push_back(kube::EnvVar{"GREETING", "two\nlines", {}, {}});
                },
                "spec.env[0].value"},
        BadSpec{"metricsPort on the launcher's health port",
                [](auto& j) { setMetricsPort(j, 8080); }, "spec.trainer.metricsPort"},
        BadSpec{"metricsPort on the rendezvous port", [](auto& j) { setMetricsPort(j, 29510); },
                "spec.trainer.metricsPort"},
        BadSpec{"metricsPort on MASTER_PORT", [](auto& j) { setMetricsPort(j, 29500); },
                "spec.trainer.metricsPort"},
        BadSpec{"metricsPort on the MPI sshd port", [](auto& j) { setMetricsPort(j, 2222); },
                "spec.trainer.metricsPort"},
        BadSpec{"MLP of ~17 GB a rank",
                [](auto& j) {
                  setModel(j, "mlp", {65536, 65536});
                },
                "spec.trainer.model"},
        BadSpec{"CNN with a huge fully connected layer",
                [](auto& j) {
                  setModel(j, "cnn", {}, {1024, 1024}, 1 << 30);
                },
                "spec.trainer.model"},
        BadSpec{"volume named like the worker's scratch volume",
                [](auto& j) { j.spec.volumes.push_back(namedVolume("ringmaster-tmp")); },
                "spec.volumes[0].name"},
        BadSpec{"mount over the worker's TMPDIR",
                [](auto& j) { mountData(j, "/var/tmp/ringmaster"); },
                "spec.volumeMounts[0].mountPath"}));

TEST(Validate, HostPathIsAcceptedOnlyWhenTheClusterAdminAllowsIt) {
  kube::TrainingJob job = makeJob();
  job.spec.volumes.push_back(hostPathVolume());
  EXPECT_FALSE(defaultAndValidate(job, ValidateOptions{}).ok());
  ValidateOptions allow;
  allow.allow_host_path = true;
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, allow);
  EXPECT_TRUE(spec.ok()) << spec.status().toString();
}

TEST(Validate, EnvFromTheJobsOwnPodAndNamespaceIsAccepted) {
  kube::TrainingJob job = makeJob();
  job.spec.launcher = "mpi";
  job.spec.env = {
      envFrom("A", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}),
      envFrom("B", {{"resourceFieldRef", {{"resource", "limits.cpu"}}}}),
      envFrom("C", {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}}}),
      envFrom("D", {{"configMapKeyRef", {{"name", "cm"}, {"key", "k"}}}}),
      kube::EnvVar{"E", "plain /path with spaces=ok", {}, {}},
  };
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  EXPECT_TRUE(spec.ok()) << spec.status().toString();
  // Backslashes and quotes are fine in both modes (the launcher escapes them for sshd).
  kube::TrainingJob native = makeJob();
  native.spec.env = {kube::EnvVar{"DATA_DIR", "C:\\", {}, {}},
                     kube::EnvVar{"GREETING", "say \"hi\"", {}, {}}};
  EXPECT_TRUE(defaultAndValidate(native, ValidateOptions{}).ok());
  kube::TrainingJob mpi = native;
  mpi.spec.launcher = "mpi";
  EXPECT_TRUE(defaultAndValidate(mpi, ValidateOptions{}).ok());
}

struct ModelSize {
  std::string what;
  std::function<void(kube::TrainingJob&)> set;
  int64_t parameters;
};

class CountsModelParameters : public ::testing::TestWithParam<ModelSize> {};

TEST_P(CountsModelParameters, AsTheTrainerBuildsTheModel) {
  kube::TrainingJob job = makeJob();
  GetParam().set(job);
  EXPECT_EQ(contract::modelParameters(*job.spec.trainer->model), GetParam().parameters)
      << GetParam().what;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CountsModelParameters,
    ::testing::Values(
        // 784*512+512 + 512*512+512 + 512*10+10
        ModelSize{"default mlp", [](auto& j) { setModel(j, "mlp", {}); }, 669706},
        ModelSize{"one layer", [](auto& j) { setModel(j, "mlp", {100}); }, 79510},
        // conv 1->16 (416), 16->32 (12832), 7*7*32=1568 -> 10 (15690)
        ModelSize{"default cnn", [](auto& j) { setModel(j, "cnn", {}); }, 28938},
        // ... 1568 -> 128 (200832), 128 -> 10 (1290)
        ModelSize{"cnn with a hidden layer",
                  [](auto& j) {
                    setModel(j, "cnn", {}, {16, 32}, 128);
                  },
                  215370}));

TEST(Validate, TheLargestAllowedModelsPass) {
  kube::TrainingJob job = makeJob();
  setModel(job, "mlp", {8192, 8192});  // ~73.6M parameters
  core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(job, ValidateOptions{});
  EXPECT_TRUE(spec.ok()) << spec.status().toString();
  setModel(job, "mlp", {65536, 65536});
  spec = defaultAndValidate(job, ValidateOptions{});
  ASSERT_FALSE(spec.ok());
  // The message says how big and what to change.
  EXPECT_NE(spec.status().message().find("4347133962 parameters"), std::string::npos)
      << spec.status().message();
  EXPECT_NE(spec.status().message().find("make hidden smaller"), std::string::npos);
}

// The typed settings the operator acts on: the schema's defaults where the spec is silent, and
// withDefaults writes the very same values into a stored spec.
TEST(JobSettings, DefaultsAreTheSchemasAndWithDefaultsWritesTheSame) {
  kube::TrainingJobSpec bare;
  bare.replicas = 3;
  const JobSettings settings = settingsOf(bare);
  EXPECT_EQ(settings.replicas, 3);
  EXPECT_EQ(settings.procs_per_replica, 1);
  EXPECT_EQ(settings.launcher, contract::LauncherMode::kNative);
  EXPECT_EQ(settings.backend, Backend::kAuto);
  EXPECT_EQ(settings.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(settings.backoff_limit, kDefaultBackoffLimit);
  EXPECT_EQ(settings.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(settings.suspend);
  EXPECT_EQ(settings.schedule_timeout_seconds, kDefaultScheduleTimeoutSeconds);
  EXPECT_EQ(settings.scheduler_name, "");
  EXPECT_EQ(settings.worldSize(), 3);
  EXPECT_EQ(settingsOf(withDefaults(bare, {})), settings);
}

// Which failed pods a parameter-server job replaces alone: those whose ranks are all workers,
// except pod 0 (it hosts the store). The servers are the world's last ranks.
TEST(JobSettings, APodIsReplacedAloneWhenEveryRankOnItIsAWorkerOtherThanPodZeros) {
  struct Row {
    int replicas, procs, servers;
    std::vector<bool> want;  // per pod
  };
  const Row rows[] = {
      {3, 1, 1, {false, true, false}},
      {3, 1, 0, {false, false, false}},  // allreduce: the gang restarts
      {2, 1, 1, {false, false}},         // one worker, pod 0's
      {5, 1, 2, {false, true, true, false, false}},
      {4, 2, 3, {false, true, false, false}},  // pod 2 holds rank 5, a server's
      {3, 2, 2, {false, true, false}},
  };
  for (const Row& row : rows) {
    kube::TrainingJobSpec spec;
    spec.replicas = row.replicas;
    spec.procs_per_replica = row.procs;
    if (row.servers > 0) {
      spec.trainer = kube::TrainerSpec{};
      spec.trainer->parallelism = kube::ParallelismSpec{};
      spec.trainer->parallelism->parameter_server = kube::ParameterServerSpec{};
      spec.trainer->parallelism->parameter_server->servers = row.servers;
    }
    const JobSettings s = settingsOf(spec);
    EXPECT_EQ(s.parameter_servers, row.servers);
    for (int i = 0; i < row.replicas; ++i) {
      EXPECT_EQ(s.replacedAlone(i), row.want[static_cast<size_t>(i)])
          << row.replicas << " pods x " << row.procs << ", " << row.servers << " servers: pod "
          << i;
    }
  }
}

TEST(JobSettings, EverySpellingOfTheSchemaParsesToItsEnum) {
  struct Row {
    std::string launcher, backend, restart, clean;
    contract::LauncherMode want_launcher;
    Backend want_backend;
    RestartPolicy want_restart;
    CleanPodPolicy want_clean;
  };
  const Row rows[] = {
      {"native", "auto", "Never", "None", contract::LauncherMode::kNative, Backend::kAuto,
       RestartPolicy::kNever, CleanPodPolicy::kNone},
      {"mpi", "mpi", "OnFailure", "Running", contract::LauncherMode::kMpi, Backend::kMpi,
       RestartPolicy::kOnFailure, CleanPodPolicy::kRunning},
      {"native", "nccl", "ExitCode", "All", contract::LauncherMode::kNative, Backend::kNccl,
       RestartPolicy::kExitCode, CleanPodPolicy::kAll},
      {"native", "gloo", "Never", "All", contract::LauncherMode::kNative, Backend::kGloo,
       RestartPolicy::kNever, CleanPodPolicy::kAll},
      {"native", "tcp", "Never", "All", contract::LauncherMode::kNative, Backend::kTcp,
       RestartPolicy::kNever, CleanPodPolicy::kAll},
  };
  for (const Row& row : rows) {
    kube::TrainingJobSpec spec;
    spec.replicas = 2;
    spec.procs_per_replica = 4;
    spec.launcher = row.launcher;
    spec.backend = row.backend;
    spec.restart_policy = row.restart;
    spec.clean_pod_policy = row.clean;
    spec.scheduling_policy = kube::SchedulingPolicy{};
    spec.scheduling_policy->scheduler_name = "volcano";
    spec.scheduling_policy->schedule_timeout_seconds = 60;
    const JobSettings s = settingsOf(spec);
    EXPECT_EQ(s.launcher, row.want_launcher) << row.launcher;
    EXPECT_EQ(s.backend, row.want_backend) << row.backend;
    EXPECT_EQ(s.restart_policy, row.want_restart) << row.restart;
    EXPECT_EQ(s.clean_pod_policy, row.want_clean) << row.clean;
    EXPECT_EQ(name(s.backend), row.backend);
    EXPECT_EQ(name(s.restart_policy), row.restart);
    EXPECT_EQ(name(s.clean_pod_policy), row.clean);
    EXPECT_EQ(s.worldSize(), 8);
    EXPECT_EQ(s.scheduler_name, "volcano");
    EXPECT_EQ(s.schedule_timeout_seconds, 60);
  }
}

}  // namespace
}  // namespace ringmaster::op
