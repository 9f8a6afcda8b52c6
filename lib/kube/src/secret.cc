#include "ringmaster/kube/secret.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitSecret(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v.bytesMap("data", s.data);
  v("stringData", s.string_data);
  v("type", s.type);
  v("immutable", s.immutable);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(Secret, visitSecret)

}  // namespace ringmaster::kube
