#include "ringmaster/kube/network_policy.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitNetworkPolicy(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(NetworkPolicy, visitNetworkPolicy)

}  // namespace ringmaster::kube
