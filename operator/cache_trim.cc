#include "operator/cache_trim.h"

#include "operator/builders.h"

namespace ringmaster::op {

OwnedChild ownedChildOf(const kube::ObjectMeta& meta) {
  OwnedChild child;
  child.metadata = {meta.name, meta.namespace_name};
  if (const kube::OwnerReference* owner = controllerOf(meta)) child.controller_uid = owner->uid;
  return child;
}

void trimForCache(kube::TrainingJob& job) {
  job.metadata.annotations.clear();
  job.metadata.managed_fields = nullptr;
}

}  // namespace ringmaster::op
