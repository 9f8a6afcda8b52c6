#include "operator/cache_trim.h"

#include <utility>

#include "operator/builders.h"
#include "ringmaster/contract/store_secret.h"

namespace ringmaster::op {
namespace {

void trimMeta(kube::ObjectMeta& meta) {
  meta.annotations.clear();
  meta.managed_fields = nullptr;
  meta.extra = nullptr;
}

}  // namespace

void trimForCache(kube::Pod& pod) {
  trimMeta(pod.metadata);
  kube::PodSpec spec;
  spec.node_name = std::move(pod.spec.node_name);
  for (kube::Container& c : pod.spec.containers) {
    if (c.name != kWorkerContainer) continue;
    kube::Container worker;
    worker.name = std::move(c.name);
    for (kube::EnvVar& e : c.env) {
      if (e.name == contract::store_secret::kEnv) worker.env.push_back(std::move(e));
    }
    spec.containers.push_back(std::move(worker));
    break;
  }
  pod.spec = std::move(spec);
  pod.status.extra = nullptr;
  pod.extra = nullptr;
}

void trimForCache(kube::Service& service) {
  trimMeta(service.metadata);
  service.spec = {};
  service.status = nullptr;
  service.extra = nullptr;
}

void trimForCache(kube::ConfigMap& config_map) {
  trimMeta(config_map.metadata);
  config_map.data.clear();
  config_map.binary_data.clear();
  config_map.extra = nullptr;
}

}  // namespace ringmaster::op
