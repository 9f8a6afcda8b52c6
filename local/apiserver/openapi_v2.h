#pragma once
// The OpenAPI v2 document (/openapi/v2): every group-version's component schemas of the v3
// documents (openapi.h) in one Swagger 2.0 `definitions` map, as kube-apiserver serves it.
// client-go (helm's client-side validation, kubectl's older paths) downloads it as the protobuf
// of gnostic's openapi.v2.Document and parses it with kube-openapi, which rejects what v2 cannot
// say: so refs point at #/definitions/, an array has exactly one `items` schema, and v3-only
// keywords (nullable, anyOf, oneOf, not) are dropped, which leaves such a value unconstrained.
// Paths are not listed: clients learn which operations exist from discovery and the v3
// documents.
//
// Thread-safety: pure. Failure: none (a schema keyword v2 has no field for is left out).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"

namespace ringmaster::local {

inline constexpr const char* kOpenApiV2ProtobufType =
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

// The Swagger 2.0 document as JSON.
nlohmann::json openApiV2Document(const std::vector<ApiResource>& resources);

// `document` (openApiV2Document's) as the protobuf of openapi.v2.Document.
std::string encodeOpenApiV2(const nlohmann::json& document);

}  // namespace ringmaster::local
