#include "ringmaster/kube/binding.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitBinding(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v.required("target", s.target);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(Binding, visitBinding)

}  // namespace ringmaster::kube
