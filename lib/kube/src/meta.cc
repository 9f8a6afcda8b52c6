#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitTypeMeta(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
}

template <class V, class S>
void visitOwnerReference(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v("name", s.name);
  v("uid", s.uid);
  v("controller", s.controller);
  v("blockOwnerDeletion", s.block_owner_deletion);
}

template <class V, class S>
void visitObjectMeta(V& v, S& s) {
  v("name", s.name);
  v("generateName", s.generate_name);
  v("namespace", s.namespace_name);
  v("uid", s.uid);
  v("resourceVersion", s.resource_version);
  v("generation", s.generation);
  v("creationTimestamp", s.creation_timestamp);
  v("deletionTimestamp", s.deletion_timestamp);
  v("deletionGracePeriodSeconds", s.deletion_grace_period_seconds);
  v("labels", s.labels);
  v("annotations", s.annotations);
  v("ownerReferences", s.owner_references);
  v("finalizers", s.finalizers);
  v("managedFields", s.managed_fields);
}

template <class V, class S>
void visitListMeta(V& v, S& s) {
  v("resourceVersion", s.resource_version);
  v("continue", s.continue_token);
  v("remainingItemCount", s.remaining_item_count);
}

template <class V, class S>
void visitCondition(V& v, S& s) {
  v("type", s.type);
  v("status", s.status);
  v("reason", s.reason);
  v("message", s.message);
  v("lastTransitionTime", s.last_transition_time);
  v("lastProbeTime", s.last_probe_time);
  v("lastHeartbeatTime", s.last_heartbeat_time);
  v("observedGeneration", s.observed_generation);
}

template <class V, class S>
void visitObjectReference(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v("namespace", s.namespace_name);
  v("name", s.name);
  v("uid", s.uid);
  v("resourceVersion", s.resource_version);
  v("fieldPath", s.field_path);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(TypeMeta, visitTypeMeta)
RM_KUBE_DEFINE_CODEC(OwnerReference, visitOwnerReference)
RM_KUBE_DEFINE_CODEC(ObjectMeta, visitObjectMeta)
RM_KUBE_DEFINE_CODEC(ListMeta, visitListMeta)
RM_KUBE_DEFINE_CODEC(Condition, visitCondition)
RM_KUBE_DEFINE_CODEC(ObjectReference, visitObjectReference)

}  // namespace ringmaster::kube
