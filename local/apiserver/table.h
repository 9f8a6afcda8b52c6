#pragma once
// meta.k8s.io/v1 Table answers for `kubectl get`:
// columnDefinitions (Name first), one row per object with cells computed here and `object`
// per includeObject (None / Metadata = PartialObjectMetadata / Object). Custom resources use
// their CRD's additionalPrinterColumns (simple JSONPaths: `.a.b`, `.a[0].b`); `date` cells are
// rendered as ages like kube-apiserver does ("26s", "8m7s", "3d").
//
// Thread-safety: pure functions. Failure: none (a path that finds nothing yields null).

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"
#include "local/store/watch.h"

namespace ringmaster::local {

enum class IncludeObject { kNone, kMetadata, kObject };
IncludeObject parseIncludeObject(const std::string& text);  // default Metadata

// Kubernetes' duration.HumanDuration.
std::string humanDuration(std::chrono::seconds d);
// The value at a simple JSONPath, or nullptr json when absent.
nlohmann::json evalJsonPath(const nlohmann::json& obj, const std::string& path);

nlohmann::ordered_json tableColumns(const ApiResource& resource);
nlohmann::ordered_json tableRow(const ApiResource& resource, const nlohmann::json& obj,
                                IncludeObject include, std::chrono::system_clock::time_point now);
// A whole Table; `with_columns` false gives "columnDefinitions":null (watch events after the
// first).
std::string tableText(const ApiResource& resource, const std::vector<ObjectPtr>& objects,
                      uint64_t resource_version, IncludeObject include, bool with_columns,
                      std::chrono::system_clock::time_point now);

}  // namespace ringmaster::local
