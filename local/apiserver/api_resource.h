#pragma once
// ApiResource: everything the API server knows about one served resource beyond what the store
// needs (resource_type.h): its discovery names (singular, short names, categories, verbs) and how
// `kubectl get` prints it (Table columns). Built-in resources are declared in builtin_types.cc;
// custom resources come from their CustomResourceDefinition (crd.cc).
//
// Thread-safety: value types. Failure: none.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "local/store/resource_type.h"

namespace ringmaster::local {

// One CRD additionalPrinterColumn (or a built-in column computed in table.cc).
struct PrinterColumn {
  std::string name;         // "Phase"
  std::string type;         // string, integer, number, boolean, date
  std::string format;       // "" or "name"
  std::string description;  // shown by `kubectl explain`-like clients; never empty on the wire
  int priority = 0;         // >0: only with -o wide
  std::string json_path;    // ".status.phase" (custom resources)
};

// How rows are computed: from printer columns (custom resources), or a built-in printer.
enum class TablePrinter {
  kDefault,
  kColumns,
  kPod,
  kConfigMap,
  kNamespace,
  kSecret,
  kService,
  kServiceAccount,
  kDeployment,
  kReplicaSet,
  kNode,
  kEvent,  // kube-apiserver's event columns: Name is the last one (wide only), not the first
  kScale,  // an autoscaling/v1 Scale: Desired, Available, Age
};

// A custom resource's scale subresource (autoscaling/v1 Scale, scale.h): where its replica
// counts live, as the CRD's subresources.scale names them (".spec.replicas").
struct ScaleSubresource {
  std::string spec_replicas_path;
  std::string status_replicas_path;
  std::string label_selector_path;  // "" when the CRD names none
};

struct ApiResource {
  ResourceType type;
  std::string singular;  // "" for built-ins (as kube-apiserver 1.26 reports them)
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get",
                                    "list",   "patch",  "update",           "watch"};
  TablePrinter printer = TablePrinter::kDefault;
  std::vector<PrinterColumn> columns;  // kColumns: the CRD's columns (Name is added in front)
  // Custom resources: the version's openAPIV3Schema (published under /openapi/v3); null for
  // built-ins (their schemas live in openapi.cc).
  nlohmann::json schema;
  std::optional<ScaleSubresource> scale;  // served as <resource>/scale when set
};

}  // namespace ringmaster::local
