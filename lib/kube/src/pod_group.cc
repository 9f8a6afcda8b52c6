#include "ringmaster/kube/pod_group.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitPodGroupSpec(V& v, S& s) {
  v("minMember", s.min_member);
  v("scheduleTimeoutSeconds", s.schedule_timeout_seconds);
}

template <class V, class S>
void visitPodGroup(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(PodGroupSpec, visitPodGroupSpec)
RM_KUBE_DEFINE_CODEC(PodGroup, visitPodGroup)

}  // namespace ringmaster::kube
