#pragma once
// What the operator's caches keep of the objects it owns. Its pass reads a child's identity,
// owner, labels and deletion, and of a pod also the node it is bound to, its status and the
// rendezvous secret in its worker's environment; everything else (the pod's containers, a
// ConfigMap's data, a Service's spec, managedFields) is dropped as it enters the cache. Watching
// 1,000 jobs' pods, that is most of the operator's memory.
//
// Thread-safety: pure functions on the object they are given. Failure: none.

#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/service.h"

namespace ringmaster::op {

void trimForCache(kube::Pod& pod);
void trimForCache(kube::Service& service);
void trimForCache(kube::ConfigMap& config_map);

}  // namespace ringmaster::op
