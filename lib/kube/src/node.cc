#include "ringmaster/kube/node.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitNodeAddress(V& v, S& s) {
  v("type", s.type);
  v("address", s.address);
}

template <class V, class S>
void visitNodeSpec(V& v, S& s) {
  v("unschedulable", s.unschedulable);
  v("podCIDR", s.pod_cidr);
  v("taints", s.taints);
}

template <class V, class S>
void visitTaint(V& v, S& s) {
  v("key", s.key);
  v("value", s.value);
  v("effect", s.effect);
  v("timeAdded", s.time_added);
}

template <class V, class S>
void visitNodeStatus(V& v, S& s) {
  v("capacity", s.capacity);
  v("allocatable", s.allocatable);
  v("conditions", s.conditions);
  v("addresses", s.addresses);
}

template <class V, class S>
void visitNode(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
  v("status", s.status);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(NodeAddress, visitNodeAddress)
RM_KUBE_DEFINE_CODEC(Taint, visitTaint)
RM_KUBE_DEFINE_CODEC(NodeSpec, visitNodeSpec)
RM_KUBE_DEFINE_CODEC(NodeStatus, visitNodeStatus)
RM_KUBE_DEFINE_CODEC(Node, visitNode)

}  // namespace ringmaster::kube
