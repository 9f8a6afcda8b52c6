#include "ringmaster/kube/namespace.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitNamespaceSpec(V& v, S& s) {
  v("finalizers", s.finalizers);
}

template <class V, class S>
void visitNamespaceStatus(V& v, S& s) {
  v("phase", s.phase);
  v("conditions", s.conditions);
}

template <class V, class S>
void visitNamespace(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
  v("status", s.status);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(NamespaceSpec, visitNamespaceSpec)
RM_KUBE_DEFINE_CODEC(NamespaceStatus, visitNamespaceStatus)
RM_KUBE_DEFINE_CODEC(Namespace, visitNamespace)

}  // namespace ringmaster::kube
