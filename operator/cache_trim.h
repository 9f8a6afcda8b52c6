#pragma once
// What the operator's caches keep of what they watch. Of a Service or ConfigMap a job owns, a
// pass reads only whether it exists and who controls it (an OwnedChild); of a pod, the facts in
// a WorkerPod (worker_pod.h); of a TrainingJob, all but what nothing reads: its annotations
// (kubectl's last-applied-configuration repeats the whole spec) and managedFields. Status writes
// go to the status subresource, which takes the status alone, so the trimmed metadata is never
// written back.
//
// Thread-safety: pure functions on the object they are given. Failure: none.

#include <string>

#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// A cached object's key: kube::objectKey reads metadata.namespace_name and metadata.name.
struct CachedName {
  std::string name;
  std::string namespace_name;
  bool operator==(const CachedName&) const = default;
};

struct OwnedChild {
  CachedName metadata;
  std::string controller_uid;  // the uid of its controlling owner ("" without one)
  bool operator==(const OwnedChild&) const = default;
};

OwnedChild ownedChildOf(const kube::ObjectMeta& meta);
template <class T>
OwnedChild ownedChildOf(const T& object) {
  return ownedChildOf(object.metadata);
}

void trimForCache(kube::TrainingJob& job);

}  // namespace ringmaster::op
