#include "ringmaster/kube/service.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitServicePort(V& v, S& s) {
  v("name", s.name);
  v("port", s.port);
  v("targetPort", s.target_port);
  v("protocol", s.protocol);
  v("nodePort", s.node_port);
}

template <class V, class S>
void visitServiceSpec(V& v, S& s) {
  v("clusterIP", s.cluster_ip);
  v("selector", s.selector);
  v("ports", s.ports);
  v("publishNotReadyAddresses", s.publish_not_ready_addresses);
  v("type", s.type);
}

template <class V, class S>
void visitService(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
  v("status", s.status);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(ServicePort, visitServicePort)
RM_KUBE_DEFINE_CODEC(ServiceSpec, visitServiceSpec)
RM_KUBE_DEFINE_CODEC(Service, visitService)

}  // namespace ringmaster::kube
