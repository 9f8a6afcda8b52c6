// Objects as a real kube-apiserver returned them (testdata/) decode into typed structs and encode
// back to the same JSON; objects built in code encode to the shape the API server expects.

#include <gtest/gtest.h>

#include "ringmaster/kube/api_status.h"
#include "ringmaster/kube/binding.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/event.h"
#include "ringmaster/kube/experiment.h"
#include "ringmaster/kube/lease.h"
#include "ringmaster/kube/list.h"
#include "ringmaster/kube/namespace.h"
#include "ringmaster/kube/node.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/pod_group.h"
#include "ringmaster/kube/secret.h"
#include "ringmaster/kube/service.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/kube/watch_event.h"
#include "test_util.h"

namespace ringmaster::kube {
namespace {

using nlohmann::json;
using testing::expectRoundTrip;
using testing::loadJson;
using testing::loadLines;

TEST(RoundTrip, PodWithTerminatedContainerFromTranscript) {
  Pod pod = expectRoundTrip<Pod>(loadJson("pod_succeeded.json"));
  EXPECT_EQ(pod.kind, "Pod");
  EXPECT_EQ(pod.metadata.name, "mnist-worker-0");
  EXPECT_EQ(pod.metadata.labels.at("ringmaster.dev/replica-index"), "0");
  ASSERT_EQ(pod.metadata.owner_references.size(), 1u);
  EXPECT_EQ(pod.metadata.owner_references[0].controller, true);
  EXPECT_TRUE(pod.metadata.managed_fields.is_array());
  EXPECT_EQ(pod.spec.restart_policy, "Never");
  ASSERT_EQ(pod.spec.containers.size(), 1u);
  EXPECT_EQ(pod.spec.containers[0].command, (std::vector<std::string>{"python", "-m", "train"}));
  EXPECT_EQ(pod.spec.containers[0].env[0].value, "16");
  ASSERT_EQ(pod.spec.tolerations.size(), 2u);  // the API server's NoExecute defaults
  EXPECT_EQ(pod.spec.tolerations[0].operator_name, "Exists");
  EXPECT_EQ(pod.spec.tolerations[0].effect, "NoExecute");
  EXPECT_TRUE(pod.spec.tolerations[0].toleration_seconds.has_value());
  EXPECT_EQ(pod.status.phase, "Succeeded");
  ASSERT_EQ(pod.status.conditions.size(), 4u);
  ASSERT_TRUE(pod.status.conditions[0].last_probe_time.has_value());
  EXPECT_TRUE(pod.status.conditions[0].last_probe_time->isZero());  // "lastProbeTime": null
  ASSERT_EQ(pod.status.container_statuses.size(), 1u);
  const ContainerStatus& cs = pod.status.container_statuses[0];
  EXPECT_EQ(cs.restart_count, 0);
  ASSERT_TRUE(cs.state && cs.state->terminated);
  EXPECT_EQ(cs.state->terminated->exit_code, 0);
  EXPECT_EQ(cs.state->terminated->reason, "Completed");
  EXPECT_EQ(cs.state->terminated->finished_at->toString(), "2026-11-22T02:00:11Z");
  ASSERT_TRUE(cs.last_state.has_value());  // "lastState": {} stays present
  EXPECT_EQ(encode(*cs.last_state), json::object());
  // The API server's defaults are typed, not left in `extra`.
  EXPECT_EQ(pod.spec.containers[0].termination_message_path, "/dev/termination-log");
  EXPECT_EQ(pod.spec.containers[0].termination_message_policy, "File");
  EXPECT_FALSE(pod.spec.containers[0].extra.contains("terminationMessagePath"));
}

TEST(RoundTrip, TerminationMessageFieldsAndTerminatedMessage) {
  json pod_json = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-0", "namespace": "default"},
    "spec": {"containers": [{"name": "worker", "image": "i",
      "terminationMessagePath": "/dev/termination-log",
      "terminationMessagePolicy": "FallbackToLogsOnError"}]},
    "status": {"phase": "Failed", "containerStatuses": [{"name": "worker", "restartCount": 0,
      "state": {"terminated": {"exitCode": 1, "reason": "Error",
        "message": "rank 0 exited with code 1: E CORE [j rank 0/1] no data\n"}}}]}})");
  Pod pod = expectRoundTrip<Pod>(pod_json);
  EXPECT_EQ(pod.spec.containers[0].termination_message_policy, "FallbackToLogsOnError");
  const auto& t = pod.status.container_statuses[0].state->terminated;
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->message, "rank 0 exited with code 1: E CORE [j rank 0/1] no data\n");
  // Unset fields stay absent on the wire.
  Container c;
  c.name = "x";
  EXPECT_FALSE(encode(c).contains("terminationMessagePolicy"));
}

TEST(RoundTrip, ModifiedPodKeepsFieldsThisLibraryDoesNotModel) {
  core::Result<Pod> pod = decode<Pod>(loadJson("pod_succeeded.json"));
  ASSERT_TRUE(pod.ok());
  pod->status.phase = "Failed";
  json out = encode(*pod);
  EXPECT_EQ(out["status"]["phase"], "Failed");
  EXPECT_EQ(out["status"]["qosClass"], "BestEffort");
  EXPECT_EQ(out["spec"]["tolerations"].size(), 2u);
  EXPECT_EQ(out["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
}

// Where a pod may run and who may start it: typed where a node agent reads it, kept as given
// where only a scheduler does.
TEST(RoundTrip, PlacementFieldsOfAPodSpec) {
  json pod_json = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-0"},
    "spec": {"containers": [{"name": "worker", "image": "i"}],
      "nodeSelector": {"nvidia.com/gpu.product": "H100"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In",
                                                      "values": ["a"]}]}]}}},
      "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                     "whenUnsatisfiable": "DoNotSchedule"}],
      "priorityClassName": "training", "imagePullSecrets": [{"name": "regcred"}],
      "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "dnsPolicy": "ClusterFirst"}})");
  Pod pod = expectRoundTrip<Pod>(pod_json);
  EXPECT_EQ(pod.spec.node_selector.at("nvidia.com/gpu.product"), "H100");
  ASSERT_EQ(pod.spec.tolerations.size(), 1u);
  EXPECT_EQ(pod.spec.tolerations[0].key, "nvidia.com/gpu");
  EXPECT_EQ(pod.spec.tolerations[0].operator_name, "Exists");
  EXPECT_EQ(pod.spec.affinity["nodeAffinity"].size(), 1u);
  EXPECT_EQ(pod.spec.topology_spread_constraints.size(), 1u);
  EXPECT_EQ(pod.spec.priority_class_name, "training");
  ASSERT_EQ(pod.spec.image_pull_secrets.size(), 1u);
  EXPECT_EQ(pod.spec.image_pull_secrets[0].name, "regcred");
  ASSERT_EQ(pod.spec.scheduling_gates.size(), 1u);
  EXPECT_EQ(pod.spec.scheduling_gates[0].name, "kueue.x-k8s.io/admission");
  EXPECT_EQ(pod.spec.extra, json({{"dnsPolicy", "ClusterFirst"}}));
  // None of them is written when unset.
  const json bare = encode(PodSpec{});
  EXPECT_EQ(bare, json::object());
}

TEST(RoundTrip, RestrictedSecurityContextsAreTyped) {
  json spec = json::parse(R"({
    "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000,
                        "fsGroup": 1000, "supplementalGroups": [44],
                        "seccompProfile": {"type": "RuntimeDefault"},
                        "fsGroupChangePolicy": "OnRootMismatch"},
    "containers": [{"name": "worker", "image": "w",
                    "securityContext": {"allowPrivilegeEscalation": false,
                                        "capabilities": {"drop": ["ALL"],
                                                         "add": ["NET_BIND_SERVICE"]},
                                        "readOnlyRootFilesystem": true,
                                        "seLinuxOptions": {"level": "s0:c1"}}}]})");
  PodSpec decoded = expectRoundTrip<PodSpec>(spec);
  ASSERT_TRUE(decoded.security_context.has_value());
  const PodSecurityContext& psc = *decoded.security_context;
  EXPECT_EQ(psc.run_as_non_root, true);
  EXPECT_EQ(psc.run_as_user, 1000);
  EXPECT_EQ(psc.fs_group, 1000);
  EXPECT_EQ(psc.supplemental_groups, std::vector<int64_t>{44});
  ASSERT_TRUE(psc.seccomp_profile.has_value());
  EXPECT_EQ(psc.seccomp_profile->type, "RuntimeDefault");
  EXPECT_TRUE(psc.extra.contains("fsGroupChangePolicy"));  // not modelled, still kept
  ASSERT_TRUE(decoded.containers[0].security_context.has_value());
  const SecurityContext& sc = *decoded.containers[0].security_context;
  EXPECT_EQ(sc.allow_privilege_escalation, false);
  ASSERT_TRUE(sc.capabilities.has_value());
  EXPECT_EQ(sc.capabilities->drop, std::vector<std::string>{"ALL"});
  EXPECT_EQ(sc.read_only_root_filesystem, true);
  EXPECT_FALSE(sc.privileged.has_value());
  EXPECT_TRUE(sc.extra.contains("seLinuxOptions"));
}

TEST(RoundTrip, LeaseWithMicroTimes) {
  Lease lease = expectRoundTrip<Lease>(loadJson("lease.json"));
  EXPECT_EQ(lease.spec.holder_identity, "vm_a84c3365-f9ac-4f88-a914-01aa2c533dc6");
  EXPECT_EQ(lease.spec.lease_duration_seconds, 15);
  EXPECT_EQ(lease.spec.lease_transitions, 0);
  ASSERT_TRUE(lease.spec.renew_time.has_value());
  EXPECT_EQ(lease.spec.renew_time->toString(), "2026-11-22T02:01:12.192065Z");
  EXPECT_EQ(lease.spec.renew_time->unixMicros() - lease.spec.acquire_time->unixMicros(), 8318002);
}

// A Volcano PodGroup as its controller leaves it: the typed fields, and its status and queue
// kept untouched.
TEST(RoundTrip, PodGroupKeepsWhatItDoesNotModel) {
  PodGroup pg = expectRoundTrip<PodGroup>(nlohmann::json::parse(R"({
    "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
    "metadata": {"name": "big", "namespace": "default"},
    "spec": {"minMember": 4, "queue": "default"},
    "status": {"phase": "Running", "running": 4}})"));
  EXPECT_EQ(pg.api_version, "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(pg.spec.min_member, 4);
  EXPECT_FALSE(pg.spec.schedule_timeout_seconds.has_value());
  EXPECT_EQ(pg.spec.extra["queue"], "default");
  EXPECT_EQ(pg.extra["status"]["phase"], "Running");
}

// An Experiment as the operator writes it: choices of any JSON, the best trial's values by path,
// and a field this library does not model, all kept.
TEST(RoundTrip, ExperimentWithChoicesAndBestTrial) {
  Experiment e = expectRoundTrip<Experiment>(nlohmann::json::parse(R"({
    "apiVersion": "ringmaster.dev/v1alpha1", "kind": "Experiment",
    "metadata": {"name": "lr", "namespace": "default"},
    "spec": {"algorithm": "random", "seed": 7, "maxTrials": 8, "parallelism": 4,
             "objective": {"metric": "testAccuracy", "goal": "maximize", "target": 0.88},
             "parameters": [
               {"path": "optimizer.learningRate", "min": 0.001, "max": 0.5, "scale": "log"},
               {"path": "model.hidden", "choices": [[128], [512, 512]]}],
             "trialTemplate": {"spec": {"replicas": 1, "trainer": {"epochs": 1}}},
             "futureField": true},
    "status": {"phase": "Running", "trials": 8, "trialsCreated": 5, "progress": "1/8",
               "bestTrial": {"name": "lr-trial-0", "index": 0, "objective": 0.84,
                             "parameters": {"optimizer.learningRate": 0.05,
                                            "model.hidden": [128]}}}})"));
  ASSERT_EQ(e.spec.parameters.size(), 2u);
  EXPECT_EQ(e.spec.parameters[0].scale, "log");
  EXPECT_EQ(e.spec.parameters[1].choices[1], json::array({512, 512}));
  EXPECT_EQ(e.spec.objective->target, 0.88);
  EXPECT_EQ(e.spec.trial_template->spec->replicas, 1);
  EXPECT_EQ(e.spec.extra["futureField"], true);
  EXPECT_EQ(e.status.best_trial->parameters.at("model.hidden"), json::array({128}));
  EXPECT_EQ(e.status.trials_created, 5);
}

TEST(RoundTrip, ConflictStatus409) {
  ApiStatus s = expectRoundTrip<ApiStatus>(loadJson("status_409_conflict.json"));
  EXPECT_TRUE(s.isFailure());
  EXPECT_EQ(s.code, 409);
  EXPECT_EQ(s.reason, "Conflict");
  ASSERT_TRUE(s.details.has_value());
  EXPECT_EQ(s.details->kind, "trainingjobs");  // the plural resource, not the Kind
  EXPECT_EQ(s.details->name, "mnist");
  ASSERT_TRUE(s.metadata.has_value());  // "metadata": {} is kept
}

TEST(RoundTrip, InvalidStatus422WithCauses) {
  ApiStatus s = expectRoundTrip<ApiStatus>(loadJson("status_422_invalid.json"));
  EXPECT_EQ(s.code, 422);
  EXPECT_EQ(s.reason, "Invalid");
  ASSERT_TRUE(s.details.has_value());
  EXPECT_EQ(s.details->kind, "TrainingJob");
  ASSERT_EQ(s.details->causes.size(), 4u);
  EXPECT_EQ(s.details->causes[0].reason, "FieldValueRequired");
  EXPECT_EQ(s.details->causes[0].field, "spec.trainer.image");
  EXPECT_EQ(s.details->causes[3].field, "<nil>");
}

TEST(RoundTrip, FailureStatusBuiltInCodeHasTheServerShape) {
  ApiStatus s = ApiStatus::failure(404, "NotFound", "pods \"x\" not found");
  EXPECT_EQ(encode(s), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"pods \"x\" not found","reason":"NotFound","code":404})"));
}

TEST(RoundTrip, TrainingJobFromTranscript) {
  TrainingJob job = expectRoundTrip<TrainingJob>(loadJson("training_job.json"));
  EXPECT_EQ(job.metadata.generation, 4);
  EXPECT_EQ(job.spec.replicas, 4);
  EXPECT_EQ(job.spec.procs_per_replica, 4);
  EXPECT_EQ(job.spec.launcher, "native");
  ASSERT_TRUE(job.spec.trainer.has_value());
  // The reference CRD's user-program fields are not ours: they survive in `extra`.
  EXPECT_EQ(job.spec.trainer->extra.at("image"), "ghcr.io/ringmaster/examples/mnist:0.1");
  EXPECT_EQ(job.spec.trainer->extra.at("args"), nlohmann::json::array({"--epochs=30"}));
  EXPECT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.world_size, 16);
  EXPECT_EQ(job.status.extra.at("loss"), 0.3177);
  ASSERT_EQ(job.status.conditions.size(), 1u);
  EXPECT_EQ(job.status.conditions[0].observed_generation, 3);
  EXPECT_EQ(job.status.conditions[0].last_transition_time->toString(), "2026-11-22T01:56:11Z");
}

TEST(RoundTrip, TrainingJobWithEveryDesignField) {
  TrainingJob job = expectRoundTrip<TrainingJob>(loadJson("training_job_design.json"));
  ASSERT_TRUE(job.spec.trainer && job.spec.trainer->model && job.spec.trainer->optimizer);
  EXPECT_EQ(job.spec.trainer->model->hidden, (std::vector<int32_t>{512, 512}));
  EXPECT_EQ(job.spec.trainer->optimizer->learning_rate, 0.1);
  EXPECT_EQ(job.spec.trainer->bucket_cap_mb, 25.0);
  EXPECT_EQ(job.spec.trainer->checkpoint->every_steps, 500);
  EXPECT_EQ(job.spec.resources->limits.at("nvidia.com/gpu").value(), 1);
  EXPECT_EQ(job.spec.resources->limits.at("cpu").milliValue(), 500);
  EXPECT_EQ(job.spec.suspend, false);
  EXPECT_EQ(job.spec.active_deadline_seconds, 86400);
  ASSERT_EQ(job.spec.volumes.size(), 3u);
  EXPECT_EQ(job.spec.volumes[1].persistent_volume_claim->claim_name, "fmnist-ckpt");
  EXPECT_EQ(job.spec.volumes[2].empty_dir->size_limit->value(), 2LL << 30);
  EXPECT_EQ(job.status.replicas->ready, 2);
  EXPECT_EQ(job.status.progress->step, 1406);
  EXPECT_EQ(job.status.progress->allreduce_bus_bandwidth, 1.1e9);
  EXPECT_EQ(job.status.progress->resumed_from_step, 200);
}

TEST(RoundTrip, RecorderEventWithNullEventTime) {
  Event event = expectRoundTrip<Event>(loadJson("event.json"));
  EXPECT_EQ(event.reason, "WorkersCreated");
  EXPECT_EQ(event.count, 1);
  EXPECT_EQ(event.involved_object.kind, "TrainingJob");
  EXPECT_EQ(event.involved_object.uid, "a8110b0f-9c88-4267-b508-0805cd59c4b1");
  ASSERT_TRUE(event.event_time.has_value());
  EXPECT_TRUE(event.event_time->isZero());
  EXPECT_EQ(event.reporting_instance, "");  // present and empty, as client-go sends it
  ASSERT_TRUE(event.source.has_value());
  EXPECT_EQ(event.source->component, "ringmaster-operator");
}

TEST(RoundTrip, EventListWhoseItemsLackTypeMeta) {
  List<Event> list = expectRoundTrip<List<Event>>(loadJson("event_list_leader_election.json"));
  EXPECT_EQ(list.kind, "EventList");
  EXPECT_EQ(list.metadata.resource_version, "362");
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items[0].kind, "");
  EXPECT_EQ(list.items[0].reason, "LeaderElection");
  EXPECT_TRUE(list.items[0].metadata.managed_fields.is_string());  // opaque, kept as written
}

TEST(RoundTrip, NodeWithCapacity) {
  Node node = expectRoundTrip<Node>(loadJson("node.json"));
  EXPECT_EQ(node.status.capacity.at("cpu").milliValue(), 16000);
  EXPECT_EQ(node.status.allocatable.at("memory").value(), 64LL << 30);
  ASSERT_EQ(node.status.addresses.size(), 2u);
  EXPECT_EQ(node.status.addresses[0].type, "InternalIP");
  EXPECT_EQ(node.status.conditions[0].last_heartbeat_time->toString(), "2026-11-22T01:59:47Z");
  EXPECT_TRUE(node.status.extra.contains("nodeInfo"));
}

TEST(RoundTrip, WatchStreamWithBookmarks) {
  std::vector<std::string> lines = loadLines("watch_training_jobs.jsonl");
  ASSERT_EQ(lines.size(), 5u);
  std::vector<WatchEventType> types;
  for (const std::string& line : lines) {
    WatchEvent<TrainingJob> event = expectRoundTrip<WatchEvent<TrainingJob>>(json::parse(line));
    types.push_back(event.type);
  }
  EXPECT_EQ(types, (std::vector<WatchEventType>{WatchEventType::kModified, WatchEventType::kAdded,
                                                WatchEventType::kDeleted, WatchEventType::kBookmark,
                                                WatchEventType::kBookmark}));
  core::Result<WatchEvent<TrainingJob>> bookmark =
      decodeText<WatchEvent<TrainingJob>>(lines.back());
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->object.metadata.resource_version, "283");
  EXPECT_EQ(bookmark->object.metadata.name, "");
}

TEST(RoundTrip, WatchErrorEventCarriesExpiredStatus) {
  std::vector<std::string> lines = loadLines("watch_error_410.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  WatchEvent<TrainingJob> event = expectRoundTrip<WatchEvent<TrainingJob>>(json::parse(lines[0]));
  EXPECT_EQ(event.type, WatchEventType::kError);
  EXPECT_EQ(event.error.code, 410);
  EXPECT_EQ(event.error.reason, "Expired");
  EXPECT_EQ(event.object, TrainingJob{});
}

TEST(RoundTrip, HeadlessServiceBuiltInCode) {
  Service svc;
  setTypeMeta(svc);
  svc.metadata.name = "fmnist";
  svc.metadata.namespace_name = "default";
  svc.spec.cluster_ip = "None";
  svc.spec.selector["ringmaster.dev/job-name"] = "fmnist";
  svc.spec.publish_not_ready_addresses = true;
  ServicePort port;
  port.name = "rdzv";
  port.port = 29500;
  port.target_port = IntOrString(29500);
  svc.spec.ports.push_back(port);
  json expected = json::parse(R"({"apiVersion":"v1","kind":"Service",
      "metadata":{"name":"fmnist","namespace":"default"},
      "spec":{"clusterIP":"None","selector":{"ringmaster.dev/job-name":"fmnist"},
              "publishNotReadyAddresses":true,
              "ports":[{"name":"rdzv","port":29500,"targetPort":29500}]}})");
  EXPECT_EQ(encode(svc), expected);
  core::Result<Service> back = decode<Service>(expected);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(*back, svc);
}

TEST(RoundTrip, SecretDataIsBase64OnTheWire) {
  Secret secret;
  setTypeMeta(secret);
  secret.metadata.name = "fmnist-ssh";
  secret.type = "kubernetes.io/ssh-auth";
  secret.data["ssh-privatekey"] = std::string("key\0bytes\xff", 10);
  json j = encode(secret);
  EXPECT_EQ(j["data"]["ssh-privatekey"], "a2V5AGJ5dGVz/w==");
  core::Result<Secret> back = decode<Secret>(j);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(back->data.at("ssh-privatekey"), std::string("key\0bytes\xff", 10));
  EXPECT_EQ(*back, secret);
}

TEST(RoundTrip, ConfigMapWithTextAndBinaryData) {
  json j = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap",
      "metadata":{"name":"fmnist-config","namespace":"default"},
      "data":{"hostfile":"fmnist-worker-0 slots=1\n"},"binaryData":{"blob":"AAEC"}})");
  ConfigMap cm = expectRoundTrip<ConfigMap>(j);
  EXPECT_EQ(cm.data.at("hostfile"), "fmnist-worker-0 slots=1\n");
  EXPECT_EQ(cm.binary_data.at("blob"), std::string("\x00\x01\x02", 3));
}

TEST(RoundTrip, PodSpecWithProbesVolumesAndEnvSources) {
  json j = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-0"},
    "spec":{"restartPolicy":"Never","hostname":"w-0","subdomain":"w","schedulerName":"default-scheduler",
      "serviceAccountName":"default","terminationGracePeriodSeconds":30,"nodeName":"node-1",
      "initContainers":[{"name":"init","image":"busybox","command":["true"]}],
      "containers":[{"name":"trainer","image":"ringmaster/trainer:0.1.0","workingDir":"/work",
        "ports":[{"name":"rdzv","containerPort":29500,"protocol":"TCP"}],
        "resources":{"limits":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"500m"}},
        "env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},
               {"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"s","key":"token","optional":true}}},
               {"name":"CFG","valueFrom":{"configMapKeyRef":{"name":"c","key":"cfg"}}},
               {"name":"EMPTY","value":""}],
        "volumeMounts":[{"name":"data","mountPath":"/data","readOnly":true}],
        "readinessProbe":{"httpGet":{"path":"/ready","port":"metrics"},"initialDelaySeconds":1,
                          "periodSeconds":2,"failureThreshold":3},
        "livenessProbe":{"exec":{"command":["cat","/tmp/alive"]}}},
        {"name":"sidecar","readinessProbe":{"tcpSocket":{"port":8080}}}],
      "volumes":[{"name":"data","hostPath":{"path":"/srv/data"}},
                 {"name":"cfg","configMap":{"name":"c","items":[{"key":"cfg","path":"cfg.yaml","mode":420}],"defaultMode":420}},
                 {"name":"ssh","secret":{"secretName":"s","defaultMode":256}},
                 {"name":"tmp","emptyDir":{"medium":"Memory"}}]},
    "status":{"phase":"Running","podIP":"127.0.1.1","hostIP":"127.0.0.1","startTime":"2026-11-22T10:00:00Z",
      "containerStatuses":[{"name":"trainer","ready":true,"restartCount":2,
        "state":{"running":{"startedAt":"2026-11-22T10:00:01Z"}},
        "lastState":{"terminated":{"exitCode":137,"signal":9,"reason":"Error","message":"killed",
                     "startedAt":"2026-11-22T09:59:00Z","finishedAt":"2026-11-22T10:00:00Z"}}},
        {"name":"sidecar","state":{"waiting":{"reason":"ContainerCreating"}}}]}})");
  Pod pod = expectRoundTrip<Pod>(j);
  const Container& c = pod.spec.containers[0];
  EXPECT_EQ(c.env[0].value_from->field_ref->field_path, "metadata.name");
  EXPECT_EQ(c.env[1].value_from->secret_key_ref->optional, true);
  EXPECT_EQ(c.env[3].value, "");
  EXPECT_EQ(c.readiness_probe->http_get->port.strValue(), "metrics");
  EXPECT_EQ(pod.spec.containers[1].readiness_probe->tcp_socket->port.intValue(), 8080);
  EXPECT_EQ(c.resources->limits.at("memory").value(), 4LL << 30);
  EXPECT_EQ(pod.spec.volumes[1].config_map->items[0].mode, 420);
  EXPECT_EQ(pod.status.container_statuses[0].last_state->terminated->signal, 9);
}

TEST(RoundTrip, BindingAndNamespace) {
  Binding binding = expectRoundTrip<Binding>(json::parse(
      R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"mnist-worker-0"},
          "target":{"apiVersion":"v1","kind":"Node","name":"fake-node-1"}})"));
  EXPECT_EQ(binding.target.name, "fake-node-1");
  Namespace ns = expectRoundTrip<Namespace>(json::parse(
      R"({"kind":"Namespace","apiVersion":"v1","metadata":{"name":"team-a",
          "uid":"1","resourceVersion":"9","creationTimestamp":"2026-11-22T01:00:00Z",
          "labels":{"kubernetes.io/metadata.name":"team-a"}},
          "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}})"));
  EXPECT_EQ(ns.status.phase, "Active");
}

TEST(RoundTrip, NewPodEncodesOnlyWhatWasSet) {
  Pod pod;
  setTypeMeta(pod);
  pod.metadata.name = "w-0";
  Container c;
  c.name = "trainer";
  c.image = "img";
  EnvVar env;
  env.name = "WORLD_SIZE";
  env.value = "2";
  c.env.push_back(env);
  pod.spec.containers.push_back(c);
  EXPECT_EQ(encode(pod), json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-0"},
      "spec":{"containers":[{"name":"trainer","image":"img",
              "env":[{"name":"WORLD_SIZE","value":"2"}]}]}})"));
  EXPECT_EQ(encodeText(Pod{}), R"({"metadata":{}})");
}

}  // namespace
}  // namespace ringmaster::kube
