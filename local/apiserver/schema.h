#pragma once
// Structural OpenAPI v3 schemas of CRDs (apiextensions.k8s.io/v1 openAPIV3Schema), applied to
// custom resources as kube-apiserver does: unknown fields pruned (reported for
// fieldValidation=Strict/Warn), nulls of non-nullable fields dropped, `default`s applied, then
// validation (type, required, enum, minimum/maximum/exclusive*, multipleOf, minLength/maxLength,
// pattern, minItems/maxItems/uniqueItems, minProperties/maxProperties, format, nullable,
// x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields, additionalProperties) with
// kube-apiserver's cause texts, then `x-kubernetes-validations` CEL rules
// (f3d) through cel.h.
//
// Thread-safety: pure functions (the "unsupported rule" log is guarded). Failure: validation
// problems are returned as StatusCauses; nothing throws.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/store/status_error.h"

namespace ringmaster::local {

// Drops fields the schema does not specify (outside x-kubernetes-preserve-unknown-fields), adds
// their paths ("spec.gpus", "spec.env[0].x") to `unknown`, and drops nulls of non-nullable
// fields that have no default. The root's apiVersion, kind and metadata are always kept.
void pruneUnknownFields(nlohmann::json& obj, const nlohmann::json& schema,
                        std::vector<std::string>* unknown);

// Sets `default` values for absent fields (and nulls of non-nullable fields), top down.
void applyDefaults(nlohmann::json& obj, const nlohmann::json& schema);

// The OpenAPI checks; causes in kube-apiserver's order (Required, then NotSupported, then the
// rest, each in field order).
std::vector<StatusCause> validateSchema(const nlohmann::json& obj, const nlohmann::json& schema);

// The x-kubernetes-validations rules. `old` is the stored object on updates (enables transition
// rules). Rules outside the supported CEL subset are accepted and logged once.
std::vector<StatusCause> validateCelRules(const nlohmann::json& obj, const nlohmann::json* old,
                                          const nlohmann::json& schema);

// Whether the schema has any x-kubernetes-validations rule.
bool schemaHasCelRules(const nlohmann::json& schema);

// Structural-schema problems of a CRD version's openAPIV3Schema found at `path`
// ("spec.versions[0].schema.openAPIV3Schema"), as 422 causes.
std::vector<StatusCause> checkStructuralSchema(const nlohmann::json& schema,
                                               const std::string& path);

// The whole pipeline for one write of a custom resource: prune, default, validate, CEL.
// `status_only` keeps only causes under status (a status subresource write). `more_causes`, when
// set, adds the checks that come between the schema's and the rules' (the scale subresource's).
struct SchemaOutcome {
  std::vector<std::string> unknown_fields;
  std::vector<StatusCause> causes;
};
SchemaOutcome admitCustomResource(
    nlohmann::json& obj, const nlohmann::json* old, const nlohmann::json& schema, bool status_only,
    const std::function<std::vector<StatusCause>(const nlohmann::json&)>& more_causes = {});

}  // namespace ringmaster::local
