// spec.template meets the operator's pod: what it adds, where it lands, and every value the
// operator owns refused with the field named.
#include "operator/pod_template.h"

#include <gtest/gtest.h>

#include "operator/builders.h"
#include "operator/queue_admission.h"
#include "operator/validate.h"
#include "operator/worker_pod.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;
using testing::makeJob;

// A job whose spec.template is `tmpl` (JSON), decoded as the API server's answer would be.
kube::TrainingJob jobWithTemplate(const json& tmpl) {
  kube::TrainingJob job = makeJob();
  auto decoded = kube::decode<kube::PodTemplateSpec>(tmpl);
  EXPECT_TRUE(decoded.ok()) << decoded.status().toString();
  if (decoded.ok()) job.spec.pod_template = *decoded;
  return job;
}

const json kFullTemplate = json::parse(R"({
  "metadata": {"labels": {"team": "vision", "kueue.x-k8s.io/queue-name": "gpus"},
               "annotations": {"sidecar.istio.io/inject": "false"}},
  "spec": {
    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
      "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                   "whenUnsatisfiable": "ScheduleAnyway"}],
    "priorityClassName": "training-high",
    "serviceAccountName": "trainer",
    "imagePullSecrets": [{"name": "regcred"}],
    "runtimeClassName": "nvidia",
    "securityContext": {"runAsUser": 2000, "fsGroup": 2000},
    "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
    "initContainers": [{"name": "fetch", "image": "busybox", "command": ["true"]}],
    "containers": [
      {"name": "worker",
       "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "8"}},
       "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
       "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]},
      {"name": "log-shipper", "image": "fluent-bit:3",
       "volumeMounts": [{"name": "ringmaster-tmp", "mountPath": "/logs", "readOnly": true}]}]}})");

TEST(PodTemplate, AFullTemplateIsValid) {
  kube::TrainingJob job = jobWithTemplate(kFullTemplate);
  job.spec.env.push_back({"FROM_SPEC", std::string("1"), std::nullopt, {}});
  const auto errors = validate(testing::defaulted(job));
  EXPECT_TRUE(errors.empty()) << contract::describe(errors);
}

TEST(PodTemplate, MergesIntoTheWorkerPod) {
  kube::TrainingJob job = jobWithTemplate(kFullTemplate);
  job.metadata.labels["cost-center"] = "research";
  job.spec.env.push_back({"FROM_SPEC", std::string("1"), std::nullopt, {}});
  const kube::Pod pod = buildWorkerPod(testing::defaulted(job), 1, 0, "secret");

  // Labels: the job's, the template's and the operator's.
  EXPECT_EQ(pod.metadata.labels.at("cost-center"), "research");
  EXPECT_EQ(pod.metadata.labels.at("team"), "vision");
  EXPECT_EQ(pod.metadata.labels.at("kueue.x-k8s.io/queue-name"), "gpus");
  EXPECT_EQ(pod.metadata.labels.at(kJobNameLabel), "fmnist");
  EXPECT_EQ(pod.metadata.labels.at(kReplicaIndexLabel), "1");
  EXPECT_EQ(pod.metadata.annotations.at("sidecar.istio.io/inject"), "false");

  // Where and as whom it runs.
  EXPECT_EQ(pod.spec.node_selector.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  ASSERT_EQ(pod.spec.tolerations.size(), 1u);
  EXPECT_EQ(pod.spec.tolerations[0].key, "nvidia.com/gpu");
  EXPECT_TRUE(pod.spec.affinity.contains("nodeAffinity"));
  EXPECT_EQ(pod.spec.topology_spread_constraints.size(), 1u);
  EXPECT_EQ(pod.spec.priority_class_name, "training-high");
  EXPECT_EQ(pod.spec.service_account_name, "trainer");
  EXPECT_EQ(pod.spec.automount_service_account_token, false);  // not asked for: still none
  ASSERT_EQ(pod.spec.image_pull_secrets.size(), 1u);
  EXPECT_EQ(pod.spec.extra.value("runtimeClassName", ""), "nvidia");
  // The template's securityContext fields over the restricted defaults, the rest kept.
  EXPECT_EQ(pod.spec.security_context->run_as_user, 2000);
  EXPECT_EQ(pod.spec.security_context->fs_group, 2000);
  EXPECT_EQ(pod.spec.security_context->run_as_non_root, true);
  EXPECT_EQ(pod.spec.security_context->seccomp_profile->type, "RuntimeDefault");
  EXPECT_EQ(pod.spec.restart_policy, "Never");
  EXPECT_EQ(pod.spec.hostname, "fmnist-worker-1");

  // Containers: the worker first, then the sidecar; the init container.
  ASSERT_EQ(pod.spec.containers.size(), 2u);
  const kube::Container& w = pod.spec.containers[0];
  EXPECT_EQ(w.name, kWorkerContainer);
  EXPECT_EQ(w.image, "ringmaster/trainer:0.1.0");
  EXPECT_EQ(w.resources->limits.at("nvidia.com/gpu").toString(), "1");
  // Env: the operator's, then spec.env, then the template's.
  ASSERT_GE(w.env.size(), 2u);
  EXPECT_EQ(w.env[w.env.size() - 2].name, "FROM_SPEC");
  EXPECT_EQ(w.env.back().name, "NCCL_DEBUG");
  EXPECT_EQ(w.volume_mounts.back().mount_path, "/dev/shm");
  EXPECT_EQ(pod.spec.containers[1].name, "log-shipper");
  ASSERT_EQ(pod.spec.init_containers.size(), 1u);
  EXPECT_EQ(pod.spec.init_containers[0].name, "fetch");
  EXPECT_EQ(pod.spec.volumes.back().name, "shm");
}

TEST(PodTemplate, JobLabelsReachEveryChild) {
  kube::TrainingJob job = makeJob();
  job.metadata.labels["cost-center"] = "research";
  job = testing::defaulted(job);
  EXPECT_EQ(buildService(job).metadata.labels.at("cost-center"), "research");
  EXPECT_EQ(buildConfigMap(job).metadata.labels.at("cost-center"), "research");
  EXPECT_EQ(buildWorkerPod(job, 0, 0, "s").metadata.labels.at("cost-center"), "research");
  // The Service still selects by the operator's label only.
  EXPECT_EQ(buildService(job).spec.selector.size(), 1u);
}

TEST(PodTemplate, WithoutOneThePodIsUnchanged) {
  kube::TrainingJob plain = testing::defaulted(makeJob());
  kube::TrainingJob empty = plain;
  empty.spec.pod_template = kube::PodTemplateSpec{};
  EXPECT_EQ(kube::encode(buildWorkerPod(plain, 0, 0, "s")),
            kube::encode(buildWorkerPod(empty, 0, 0, "s")));
}

struct BadTemplate {
  std::string what;
  json tmpl;
  std::string field;    // the field the message must name
  std::string message;  // a part of its message
};

class RejectsBadTemplate : public ::testing::TestWithParam<BadTemplate> {};

TEST_P(RejectsBadTemplate, NamingTheField) {
  const BadTemplate& row = GetParam();
  kube::TrainingJob job = jobWithTemplate(row.tmpl);
  const auto errors = validate(testing::defaulted(job));
  const std::string all = contract::describe(errors);
  bool found = false;
  for (const FieldError& e : errors) {
    if (e.field == row.field && e.message.find(row.message) != std::string::npos) found = true;
  }
  EXPECT_TRUE(found) << row.what << ": wanted " << row.field << ": ..." << row.message
                     << "..., got: " << all;
}

json worker(json fields) {
  fields["name"] = "worker";
  return {{"spec", {{"containers", json::array({fields})}}}};
}

INSTANTIATE_TEST_SUITE_P(
    Table, RejectsBadTemplate,
    ::testing::Values(
        BadTemplate{"an operator label",
                    {{"metadata", {{"labels", {{kJobNameLabel, "x"}}}}}},
                    "spec.template.metadata.labels[ringmaster.dev/job-name]",
                    "set by the operator"},
        BadTemplate{"the gang scheduler's group label",
                    {{"metadata", {{"labels", {{"scheduling.x-k8s.io/pod-group", "x"}}}}}},
                    "spec.template.metadata.labels[scheduling.x-k8s.io/pod-group]",
                    "set by the operator"},
        BadTemplate{"the queue's pod group label",
                    {{"metadata", {{"labels", {{"kueue.x-k8s.io/pod-group-name", "g"}}}}}},
                    "spec.template.metadata.labels[kueue.x-k8s.io/pod-group-name]",
                    "set by the operator"},
        BadTemplate{"a label value with a space",
                    {{"metadata", {{"labels", {{"tier", "back end"}}}}}},
                    "spec.template.metadata.labels[tier]",
                    "a valid label"},
        BadTemplate{"a pod name",
                    {{"metadata", {{"name", "mine"}}}},
                    "spec.template.metadata.name",
                    "set by the operator"},
        BadTemplate{"restartPolicy",
                    {{"spec", {{"restartPolicy", "Always"}}}},
                    "spec.template.spec.restartPolicy",
                    "set by the operator"},
        BadTemplate{"nodeName",
                    {{"spec", {{"nodeName", "gpu-1"}}}},
                    "spec.template.spec.nodeName",
                    "nodeSelector"},
        BadTemplate{"schedulerName",
                    {{"spec", {{"schedulerName", "volcano"}}}},
                    "spec.template.spec.schedulerName",
                    "spec.schedulingPolicy.schedulerName"},
        BadTemplate{"hostNetwork",
                    {{"spec", {{"hostNetwork", true}}}},
                    "spec.template.spec.hostNetwork",
                    "not supported"},
        BadTemplate{"the worker's image", worker({{"image", "mine:1"}}),
                    "spec.template.spec.containers[0].image", "spec.image"},
        BadTemplate{"the worker's command", worker({{"command", {"python"}}}),
                    "spec.template.spec.containers[0].command", "spec.command"},
        BadTemplate{"the worker's ports", worker({{"ports", {{{"containerPort", 1234}}}}}),
                    "spec.template.spec.containers[0].ports", "set by the operator"},
        BadTemplate{"the worker's envFrom", worker({{"envFrom", json::array()}}),
                    "spec.template.spec.containers[0].envFrom", "not supported"},
        BadTemplate{"a rank variable in the worker's env",
                    worker({{"env", {{{"name", "RANK"}, {"value", "3"}}}}}),
                    "spec.template.spec.containers[0].env[0].name",
                    "set by the operator or the launcher"},
        BadTemplate{"a mount of no volume",
                    worker({{"volumeMounts", {{{"name", "nope"}, {"mountPath", "/x"}}}}}),
                    "spec.template.spec.containers[0].volumeMounts[0].name", "names no volume"},
        BadTemplate{
            "a mount over the config",
            {{"spec",
              {{"volumes", {{{"name", "v"}, {"emptyDir", json::object()}}}},
               {"containers",
                {{{"name", "worker"},
                  {"volumeMounts", {{{"name", "v"}, {"mountPath", "/etc/ringmaster"}}}}}}}}}},
            "spec.template.spec.containers[0].volumeMounts[0].mountPath",
            "reserved"},
        BadTemplate{"an operator volume name",
                    {{"spec", {{"volumes", {{{"name", "config"}, {"emptyDir", json::object()}}}}}}},
                    "spec.template.spec.volumes[0].name",
                    "reserved"},
        BadTemplate{"a hostPath volume",
                    {{"spec", {{"volumes", {{{"name", "h"}, {"hostPath", {{"path", "/"}}}}}}}}},
                    "spec.template.spec.volumes[0].hostPath",
                    "disabled by the cluster admin"},
        BadTemplate{"a sidecar without an image",
                    {{"spec", {{"containers", {{{"name", "side"}}}}}}},
                    "spec.template.spec.containers[0].image",
                    "required"},
        BadTemplate{
            "a sidecar on the rendezvous port",
            {{"spec",
              {{"containers",
                {{{"name", "side"}, {"image", "i"}, {"ports", {{{"containerPort", 29500}}}}}}}}}},
            "spec.template.spec.containers[0].ports[0].containerPort",
            "the worker's"},
        BadTemplate{
            "two sidecars of one name",
            {{"spec",
              {{"containers",
                {{{"name", "side"}, {"image", "i"}}, {{"name", "side"}, {"image", "i"}}}}}}},
            "spec.template.spec.containers[1].name",
            "duplicate container name"},
        BadTemplate{"an init container named worker",
                    {{"spec", {{"initContainers", {{{"name", "worker"}, {"image", "i"}}}}}}},
                    "spec.template.spec.initContainers[0].name",
                    "not an init container"},
        BadTemplate{
            "a toleration of Exists with a value",
            {{"spec", {{"tolerations", {{{"key", "k"}, {"operator", "Exists"}, {"value", "v"}}}}}}},
            "spec.template.spec.tolerations[0].value",
            "must be empty"},
        BadTemplate{"a toleration of no key that is not Exists",
                    {{"spec", {{"tolerations", {{{"operator", "Equal"}, {"value", "v"}}}}}}},
                    "spec.template.spec.tolerations[0].key",
                    "required unless operator is Exists"},
        BadTemplate{"a toleration effect that does not exist",
                    {{"spec", {{"tolerations", {{{"key", "k"}, {"effect", "NoRun"}}}}}}},
                    "spec.template.spec.tolerations[0].effect",
                    "NoSchedule"},
        BadTemplate{"a negative grace period",
                    {{"spec", {{"terminationGracePeriodSeconds", -1}}}},
                    "spec.template.spec.terminationGracePeriodSeconds",
                    "at least 0"},
        BadTemplate{"a nodeSelector key that is no label key",
                    {{"spec", {{"nodeSelector", {{"a b", "x"}}}}}},
                    "spec.template.spec.nodeSelector[a b]",
                    "name part"},
        BadTemplate{"an unknown template field",
                    {{"status", json::object()}},
                    "spec.template.status",
                    "unknown field"}),
    [](const ::testing::TestParamInfo<BadTemplate>& info) {
      std::string name;
      for (char c : info.param.what) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(PodTemplate, ResourcesInOnePlace) {
  kube::TrainingJob job = jobWithTemplate(worker({{"resources", {{"limits", {{"cpu", "1"}}}}}}));
  job.spec.resources = kube::ResourceRequirements{};
  job.spec.resources->limits["cpu"] = kube::Quantity::parse("2").value();
  const auto errors = validate(testing::defaulted(job));
  ASSERT_EQ(errors.size(), 1u) << contract::describe(errors);
  EXPECT_EQ(errors[0].field, "spec.template.spec.containers[0].resources");
}

TEST(PodTemplate, AnEnvNameGivenInBothPlacesIsRefused) {
  kube::TrainingJob job = jobWithTemplate(worker({{"env", {{{"name", "A"}, {"value", "2"}}}}}));
  job.spec.env.push_back({"A", std::string("1"), std::nullopt, {}});
  const auto errors = validate(testing::defaulted(job));
  ASSERT_EQ(errors.size(), 1u) << contract::describe(errors);
  EXPECT_EQ(errors[0].field, "spec.template.spec.containers[0].env[0].name");
}

TEST(PodTemplate, JobLabelsMustNotTakeTheOperatorsKeys) {
  kube::TrainingJob job = makeJob();
  job.metadata.labels[kReplicaIndexLabel] = "7";
  const auto errors = validate(testing::defaulted(job));
  ASSERT_EQ(errors.size(), 1u) << contract::describe(errors);
  EXPECT_EQ(errors[0].field, "metadata.labels[ringmaster.dev/replica-index]");
}

// A job that names a Kueue queue: each attempt's pods are one gated group of `replicas`.
TEST(QueueAdmission, PodsOfAQueuedJobJoinTheirAttemptsGroupGated) {
  kube::TrainingJob job = makeJob("fmnist", 3);
  job.metadata.labels[kQueueNameLabel] = "team-a";
  job = testing::defaulted(job);
  const kube::Pod pod = buildWorkerPod(job, 2, 1, "s");
  EXPECT_EQ(pod.metadata.labels.at(kQueueNameLabel), "team-a");
  EXPECT_EQ(pod.metadata.labels.at(kPodGroupNameLabel), "fmnist-1");
  EXPECT_EQ(pod.metadata.annotations.at(kPodGroupTotalCountAnnotation), "3");
  EXPECT_EQ(pod.metadata.annotations.at(kRetriableInGroupAnnotation), "false");
  ASSERT_EQ(pod.spec.scheduling_gates.size(), 1u);
  EXPECT_EQ(pod.spec.scheduling_gates[0].name, kAdmissionGate);

  // The queue may come from the pod template too; a gate given there is not doubled.
  kube::TrainingJob templated = jobWithTemplate(json::parse(R"({
    "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-b"}},
    "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}})"));
  const kube::Pod from_template = buildWorkerPod(testing::defaulted(templated), 0, 0, "s");
  EXPECT_EQ(from_template.metadata.labels.at(kPodGroupNameLabel), "fmnist-0");
  EXPECT_EQ(from_template.spec.scheduling_gates.size(), 1u);

  // No queue, no group and no gate.
  const kube::Pod plain = buildWorkerPod(testing::defaulted(makeJob()), 0, 0, "s");
  EXPECT_FALSE(plain.metadata.labels.count(kPodGroupNameLabel));
  EXPECT_TRUE(plain.spec.scheduling_gates.empty());
}

// A sidecar keeps the pod running after the worker exits: the rank is done all the same, and
// the pod is one cleanPodPolicy Running deletes.
TEST(PodTemplate, AWorkerThatExitedBesideARunningSidecarIsFinished) {
  kube::Pod pod;
  pod.status.phase = "Running";
  kube::ContainerStatus worker_status;
  worker_status.name = kWorkerContainer;
  worker_status.state = kube::ContainerState{};
  worker_status.state->terminated = kube::ContainerStateTerminated{};
  worker_status.state->terminated->exit_code = 0;
  kube::ContainerStatus sidecar;
  sidecar.name = "log-shipper";
  sidecar.state = kube::ContainerState{};
  sidecar.state->running = kube::ContainerStateRunning{};
  pod.status.container_statuses = {worker_status, sidecar};
  WorkerPod w = workerPodOf(pod);
  EXPECT_EQ(w.phase, "Succeeded");
  EXPECT_TRUE(w.finished());
  EXPECT_TRUE(w.sidecars_running);

  pod.status.container_statuses[0].state->terminated->exit_code = 3;
  w = workerPodOf(pod);
  EXPECT_EQ(w.phase, "Failed");
  EXPECT_EQ(w.exit_code, 3);

  // Without a running sidecar the pod's own phase stands (the kubelet is about to report it).
  pod.status.container_statuses.pop_back();
  w = workerPodOf(pod);
  EXPECT_EQ(w.phase, "Running");
  EXPECT_FALSE(w.sidecars_running);
}

}  // namespace
}  // namespace ringmaster::op
