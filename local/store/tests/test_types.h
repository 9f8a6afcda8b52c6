#pragma once
// Resource types and a fake clock shared by the store tests.

#include <chrono>
#include <memory>

#include "local/store/object_store.h"

namespace ringmaster::local::testing {

inline ResourceType trainingJobs() {
  ResourceType t;
  t.group = "ringmaster.dev";
  t.version = "v1alpha1";
  t.resource = "trainingjobs";
  t.kind = "TrainingJob";
  t.has_status_subresource = true;
  return t;
}

inline ResourceType configMaps() {
  ResourceType t;
  t.version = "v1";
  t.resource = "configmaps";
  t.kind = "ConfigMap";
  t.builtin = true;
  t.tracks_generation = false;
  t.strategic_merge_patch = true;
  return t;
}

inline ResourceType pods() {
  ResourceType t;
  t.version = "v1";
  t.resource = "pods";
  t.kind = "Pod";
  t.builtin = true;
  t.tracks_generation = false;
  t.has_status_subresource = true;
  t.strategic_merge_patch = true;
  t.graceful_deletion = true;
  t.return_deleted_object = true;
  t.selectable_fields = {"spec.nodeName", "status.phase"};
  return t;
}

inline ResourceType namespaces() {
  ResourceType t;
  t.version = "v1";
  t.resource = "namespaces";
  t.kind = "Namespace";
  t.builtin = true;
  t.namespaced = false;
  t.tracks_generation = false;
  t.has_status_subresource = true;
  return t;
}

// A clock tests move by hand.
struct FakeClock {
  std::shared_ptr<std::chrono::system_clock::time_point> now =
      std::make_shared<std::chrono::system_clock::time_point>(
          std::chrono::sys_days{std::chrono::year{2026} / 11 / 22} + std::chrono::hours{1} +
          std::chrono::minutes{55} + std::chrono::seconds{51});
  Clock clock() const {
    auto n = now;
    return [n] { return *n; };
  }
  void advance(std::chrono::seconds s) { *now += s; }
};

inline WatchOptions watchFrom(std::string rv, bool bookmarks = false) {
  WatchOptions o;
  o.resource_version = std::move(rv);
  o.allow_bookmarks = bookmarks;
  return o;
}

inline DeleteOptions propagation(std::string policy) {
  DeleteOptions o;
  o.propagation_policy = std::move(policy);
  return o;
}

inline const ResourceKey kTj{"ringmaster.dev", "trainingjobs"};
inline const ResourceKey kCm{"", "configmaps"};
inline const ResourceKey kPods{"", "pods"};
inline const ResourceKey kNs{"", "namespaces"};

}  // namespace ringmaster::local::testing
