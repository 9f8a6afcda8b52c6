#include "ringmaster/kube/pod.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitObjectFieldSelector(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("fieldPath", s.field_path);
}

template <class V, class S>
void visitKeySelector(V& v, S& s) {
  v("name", s.name);
  v("key", s.key);
  v("optional", s.optional);
}

template <class V, class S>
void visitEnvVarSource(V& v, S& s) {
  v("fieldRef", s.field_ref);
  v("secretKeyRef", s.secret_key_ref);
  v("configMapKeyRef", s.config_map_key_ref);
}

template <class V, class S>
void visitEnvVar(V& v, S& s) {
  v("name", s.name);
  v("value", s.value);
  v("valueFrom", s.value_from);
}

template <class V, class S>
void visitContainerPort(V& v, S& s) {
  v("name", s.name);
  v("containerPort", s.container_port);
  v("protocol", s.protocol);
  v("hostPort", s.host_port);
}

template <class V, class S>
void visitResourceRequirements(V& v, S& s) {
  v("limits", s.limits);
  v("requests", s.requests);
}

template <class V, class S>
void visitVolumeMount(V& v, S& s) {
  v("name", s.name);
  v("mountPath", s.mount_path);
  v("readOnly", s.read_only);
  v("subPath", s.sub_path);
}

template <class V, class S>
void visitHttpGetAction(V& v, S& s) {
  v("path", s.path);
  v.required("port", s.port);
  v("host", s.host);
  v("scheme", s.scheme);
}

template <class V, class S>
void visitExecAction(V& v, S& s) {
  v("command", s.command);
}

template <class V, class S>
void visitTcpSocketAction(V& v, S& s) {
  v.required("port", s.port);
  v("host", s.host);
}

template <class V, class S>
void visitProbe(V& v, S& s) {
  v("httpGet", s.http_get);
  v("exec", s.exec);
  v("tcpSocket", s.tcp_socket);
  v("initialDelaySeconds", s.initial_delay_seconds);
  v("periodSeconds", s.period_seconds);
  v("timeoutSeconds", s.timeout_seconds);
  v("successThreshold", s.success_threshold);
  v("failureThreshold", s.failure_threshold);
}

template <class V, class S>
void visitCapabilities(V& v, S& s) {
  v("add", s.add);
  v("drop", s.drop);
}

template <class V, class S>
void visitSeccompProfile(V& v, S& s) {
  v.required("type", s.type);
  v("localhostProfile", s.localhost_profile);
}

template <class V, class S>
void visitSecurityContext(V& v, S& s) {
  v("runAsUser", s.run_as_user);
  v("runAsGroup", s.run_as_group);
  v("runAsNonRoot", s.run_as_non_root);
  v("privileged", s.privileged);
  v("allowPrivilegeEscalation", s.allow_privilege_escalation);
  v("readOnlyRootFilesystem", s.read_only_root_filesystem);
  v("capabilities", s.capabilities);
  v("seccompProfile", s.seccomp_profile);
}

template <class V, class S>
void visitPodSecurityContext(V& v, S& s) {
  v("runAsUser", s.run_as_user);
  v("runAsGroup", s.run_as_group);
  v("runAsNonRoot", s.run_as_non_root);
  v("fsGroup", s.fs_group);
  v("supplementalGroups", s.supplemental_groups);
  v("seccompProfile", s.seccomp_profile);
}

template <class V, class S>
void visitContainer(V& v, S& s) {
  v("name", s.name);
  v("image", s.image);
  v("command", s.command);
  v("args", s.args);
  v("env", s.env);
  v("ports", s.ports);
  v("resources", s.resources);
  v("volumeMounts", s.volume_mounts);
  v("workingDir", s.working_dir);
  v("readinessProbe", s.readiness_probe);
  v("livenessProbe", s.liveness_probe);
  v("securityContext", s.security_context);
  v("terminationMessagePath", s.termination_message_path);
  v("terminationMessagePolicy", s.termination_message_policy);
}

template <class V, class S>
void visitKeyToPath(V& v, S& s) {
  v("key", s.key);
  v("path", s.path);
  v("mode", s.mode);
}

template <class V, class S>
void visitEmptyDir(V& v, S& s) {
  v("medium", s.medium);
  v("sizeLimit", s.size_limit);
}

template <class V, class S>
void visitHostPath(V& v, S& s) {
  v("path", s.path);
  v("type", s.type);
}

template <class V, class S>
void visitConfigMapVolume(V& v, S& s) {
  v("name", s.name);
  v("items", s.items);
  v("defaultMode", s.default_mode);
  v("optional", s.optional);
}

template <class V, class S>
void visitSecretVolume(V& v, S& s) {
  v("secretName", s.secret_name);
  v("items", s.items);
  v("defaultMode", s.default_mode);
  v("optional", s.optional);
}

template <class V, class S>
void visitPvcVolume(V& v, S& s) {
  v("claimName", s.claim_name);
  v("readOnly", s.read_only);
}

template <class V, class S>
void visitDownwardApiFile(V& v, S& s) {
  v("path", s.path);
  v("fieldRef", s.field_ref);
  v("mode", s.mode);
}

template <class V, class S>
void visitDownwardApiVolume(V& v, S& s) {
  v("items", s.items);
  v("defaultMode", s.default_mode);
}

template <class V, class S>
void visitKeyProjection(V& v, S& s) {
  v("name", s.name);
  v("items", s.items);
  v("optional", s.optional);
}

template <class V, class S>
void visitTokenProjection(V& v, S& s) {
  v("audience", s.audience);
  v("expirationSeconds", s.expiration_seconds);
  v("path", s.path);
}

template <class V, class S>
void visitVolumeProjection(V& v, S& s) {
  v("configMap", s.config_map);
  v("secret", s.secret);
  v("downwardAPI", s.downward_api);
  v("serviceAccountToken", s.service_account_token);
}

template <class V, class S>
void visitProjectedVolume(V& v, S& s) {
  v("sources", s.sources);
  v("defaultMode", s.default_mode);
}

template <class V, class S>
void visitVolume(V& v, S& s) {
  v("name", s.name);
  v("emptyDir", s.empty_dir);
  v("hostPath", s.host_path);
  v("configMap", s.config_map);
  v("secret", s.secret);
  v("persistentVolumeClaim", s.persistent_volume_claim);
  v("projected", s.projected);
  v("downwardAPI", s.downward_api);
}

template <class V, class S>
void visitPodSpec(V& v, S& s) {
  v("initContainers", s.init_containers);
  v("containers", s.containers);
  v("volumes", s.volumes);
  v("restartPolicy", s.restart_policy);
  v("nodeName", s.node_name);
  v("hostname", s.hostname);
  v("subdomain", s.subdomain);
  v("schedulerName", s.scheduler_name);
  v("serviceAccountName", s.service_account_name);
  v("automountServiceAccountToken", s.automount_service_account_token);
  v("terminationGracePeriodSeconds", s.termination_grace_period_seconds);
  v("securityContext", s.security_context);
  v("nodeSelector", s.node_selector);
  v("tolerations", s.tolerations);
  v("affinity", s.affinity);
  v("topologySpreadConstraints", s.topology_spread_constraints);
  v("priorityClassName", s.priority_class_name);
  v("imagePullSecrets", s.image_pull_secrets);
  v("schedulingGates", s.scheduling_gates);
}

template <class V, class S>
void visitToleration(V& v, S& s) {
  v("key", s.key);
  v("operator", s.operator_name);
  v("value", s.value);
  v("effect", s.effect);
  v("tolerationSeconds", s.toleration_seconds);
}

template <class V, class S>
void visitNamed(V& v, S& s) {
  v("name", s.name);
}

template <class V, class S>
void visitPodTemplateSpec(V& v, S& s) {
  v("metadata", s.metadata);
  v("spec", s.spec);
}

template <class V, class S>
void visitWaiting(V& v, S& s) {
  v("reason", s.reason);
  v("message", s.message);
}

template <class V, class S>
void visitRunning(V& v, S& s) {
  v("startedAt", s.started_at);
}

template <class V, class S>
void visitTerminated(V& v, S& s) {
  v("exitCode", s.exit_code);
  v("signal", s.signal);
  v("reason", s.reason);
  v("message", s.message);
  v("startedAt", s.started_at);
  v("finishedAt", s.finished_at);
  v("containerID", s.container_id);
}

template <class V, class S>
void visitContainerState(V& v, S& s) {
  v("waiting", s.waiting);
  v("running", s.running);
  v("terminated", s.terminated);
}

template <class V, class S>
void visitContainerStatus(V& v, S& s) {
  v("name", s.name);
  v("state", s.state);
  v("lastState", s.last_state);
  v("ready", s.ready);
  v("restartCount", s.restart_count);
  v("image", s.image);
  v("imageID", s.image_id);
  v("containerID", s.container_id);
  v("started", s.started);
}

template <class V, class S>
void visitPodStatus(V& v, S& s) {
  v("phase", s.phase);
  v("conditions", s.conditions);
  v("message", s.message);
  v("reason", s.reason);
  v("hostIP", s.host_ip);
  v("podIP", s.pod_ip);
  v("startTime", s.start_time);
  v("initContainerStatuses", s.init_container_statuses);
  v("containerStatuses", s.container_statuses);
}

template <class V, class S>
void visitPod(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
  v("status", s.status);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(ObjectFieldSelector, visitObjectFieldSelector)
RM_KUBE_DEFINE_CODEC(KeySelector, visitKeySelector)
RM_KUBE_DEFINE_CODEC(EnvVarSource, visitEnvVarSource)
RM_KUBE_DEFINE_CODEC(EnvVar, visitEnvVar)
RM_KUBE_DEFINE_CODEC(ContainerPort, visitContainerPort)
RM_KUBE_DEFINE_CODEC(ResourceRequirements, visitResourceRequirements)
RM_KUBE_DEFINE_CODEC(VolumeMount, visitVolumeMount)
RM_KUBE_DEFINE_CODEC(HttpGetAction, visitHttpGetAction)
RM_KUBE_DEFINE_CODEC(ExecAction, visitExecAction)
RM_KUBE_DEFINE_CODEC(TcpSocketAction, visitTcpSocketAction)
RM_KUBE_DEFINE_CODEC(Probe, visitProbe)
RM_KUBE_DEFINE_CODEC(Capabilities, visitCapabilities)
RM_KUBE_DEFINE_CODEC(SeccompProfile, visitSeccompProfile)
RM_KUBE_DEFINE_CODEC(SecurityContext, visitSecurityContext)
RM_KUBE_DEFINE_CODEC(PodSecurityContext, visitPodSecurityContext)
RM_KUBE_DEFINE_CODEC(Container, visitContainer)
RM_KUBE_DEFINE_CODEC(KeyToPath, visitKeyToPath)
RM_KUBE_DEFINE_CODEC(EmptyDirVolumeSource, visitEmptyDir)
RM_KUBE_DEFINE_CODEC(HostPathVolumeSource, visitHostPath)
RM_KUBE_DEFINE_CODEC(ConfigMapVolumeSource, visitConfigMapVolume)
RM_KUBE_DEFINE_CODEC(SecretVolumeSource, visitSecretVolume)
RM_KUBE_DEFINE_CODEC(PersistentVolumeClaimVolumeSource, visitPvcVolume)
RM_KUBE_DEFINE_CODEC(DownwardApiVolumeFile, visitDownwardApiFile)
RM_KUBE_DEFINE_CODEC(DownwardApiVolumeSource, visitDownwardApiVolume)
RM_KUBE_DEFINE_CODEC(KeyProjection, visitKeyProjection)
RM_KUBE_DEFINE_CODEC(ServiceAccountTokenProjection, visitTokenProjection)
RM_KUBE_DEFINE_CODEC(VolumeProjection, visitVolumeProjection)
RM_KUBE_DEFINE_CODEC(ProjectedVolumeSource, visitProjectedVolume)
RM_KUBE_DEFINE_CODEC(Volume, visitVolume)
RM_KUBE_DEFINE_CODEC(Toleration, visitToleration)
RM_KUBE_DEFINE_CODEC(LocalObjectReference, visitNamed)
RM_KUBE_DEFINE_CODEC(PodSchedulingGate, visitNamed)
RM_KUBE_DEFINE_CODEC(PodSpec, visitPodSpec)
RM_KUBE_DEFINE_CODEC(PodTemplateSpec, visitPodTemplateSpec)
RM_KUBE_DEFINE_CODEC(ContainerStateWaiting, visitWaiting)
RM_KUBE_DEFINE_CODEC(ContainerStateRunning, visitRunning)
RM_KUBE_DEFINE_CODEC(ContainerStateTerminated, visitTerminated)
RM_KUBE_DEFINE_CODEC(ContainerState, visitContainerState)
RM_KUBE_DEFINE_CODEC(ContainerStatus, visitContainerStatus)
RM_KUBE_DEFINE_CODEC(PodStatus, visitPodStatus)
RM_KUBE_DEFINE_CODEC(Pod, visitPod)

}  // namespace ringmaster::kube
