#include "operator/builders.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/kube/codec.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using testing::defaulted;
using testing::makeJob;

std::map<std::string, std::string> plainEnv(const kube::Container& c) {
  std::map<std::string, std::string> out;
  for (const kube::EnvVar& e : c.env) {
    if (e.value) out[e.name] = *e.value;
    if (e.value_from && e.value_from->field_ref)
      out[e.name] = "<" + e.value_from->field_ref->field_path + ">";
  }
  return out;
}

// The scale subresource's selector: the job's worker pods that hold ranks, by their labels.
TEST(Builders, TheWorkerSelectorNamesTheWorkersByTheirLabels) {
  EXPECT_EQ(workerSelector("fmnist"),
            "ringmaster.dev/job-name=fmnist,ringmaster.dev/role=worker,!ringmaster.dev/standby");
  const kube::Pod pod = buildWorkerPod(defaulted(makeJob("fmnist", 2)), 1, 0, "secret");
  EXPECT_EQ(pod.metadata.labels.at(kJobNameLabel), "fmnist");
  EXPECT_EQ(pod.metadata.labels.at(kRoleLabel), "worker");
  EXPECT_EQ(pod.metadata.labels.count(kStandbyLabel), 0u);
}

TEST(Builders, WorkerPodEnvCountsProcessesInWorldSize) {
  kube::TrainingJob job = makeJob("fmnist", 3);
  job.spec.procs_per_replica = 4;
  job.metadata.namespace_name = "ml";
  kube::Pod pod = buildWorkerPod(defaulted(job), 2, 5, "store-secret-for-tests");
  ASSERT_EQ(pod.spec.containers.size(), 1u);
  std::map<std::string, std::string> env = plainEnv(pod.spec.containers[0]);
  EXPECT_EQ(env["NODE_RANK"], "2");
  EXPECT_EQ(env["WORLD_SIZE"], "12");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(env["NNODES"], "3");
  EXPECT_EQ(env["MASTER_ADDR"], "fmnist-worker-0.fmnist.ml.svc");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["RINGMASTER_JOB"], "fmnist");
  EXPECT_EQ(env["RINGMASTER_ATTEMPT"], "5");
  EXPECT_EQ(env["RINGMASTER_BACKEND"], "auto");
  EXPECT_EQ(env["POD_IP"], "<status.podIP>");
  EXPECT_EQ(env["POD_NAME"], "<metadata.name>");
  EXPECT_EQ(env.count("RINGMASTER_LAUNCHER_MODE"), 0u);
  EXPECT_EQ(env["RINGMASTER_STORE_PORT"], "29510");
  EXPECT_EQ(env.count("TF_CONFIG"), 0u);  // the built-in trainer needs none
}

// A user's program gets TFJob's TF_CONFIG: every process a task through the headless Service,
// this pod's first task its own (the launcher gives each process its index).
TEST(Builders, UserProgramsGetTfJobsTfConfig) {
  kube::TrainingJob job = makeJob("tf", 2);
  job.spec.procs_per_replica = 1;
  job.spec.command = {"python3", "train.py"};
  job.metadata.namespace_name = "ml";
  std::map<std::string, std::string> env =
      plainEnv(buildWorkerPod(defaulted(job), 1, 0, "s").spec.containers[0]);
  EXPECT_EQ(nlohmann::json::parse(env["TF_CONFIG"]),
            nlohmann::json::parse(R"({"cluster": {"worker": ["tf-worker-0.tf.ml.svc:2222",
                "tf-worker-1.tf.ml.svc:2222"]}, "task": {"type": "worker", "index": 1},
                "environment": "cloud"})"));
  job.spec.launcher = "mpi";
  EXPECT_EQ(
      plainEnv(buildWorkerPod(defaulted(job), 1, 0, "s").spec.containers[0]).count("TF_CONFIG"),
      0u);  // MPI programs find each other through mpirun
}

// A pbt member of a program of the user's own: its pod carries the member's spec.trainer.pbt as
// RINGMASTER_PBT, which the launcher runs the intervals by; the built-in trainer's member reads
// its config instead.
TEST(Builders, AUsersPbtMemberTellsTheLauncherItsPopulation) {
  kube::TrainingJob job = makeJob("m", 1);
  job.spec.procs_per_replica = 1;
  job.spec.command = {"python3", "train.py"};
  kube::PbtSpec pbt;
  pbt.directory = "/pbt";
  pbt.member = "m";
  pbt.population = {"m", "n"};
  pbt.intervals = 3;
  job.spec.trainer.emplace();
  job.spec.trainer->pbt = pbt;
  std::map<std::string, std::string> env =
      plainEnv(buildWorkerPod(defaulted(job), 0, 0, "s").spec.containers[0]);
  ASSERT_EQ(env.count("RINGMASTER_PBT"), 1u);
  EXPECT_EQ(kube::decode<kube::PbtSpec>(nlohmann::json::parse(env["RINGMASTER_PBT"])).value(), pbt);
  job.spec.command.clear();
  EXPECT_EQ(plainEnv(buildWorkerPod(defaulted(job), 0, 0, "s").spec.containers[0])
                .count("RINGMASTER_PBT"),
            0u);
}

// spec.roles.ps: the ps pods come after the workers in the gang, named and labelled by their role,
// built from the role's own resources and template, and a user's program finds them in
// TF_CONFIG's cluster.ps (its own task counted among the ps tasks).
TEST(Builders, PsPodsAreTheirOwnRoleAfterTheWorkers) {
  kube::TrainingJob job = makeJob("tf", 2);
  job.spec.procs_per_replica = 1;
  job.spec.command = {"python3", "train.py"};
  job.metadata.namespace_name = "ml";
  kube::ResourceRequirements workers;
  workers.limits["cpu"] = kube::Quantity(4);
  job.spec.resources = workers;
  kube::RoleSpec ps;
  ps.replicas = 2;
  ps.resources.emplace().requests["memory"] = *kube::Quantity::parse("8Gi");
  ps.pod_template.emplace().spec.node_selector["pool"] = "cpu";
  job.spec.roles.emplace().ps = ps;
  const kube::TrainingJob d = defaulted(job);
  const kube::Pod worker = buildWorkerPod(d, 1, 0, "s");
  const kube::Pod server = buildWorkerPod(d, 3, 0, "s");
  EXPECT_EQ(worker.metadata.name, "tf-worker-1");
  EXPECT_EQ(server.metadata.name, "tf-ps-1");
  EXPECT_EQ(server.spec.hostname, "tf-ps-1");
  EXPECT_EQ(worker.metadata.labels.at(kRoleLabel), "worker");
  EXPECT_EQ(server.metadata.labels.at(kRoleLabel), "ps");
  EXPECT_EQ(server.metadata.labels.at(kReplicaIndexLabel), "3");
  EXPECT_EQ(worker.spec.containers[0].resources, workers);
  EXPECT_EQ(server.spec.containers[0].resources, ps.resources);
  EXPECT_TRUE(worker.spec.node_selector.empty());
  EXPECT_EQ(server.spec.node_selector.at("pool"), "cpu");
  std::map<std::string, std::string> env = plainEnv(server.spec.containers[0]);
  EXPECT_EQ(env["NODE_RANK"], "3");
  EXPECT_EQ(env["NNODES"], "4");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["MASTER_ADDR"], "tf-worker-0.tf.ml.svc");
  const nlohmann::json cluster = nlohmann::json::parse(R"({
      "worker": ["tf-worker-0.tf.ml.svc:2222", "tf-worker-1.tf.ml.svc:2222"],
      "ps": ["tf-ps-0.tf.ml.svc:2222", "tf-ps-1.tf.ml.svc:2222"]})");
  EXPECT_EQ(nlohmann::json::parse(env["TF_CONFIG"]),
            nlohmann::json({{"cluster", cluster},
                            {"task", {{"type", "ps"}, {"index", 1}}},
                            {"environment", "cloud"}}));
  env = plainEnv(worker.spec.containers[0]);
  EXPECT_EQ(nlohmann::json::parse(env["TF_CONFIG"])["task"],
            nlohmann::json({{"type", "worker"}, {"index", 1}}));
  EXPECT_EQ(podName("tf", settingsOf(d.spec), 2), "tf-ps-0");

  // A chief pod after the ps pods: TF_CONFIG's one chief task.
  job.spec.roles->chief.emplace().replicas = 1;
  const kube::TrainingJob with_chief = defaulted(job);
  const kube::Pod chief = buildWorkerPod(with_chief, 4, 0, "s");
  EXPECT_EQ(chief.metadata.name, "tf-chief-0");
  EXPECT_EQ(chief.metadata.labels.at(kRoleLabel), "chief");
  EXPECT_EQ(chief.spec.containers[0].resources, workers);  // the workers', having none of its own
  env = plainEnv(chief.spec.containers[0]);
  EXPECT_EQ(env["NNODES"], "5");
  const nlohmann::json tf = nlohmann::json::parse(env["TF_CONFIG"]);
  EXPECT_EQ(tf["cluster"]["chief"], nlohmann::json::array({"tf-chief-0.tf.ml.svc:2222"}));
  EXPECT_EQ(tf["cluster"]["ps"], cluster["ps"]);
  EXPECT_EQ(tf["task"], nlohmann::json({{"type", "chief"}, {"index", 0}}));
  EXPECT_EQ(podHost("tf", "ml", settingsOf(d.spec), 0), "tf-worker-0.tf.ml.svc");

  // An evaluator's pod, last: its task names it, but no task of the cluster is its.
  job.spec.roles->evaluator.emplace().replicas = 1;
  const kube::TrainingJob with_evaluator = defaulted(job);
  const kube::Pod evaluator = buildWorkerPod(with_evaluator, 5, 0, "s");
  EXPECT_EQ(evaluator.metadata.name, "tf-evaluator-0");
  EXPECT_EQ(evaluator.spec.hostname, "tf-evaluator-0");
  EXPECT_EQ(evaluator.metadata.labels.at(kRoleLabel), "evaluator");
  env = plainEnv(evaluator.spec.containers[0]);
  EXPECT_EQ(env["NNODES"], "6");
  EXPECT_EQ(env["NODE_RANK"], "5");
  const nlohmann::json eval_tf = nlohmann::json::parse(env["TF_CONFIG"]);
  EXPECT_EQ(eval_tf["cluster"], tf["cluster"]);
  EXPECT_FALSE(eval_tf["cluster"].contains("evaluator"));
  EXPECT_EQ(eval_tf["task"], nlohmann::json({{"type", "evaluator"}, {"index", 0}}));
  // The others' TF_CONFIG does not name it either.
  const nlohmann::json chief_tf = nlohmann::json::parse(
      plainEnv(buildWorkerPod(with_evaluator, 4, 0, "s").spec.containers[0])["TF_CONFIG"]);
  EXPECT_EQ(chief_tf["cluster"], tf["cluster"]);
}

// A parameter-server job that scales its workers: 2 of its 3 worker slots filled, the ps pod
// after all 3, every pod's WORLD_SIZE counting every slot, and RINGMASTER_WORKER_PODS the count
// as the pod was made.
TEST(Builders, AScalingJobsPodsKeepTheirSlotsAndSayHowManyWorkersThereAre) {
  kube::TrainingJob job = makeJob("ps", 2);
  job.spec.roles.emplace().ps.emplace().replicas = 1;
  job.spec.elastic = kube::ElasticPolicy{};
  job.spec.elastic->min_replicas = 1;
  job.spec.elastic->max_replicas = 3;
  const kube::TrainingJob d = defaulted(job);
  const kube::Pod worker = buildWorkerPod(d, 1, 0, "store-secret-for-tests");
  std::map<std::string, std::string> env = plainEnv(worker.spec.containers[0]);
  EXPECT_EQ(worker.metadata.name, "ps-worker-1");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["NNODES"], "4");
  EXPECT_EQ(env["RINGMASTER_WORKER_PODS"], "2");
  EXPECT_EQ(env["RINGMASTER_WORKER_SLOTS"], "3");
  const kube::Pod server = buildWorkerPod(d, 3, 0, "store-secret-for-tests");
  EXPECT_EQ(server.metadata.name, "ps-ps-0");
  EXPECT_EQ(server.metadata.labels.at(kRoleLabel), "ps");
  EXPECT_EQ(server.metadata.labels.count(kStandbyLabel), 0u);
  env = plainEnv(server.spec.containers[0]);
  EXPECT_EQ(env["NODE_RANK"], "3");
  EXPECT_EQ(env["RINGMASTER_WORKER_PODS"], "2");
  // A fixed world's pods carry no such count.
  kube::TrainingJob fixed = makeJob("ps", 2);
  fixed.spec.roles.emplace().ps.emplace().replicas = 1;
  EXPECT_EQ(plainEnv(buildWorkerPod(defaulted(fixed), 1, 0, "s").spec.containers[0])
                .count("RINGMASTER_WORKER_PODS"),
            0u);
}

// An elastic job that shrank to 3 of its 4 pods: ranks count the current world, and the pod
// beyond it is a standby pod placed like a worker but holding no rank.
TEST(Builders, ElasticPodsFollowTheCurrentWorldAndTheRestStandBy) {
  kube::TrainingJob job = makeJob("fmnist", 4);
  job.spec.elastic = kube::ElasticPolicy{};
  job.spec.elastic->min_replicas = 2;
  kube::TrainingJobStatus status;
  status.current_replicas = 3;
  const kube::TrainingJob at = atCurrentWorld(defaulted(job), status);

  kube::Pod worker = buildWorkerPod(at, 2, 1, "store-secret-for-tests");
  std::map<std::string, std::string> env = plainEnv(worker.spec.containers[0]);
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["NODE_RANK"], "2");
  EXPECT_EQ(worker.metadata.labels.count(kStandbyLabel), 0u);
  EXPECT_TRUE(worker.spec.containers[0].readiness_probe.has_value());

  kube::Pod standby = buildWorkerPod(at, 3, 1, "store-secret-for-tests");
  EXPECT_EQ(standby.metadata.name, "fmnist-worker-3");
  EXPECT_EQ(standby.metadata.labels[kStandbyLabel], "true");
  EXPECT_EQ(standby.spec.containers[0].args, std::vector<std::string>{"--standby"});
  EXPECT_FALSE(standby.spec.containers[0].readiness_probe.has_value());
  EXPECT_EQ(standby.spec.containers[0].resources, worker.spec.containers[0].resources);
}

std::vector<std::string> envNames(const kube::Container& c) {
  std::vector<std::string> names;
  for (const kube::EnvVar& e : c.env) names.push_back(e.name);
  return names;
}

// The contract's variables, then the downward API's, then TMPDIR, then the user's (last, so
// that theirs may refer to ours).
TEST(Builders, WorkerPodEnvOrder) {
  kube::TrainingJob job = makeJob("fmnist", 2);
  job.spec.env.push_back(kube::EnvVar{"OMP_NUM_THREADS", "1", {}, {}});
  const std::vector<std::string> head = {
      "NODE_RANK",          "WORLD_SIZE",         "LOCAL_WORLD_SIZE",       "NNODES",
      "MASTER_ADDR",        "MASTER_PORT",        "RINGMASTER_STORE_PORT",  "RINGMASTER_JOB",
      "RINGMASTER_ATTEMPT", "RINGMASTER_BACKEND", "RINGMASTER_STORE_SECRET"};
  const std::vector<std::string> tail = {"POD_IP", "POD_NAME", "TMPDIR", "OMP_NUM_THREADS"};
  std::vector<std::string> native = head;
  native.insert(native.end(), tail.begin(), tail.end());
  EXPECT_EQ(envNames(buildWorkerPod(defaulted(job), 1, 0, "s").spec.containers[0]), native);

  job.spec.launcher = "mpi";
  std::vector<std::string> mpi = head;
  mpi.insert(mpi.end(), {"RINGMASTER_LAUNCHER_MODE", "RINGMASTER_WORK_DIR"});
  mpi.insert(mpi.end(), tail.begin(), tail.end());
  EXPECT_EQ(envNames(buildWorkerPod(defaulted(job), 1, 0, "s").spec.containers[0]), mpi);
}

// What the operator writes is what the launcher reads: the pod's variables, with the downward
// API's filled in as the kubelet would, parse through the contract.
TEST(Builders, WorkerPodEnvParsesAsTheLaunchersPodEnvironment) {
  kube::TrainingJob job = makeJob("hpc", 3);
  job.spec.launcher = "mpi";
  job.spec.procs_per_replica = 4;
  const std::string secret(contract::store_secret::kMinChars, 'f');
  kube::Pod pod = buildWorkerPod(defaulted(job), 2, 7, secret);
  std::map<std::string, std::string> env = plainEnv(pod.spec.containers[0]);
  env[contract::pod_env::kPodIp] = std::string("10.0.0.9");
  env[contract::pod_env::kPodName] = pod.metadata.name;
  core::Result<contract::PodEnvironment> parsed = contract::parsePodEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->node_rank, 2);
  EXPECT_EQ(parsed->nnodes, 3);
  EXPECT_EQ(parsed->local_world_size, 4);
  EXPECT_EQ(parsed->world_size, 12);
  EXPECT_EQ(parsed->master_addr, "hpc-worker-0.hpc.default.svc");
  EXPECT_EQ(parsed->master_port, kMasterPortDefault);
  EXPECT_EQ(parsed->store_port, kRendezvousPort);
  EXPECT_EQ(parsed->attemptPrefix(), "hpc/attempt-7");
  EXPECT_EQ(parsed->backend, "auto");
  EXPECT_EQ(parsed->mode, contract::LauncherMode::kMpi);
  EXPECT_EQ(parsed->work_dir, "/var/tmp/ringmaster/mpi");
  EXPECT_EQ(parsed->store_secret, secret);
  EXPECT_EQ(parsed->describePod(), "pod 2 (hpc-worker-2)");
}

TEST(Builders, WorkerPodHasStableDnsLabelsAndAControllerOwner) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  kube::Pod pod = buildWorkerPod(job, 1, 0, "store-secret-for-tests");
  EXPECT_EQ(pod.metadata.name, "fmnist-worker-1");
  EXPECT_EQ(pod.metadata.namespace_name, "default");
  EXPECT_EQ(pod.spec.hostname, "fmnist-worker-1");
  EXPECT_EQ(pod.spec.subdomain, "fmnist");
  EXPECT_EQ(pod.spec.restart_policy, "Never");
  EXPECT_EQ(pod.metadata.labels.at(kJobNameLabel), "fmnist");
  EXPECT_EQ(pod.metadata.labels.at(kReplicaIndexLabel), "1");
  EXPECT_EQ(pod.metadata.labels.at(kAttemptLabel), "0");
  ASSERT_EQ(pod.metadata.owner_references.size(), 1u);
  const kube::OwnerReference& owner = pod.metadata.owner_references[0];
  EXPECT_EQ(owner.api_version, "ringmaster.dev/v1alpha1");
  EXPECT_EQ(owner.kind, "TrainingJob");
  EXPECT_EQ(owner.name, "fmnist");
  EXPECT_EQ(owner.uid, job.metadata.uid);
  EXPECT_EQ(owner.controller, true);
  EXPECT_EQ(owner.block_owner_deletion, true);
}

// Pod Security Standards "restricted", as the API server would see the pod (encoded JSON).
TEST(Builders, WorkerPodRunsUnderTheRestrictedPodSecurityProfile) {
  kube::TrainingJob job = makeJob("fmnist", 2);
  job.spec.launcher = "mpi";
  const nlohmann::json pod =
      kube::encode(buildWorkerPod(defaulted(job), 1, 0, "store-secret-for-tests"));
  const nlohmann::json& psc = pod["spec"]["securityContext"];
  EXPECT_EQ(psc["runAsNonRoot"], true);
  EXPECT_EQ(psc["runAsUser"], 1000);
  EXPECT_EQ(psc["runAsGroup"], 1000);
  EXPECT_EQ(psc["fsGroup"], 1000);  // Secret and PVC volumes readable by that user
  EXPECT_EQ(psc["seccompProfile"]["type"], "RuntimeDefault");
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  const nlohmann::json& sc = pod["spec"]["containers"][0]["securityContext"];
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["capabilities"]["drop"], nlohmann::json::array({"ALL"}));
  EXPECT_FALSE(sc["capabilities"].contains("add"));
  EXPECT_FALSE(sc.contains("privileged"));
  // MPI mode's ssh key goes where a non-root user can read it, not /root/.ssh.
  bool ssh_mounted = false;
  for (const auto& m : pod["spec"]["containers"][0]["volumeMounts"]) {
    if (m["name"] == "ssh") {
      ssh_mounted = true;
      EXPECT_EQ(m["mountPath"], "/etc/ringmaster-ssh");
    }
  }
  EXPECT_TRUE(ssh_mounted);
  for (const auto& v : pod["spec"]["volumes"]) EXPECT_FALSE(v.contains("hostPath")) << v.dump();
}

// Workers never call the API server, and write only to volumes: no ServiceAccount token, a
// read-only root filesystem and a scratch emptyDir as TMPDIR (and the MPI launcher's work dir).
TEST(Builders, WorkerPodHasNoTokenAReadOnlyRootAndAWritableTmpdir) {
  kube::TrainingJob job = makeJob("fmnist", 2);
  job.spec.launcher = "mpi";
  const nlohmann::json pod =
      kube::encode(buildWorkerPod(defaulted(job), 1, 0, "store-secret-for-tests"));
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
  const nlohmann::json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  int scratch_mounts = 0;
  for (const auto& m : c["volumeMounts"]) {
    if (m["name"] != "ringmaster-tmp") continue;
    ++scratch_mounts;
    EXPECT_EQ(m["mountPath"], "/var/tmp/ringmaster");
    EXPECT_FALSE(m.value("readOnly", false));
  }
  EXPECT_EQ(scratch_mounts, 1);
  int scratch_volumes = 0;
  for (const auto& v : pod["spec"]["volumes"]) {
    if (v["name"] == "ringmaster-tmp") {
      ++scratch_volumes;
      EXPECT_TRUE(v.contains("emptyDir")) << v.dump();
    }
  }
  EXPECT_EQ(scratch_volumes, 1);
  std::map<std::string, std::string> env =
      plainEnv(buildWorkerPod(defaulted(job), 1, 0, "s").spec.containers[0]);
  EXPECT_EQ(env["TMPDIR"], "/var/tmp/ringmaster");
  EXPECT_EQ(env["RINGMASTER_WORK_DIR"], "/var/tmp/ringmaster/mpi");
}

TEST(Builders, WorkerPodRunsTheLauncherWithTheConfigMounted) {
  kube::TrainingJob job = makeJob();
  job.spec.resources = kube::ResourceRequirements{};
  job.spec.resources->limits.emplace("nvidia.com/gpu", *kube::Quantity::parse("1"));
  kube::Pod pod = buildWorkerPod(defaulted(job), 0, 0, "store-secret-for-tests");
  const kube::Container& c = pod.spec.containers[0];
  EXPECT_EQ(c.name, "worker");
  EXPECT_EQ(c.image, "ringmaster/trainer:0.1.0");
  EXPECT_EQ(c.command, std::vector<std::string>{"ringmaster-launcher"});
  EXPECT_EQ(c.args, std::vector<std::string>{"--trainer-config=/etc/ringmaster/trainer.yaml"});
  ASSERT_FALSE(c.volume_mounts.empty());
  EXPECT_EQ(c.volume_mounts[0].name, "config");
  EXPECT_EQ(c.volume_mounts[0].mount_path, "/etc/ringmaster");
  ASSERT_FALSE(pod.spec.volumes.empty());
  EXPECT_EQ(pod.spec.volumes[0].config_map->name, "fmnist-config");
  ASSERT_TRUE(c.resources.has_value());
  EXPECT_EQ(c.resources->limits.at("nvidia.com/gpu").value(), 1);
  ASSERT_TRUE(c.readiness_probe && c.readiness_probe->http_get);
  EXPECT_EQ(c.readiness_probe->http_get->path, "/readyz");
  EXPECT_EQ(c.readiness_probe->http_get->port, kube::IntOrString(8080));
  EXPECT_EQ(c.readiness_probe->period_seconds, 1);
}

TEST(Builders, UserCommandGoesAfterADoubleDash) {
  kube::TrainingJob job = makeJob();
  job.spec.command = {"python3", "train.py"};
  kube::Pod pod = buildWorkerPod(defaulted(job), 0, 0, "store-secret-for-tests");
  EXPECT_EQ(pod.spec.containers[0].args, (std::vector<std::string>{"--", "python3", "train.py"}));
}

TEST(Builders, UserVolumesAndEnvArePassedThrough) {
  kube::TrainingJob job = makeJob();
  kube::Volume ckpt;
  ckpt.name = "ckpt";
  ckpt.persistent_volume_claim = kube::PersistentVolumeClaimVolumeSource{};
  ckpt.persistent_volume_claim->claim_name = "fmnist-ckpt";
  job.spec.volumes.push_back(ckpt);
  kube::VolumeMount mount;
  mount.name = "ckpt";
  mount.mount_path = "/ckpt";
  job.spec.volume_mounts.push_back(mount);
  job.spec.env.push_back(kube::EnvVar{"OMP_NUM_THREADS", "1", {}, {}});
  kube::Pod pod = buildWorkerPod(defaulted(job), 0, 0, "store-secret-for-tests");
  ASSERT_EQ(pod.spec.volumes.size(), 3u);  // config, the scratch emptyDir, the job's
  EXPECT_EQ(pod.spec.volumes.back(), ckpt);
  EXPECT_EQ(pod.spec.containers[0].volume_mounts.back(), mount);
  EXPECT_EQ(plainEnv(pod.spec.containers[0])["OMP_NUM_THREADS"], "1");
}

TEST(Builders, HeadlessServicePublishesNotReadyAddresses) {
  kube::Service svc = buildService(defaulted(makeJob()));
  EXPECT_EQ(svc.metadata.name, "fmnist");
  EXPECT_EQ(svc.spec.cluster_ip, "None");
  EXPECT_EQ(svc.spec.publish_not_ready_addresses, true);
  EXPECT_EQ(svc.spec.selector, (std::map<std::string, std::string>{{kJobNameLabel, "fmnist"}}));
  ASSERT_EQ(svc.spec.ports.size(), 2u);
  EXPECT_EQ(svc.spec.ports[0].name, "master");  // the program's MASTER_PORT
  EXPECT_EQ(svc.spec.ports[0].port, 29500);
  EXPECT_EQ(svc.spec.ports[1].name, "rendezvous");  // the launcher's store
  EXPECT_EQ(svc.spec.ports[1].port, 29510);
  EXPECT_EQ(svc.metadata.owner_references.at(0).controller, true);
}

TEST(Builders, ConfigMapHoldsTheTrainerSpecAsYaml) {
  kube::TrainingJob job = makeJob();
  job.spec.trainer = kube::TrainerSpec{};
  job.spec.trainer->epochs = 5;
  job.spec.trainer->model = kube::ModelSpec{};
  job.spec.trainer->model->type = "mlp";
  job.spec.trainer->model->hidden = {512, 512};
  job.spec.trainer->optimizer = kube::OptimizerSpec{};
  job.spec.trainer->optimizer->learning_rate = 0.1;
  job.spec.trainer->precision = "bf16";
  job.spec.trainer->cuda_graph = false;
  kube::ConfigMap cm = buildConfigMap(defaulted(job));
  EXPECT_EQ(cm.metadata.name, "fmnist-config");
  EXPECT_EQ(cm.data.count("hostfile"), 0u);
  YAML::Node y = YAML::Load(cm.data.at("trainer.yaml"));
  EXPECT_EQ(y["epochs"].as<int>(), 5);
  EXPECT_EQ(y["model"]["type"].as<std::string>(), "mlp");
  EXPECT_EQ(y["model"]["hidden"][1].as<int>(), 512);
  EXPECT_DOUBLE_EQ(y["optimizer"]["learningRate"].as<double>(), 0.1);
  // Unset, so the trainer serves on the contract's default: the port the operator reads.
  EXPECT_FALSE(y["metricsPort"]);
  EXPECT_EQ(metricsPort(defaulted(job)), contract::kDefaultMetricsPort);
  EXPECT_EQ(y["precision"].as<std::string>(), "bf16");  // the GPU settings reach the trainer
  EXPECT_FALSE(y["cudaGraph"].as<bool>());
  EXPECT_FALSE(y["device"]) << "unset fields stay unset (the trainer's default: auto)";
}

TEST(Builders, MpiModeAddsHostfileLauncherModeAndSshSecret) {
  kube::TrainingJob job = makeJob("hpc", 2);
  job.spec.launcher = "mpi";
  job.spec.procs_per_replica = 4;
  job = defaulted(job);
  kube::ConfigMap cm = buildConfigMap(job);
  EXPECT_EQ(cm.data.at("hostfile"),
            "hpc-worker-0.hpc.default.svc slots=4\nhpc-worker-1.hpc.default.svc slots=4\n");
  kube::Pod pod = buildWorkerPod(job, 0, 0, "store-secret-for-tests");
  EXPECT_EQ(plainEnv(pod.spec.containers[0])["RINGMASTER_LAUNCHER_MODE"], "mpi");
  bool mounted = false;
  for (const auto& m : pod.spec.containers[0].volume_mounts) mounted |= m.name == "ssh";
  EXPECT_TRUE(mounted);

  core::Result<kube::Secret> secret = buildSecret(job);
  ASSERT_TRUE(secret.ok()) << secret.status().toString();
  EXPECT_EQ(secret->metadata.name, "hpc-ssh");
  EXPECT_EQ(secret->type, "kubernetes.io/ssh-auth");
  EXPECT_EQ(secret->data.at("ssh-privatekey").rfind("-----BEGIN EC PRIVATE KEY-----", 0), 0u);
  EXPECT_EQ(secret->data.at("ssh-publickey").rfind("ecdsa-sha2-nistp521 AAAA", 0), 0u);
  // A fresh identity per job.
  EXPECT_NE(buildSecret(job)->data.at("ssh-privatekey"), secret->data.at("ssh-privatekey"));
}

TEST(Builders, GangSchedulerGetsAPodGroupWithMinMemberReplicas) {
  kube::TrainingJob job = makeJob("big", 4);
  job.spec.scheduling_policy = kube::SchedulingPolicy{};
  job.spec.scheduling_policy->scheduler_name = "volcano";
  job = defaulted(job);
  std::optional<PodGroupKind> kind = podGroupKindFor(job);
  ASSERT_TRUE(kind.has_value());
  EXPECT_EQ(kind->group, "scheduling.volcano.sh");
  kube::PodGroup pg = buildPodGroup(job, *kind);
  EXPECT_EQ(pg.api_version, "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(pg.kind, "PodGroup");
  EXPECT_EQ(pg.spec.min_member, 4);
  EXPECT_FALSE(pg.spec.schedule_timeout_seconds.has_value()) << "scheduler-plugins' field";
  EXPECT_EQ(pg.metadata.name, "big");
  ASSERT_EQ(pg.metadata.owner_references.size(), 1u);
  EXPECT_EQ(pg.metadata.owner_references[0].name, "big");
  kube::Pod pod = buildWorkerPod(job, 0, 0, "store-secret-for-tests");
  EXPECT_EQ(pod.spec.scheduler_name, "volcano");
  EXPECT_EQ(pod.metadata.annotations.at("scheduling.k8s.io/group-name"), "big");

  job.spec.scheduling_policy->scheduler_name = "scheduler-plugins-scheduler";
  EXPECT_EQ(podGroupKindFor(job)->group, "scheduling.x-k8s.io");
  EXPECT_EQ(buildPodGroup(job, *podGroupKindFor(job)).spec.schedule_timeout_seconds,
            kDefaultScheduleTimeoutSeconds);
  job.spec.scheduling_policy->scheduler_name = "default-scheduler";
  EXPECT_FALSE(podGroupKindFor(job).has_value());
}

}  // namespace
}  // namespace ringmaster::op
