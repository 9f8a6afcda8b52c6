#pragma once
// ResourceKey and ResourceType: what the store needs to know about one served resource
// (built-in or added at run time by a CRD).
//
// Thread-safety: value types. Failure: none.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::local {

class StatusError;

// Identifies a resource independent of its version: {group, plural}. Core resources have group "".
struct ResourceKey {
  std::string group;
  std::string resource;  // plural, lower case: "trainingjobs"

  auto operator<=>(const ResourceKey&) const = default;
  // "trainingjobs.ringmaster.dev", or "pods" for the core group (Kubernetes' GroupResource text).
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }
};

// How a write treats fields its schema does not know (?fieldValidation=, kube-apiserver's
// default is Warn): Ignore drops them silently, Warn drops them and warns, Strict rejects.
enum class FieldValidation { kIgnore, kWarn, kStrict };

// What an AdmitFn knows about the write beyond the objects, and what it reports back.
struct AdmitContext {
  FieldValidation field_validation = FieldValidation::kWarn;
  bool status_write = false;          // the status subresource is being written
  std::vector<std::string> warnings;  // out: texts for `Warning: 299 - "…"` headers
};

// Called on create (old == nullptr) and on every update/patch after the store's own semantics
// ran; may default, prune or reject the new object (CRD schema validation, pod defaults).
// Returning an error aborts the write. Must not call back into the store.
using AdmitFn = std::function<std::optional<StatusError>(
    nlohmann::json& obj, const nlohmann::json* old, AdmitContext& context)>;

struct ResourceType {
  std::string group;
  std::string version;
  std::string resource;  // plural
  std::string kind;
  bool namespaced = true;
  bool has_status_subresource = false;
  // Built-in types (core/v1 …) versus custom resources: decides some error texts and whether
  // list metadata carries an empty "continue" (unstructured lists do).
  bool builtin = false;
  // metadata.generation is kept (custom resources, workloads); false for pods, configmaps, …
  bool tracks_generation = true;
  // application/strategic-merge-patch+json is accepted (built-in kinds only, as upstream).
  bool strategic_merge_patch = false;
  // Pods: DELETE of a bound, non-terminal pod sets deletionTimestamp + grace period first.
  bool graceful_deletion = false;
  // DELETE answers with the deleted object (pods) instead of a Status Success (most types).
  bool return_deleted_object = false;
  // Field selectors beyond metadata.name / metadata.namespace, as dotted JSON paths
  // ("status.phase", "spec.nodeName", "involvedObject.uid").
  std::vector<std::string> selectable_fields;
  AdmitFn admit;

  ResourceKey key() const { return {group, resource}; }
  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string listKind() const { return kind + "List"; }
};

}  // namespace ringmaster::local
