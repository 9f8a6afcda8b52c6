#include "ringmaster/kube/config_map.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitConfigMap(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("data", s.data);
  v.bytesMap("binaryData", s.binary_data);
  v("immutable", s.immutable);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(ConfigMap, visitConfigMap)

}  // namespace ringmaster::kube
