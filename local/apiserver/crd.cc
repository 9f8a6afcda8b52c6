#include "local/apiserver/crd.h"

#include "local/apiserver/scale.h"
#include "local/apiserver/schema.h"
#include "ringmaster/core/json.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using core::stringMember;

std::vector<std::string> strings(const json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<StatusCause> problems(const json& crd) {
  std::vector<StatusCause> causes;
  auto required = [&](const std::string& field) {
    causes.push_back({"FieldValueRequired", "Required value", field});
  };
  const json spec = crd.value("spec", json::object());
  const json names = spec.value("names", json::object());
  if (stringMember(spec, "group").empty()) required("spec.group");
  if (stringMember(names, "plural").empty()) required("spec.names.plural");
  if (stringMember(names, "kind").empty()) required("spec.names.kind");
  auto scope = stringMember(spec, "scope");
  if (scope != "Namespaced" && scope != "Cluster") {
    causes.push_back(
        {"FieldValueNotSupported",
         "Unsupported value: \"" + scope + "\": supported values: \"Cluster\", \"Namespaced\"",
         "spec.scope"});
  }
  const json versions = spec.value("versions", json::array());
  if (!versions.is_array() || versions.empty()) required("spec.versions");
  if (versions.is_array()) {
    for (size_t i = 0; i < versions.size(); ++i) {
      const std::string at = "spec.versions[" + std::to_string(i) + "].schema.openAPIV3Schema";
      const json& v = versions[i];
      const json* schema = nullptr;
      if (v.is_object() && v.contains("schema") && v["schema"].is_object() &&
          v["schema"].contains("openAPIV3Schema")) {
        schema = &v["schema"]["openAPIV3Schema"];
      }
      if (!schema) {
        causes.push_back({"FieldValueRequired", "Required value: schemas are required", at});
        continue;
      }
      for (auto& c : checkStructuralSchema(*schema, at)) causes.push_back(std::move(c));
      for (auto& c : scaleSubresourceCauses(
               v, "spec.versions[" + std::to_string(i) + "].subresources.scale")) {
        causes.push_back(std::move(c));
      }
    }
  }
  if (causes.empty()) {
    const std::string expected = stringMember(names, "plural") + "." + stringMember(spec, "group");
    if (stringMember(crd.value("metadata", json::object()), "name") != expected) {
      causes.push_back({"FieldValueInvalid",
                        "Invalid value: \"" + stringMember(crd["metadata"], "name") +
                            "\": must be spec.names.plural+\".\"+spec.group",
                        "metadata.name"});
    }
  }
  return causes;
}

// The store's admit hook for a custom resource: prune, default and validate with the storage
// version's schema; unknown fields follow ?fieldValidation.
AdmitFn schemaAdmitter(json schema, std::string kind, std::string group, std::string version,
                       std::optional<ScaleSubresource> scale) {
  return [schema = std::move(schema), kind = std::move(kind), group = std::move(group),
          version = std::move(version), scale = std::move(scale)](
             json& obj, const json* old, AdmitContext& context) -> std::optional<StatusError> {
    std::function<std::vector<StatusCause>(const json&)> scale_causes;
    if (scale) {
      scale_causes = [&](const json& o) { return scaleCauses(*scale, o, context.status_write); };
    }
    SchemaOutcome outcome =
        admitCustomResource(obj, old, schema, context.status_write, scale_causes);
    if (!outcome.unknown_fields.empty() && context.field_validation != FieldValidation::kIgnore) {
      if (context.field_validation == FieldValidation::kStrict) {
        std::string fields;
        for (const auto& f : outcome.unknown_fields) {
          fields += (fields.empty() ? "" : ", ") + std::string("unknown field \"") + f + "\"";
        }
        return badRequestError(kind + " in version \"" + version + "\" cannot be handled as a " +
                               kind + ": strict decoding error: " + fields);
      }
      for (const auto& f : outcome.unknown_fields) {
        context.warnings.push_back("unknown field \"" + f + "\"");
      }
    }
    if (outcome.causes.empty()) return std::nullopt;
    const json& meta = obj.contains("metadata") ? obj["metadata"] : json::object();
    return invalidError(kind, group, stringMember(meta, "name"), std::move(outcome.causes));
  };
}

}  // namespace

const nlohmann::json* crdVersionSchema(const json& version) {
  if (!version.is_object()) return nullptr;
  auto s = version.find("schema");
  if (s == version.end() || !s->is_object()) return nullptr;
  auto o = s->find("openAPIV3Schema");
  if (o == s->end() || !o->is_object()) return nullptr;
  return &*o;
}

std::optional<StatusError> validateCrd(const json& crd) {
  auto causes = problems(crd);
  if (causes.empty()) return std::nullopt;
  return invalidError("CustomResourceDefinition", "apiextensions.k8s.io",
                      stringMember(crd.value("metadata", json::object()), "name"),
                      std::move(causes));
}

ApiResult<CrdResources> resourcesFromCrd(const json& crd) {
  if (auto error = validateCrd(crd)) return *error;
  const json& spec = crd["spec"];
  const json names = spec.value("names", json::object());
  CrdResources out;
  bool have_storage = false;
  for (const auto& v : spec["versions"]) {
    ApiResource r;
    r.type.group = stringMember(spec, "group");
    r.type.version = stringMember(v, "name");
    r.type.resource = stringMember(names, "plural");
    r.type.kind = stringMember(names, "kind");
    r.type.namespaced = stringMember(spec, "scope") == "Namespaced";
    r.type.has_status_subresource = v.contains("subresources") && v["subresources"].is_object() &&
                                    v["subresources"].contains("status");
    r.type.builtin = false;
    r.type.tracks_generation = true;
    r.scale = scaleSubresourceOf(v);
    r.singular = stringMember(names, "singular");
    if (r.singular.empty()) {
      r.singular = r.type.kind;
      for (auto& c : r.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    r.short_names = strings(names, "shortNames");
    r.categories = strings(names, "categories");
    r.printer = TablePrinter::kColumns;
    auto cols = v.find("additionalPrinterColumns");
    if (cols != v.end() && cols->is_array() && !cols->empty()) {
      for (const auto& c : *cols) {
        PrinterColumn pc;
        pc.name = stringMember(c, "name");
        pc.type = stringMember(c, "type");
        pc.format = stringMember(c, "format");
        pc.description = stringMember(c, "description");
        pc.priority = c.value("priority", 0);
        pc.json_path = stringMember(c, "jsonPath");
        r.columns.push_back(pc);
      }
    } else {
      // The default column upstream adds when a CRD declares none.
      r.columns.push_back({"Age", "date", "", "", 0, ".metadata.creationTimestamp"});
    }
    if (const json* schema = crdVersionSchema(v)) {
      r.type.admit = schemaAdmitter(*schema, r.type.kind, r.type.group, r.type.version, r.scale);
      r.schema = *schema;
    }
    if (v.value("storage", false) || (!have_storage && &v == &spec["versions"].back())) {
      out.storage = r.type;
      have_storage = true;
    }
    if (v.value("served", true)) out.served.push_back(std::move(r));
  }
  return out;
}

std::string crdStatusPatch(const json& crd, const std::string& now_text) {
  const json& spec = crd["spec"];
  const json names = spec.value("names", json::object());
  json accepted = json::object();
  accepted["plural"] = stringMember(names, "plural");
  accepted["singular"] = stringMember(names, "singular");
  if (names.contains("shortNames")) accepted["shortNames"] = names["shortNames"];
  accepted["kind"] = stringMember(names, "kind");
  accepted["listKind"] = stringMember(names, "listKind").empty()
                             ? stringMember(names, "kind") + "List"
                             : stringMember(names, "listKind");
  if (names.contains("categories")) accepted["categories"] = names["categories"];
  json stored = json::array();
  for (const auto& v : spec["versions"]) {
    if (v.value("storage", false)) stored.push_back(stringMember(v, "name"));
  }
  json conditions = json::array();
  conditions.push_back({{"type", "NamesAccepted"},
                        {"status", "True"},
                        {"lastTransitionTime", now_text},
                        {"reason", "NoConflicts"},
                        {"message", "no conflicts found"}});
  conditions.push_back({{"type", "Established"},
                        {"status", "True"},
                        {"lastTransitionTime", now_text},
                        {"reason", "InitialNamesAccepted"},
                        {"message", "the initial names have been accepted"}});
  json patch = {
      {"status",
       {{"conditions", conditions}, {"acceptedNames", accepted}, {"storedVersions", stored}}}};
  return patch.dump();
}

void defaultCrd(json& crd, bool creating) {
  if (!crd.is_object() || !crd.contains("spec") || !crd["spec"].is_object()) return;
  json& spec = crd["spec"];
  if (spec.contains("names") && spec["names"].is_object()) {
    json& names = spec["names"];
    const std::string kind = stringMember(names, "kind");
    if (!kind.empty()) {
      std::string singular = kind;
      for (char& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!names.contains("singular")) names["singular"] = singular;
      if (!names.contains("listKind")) names["listKind"] = kind + "List";
    }
  }
  if (!spec.contains("conversion")) spec["conversion"] = {{"strategy", "None"}};
  if (!creating) return;
  json stored = json::array();
  if (spec.contains("versions") && spec["versions"].is_array()) {
    for (const auto& v : spec["versions"]) {
      if (v.is_object() && v.value("storage", false)) stored.push_back(stringMember(v, "name"));
    }
  }
  crd["status"] = {{"acceptedNames", {{"kind", ""}, {"plural", ""}}},
                   {"conditions", nullptr},
                   {"storedVersions", stored}};
}

}  // namespace ringmaster::local
