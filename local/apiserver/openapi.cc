#include "local/apiserver/openapi.h"

#include <set>
#include <string_view>

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

constexpr const char* kMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.";

const json& builtinSchemas() {
  static const json* table = new json(json::parse(
#include "local/apiserver/openapi_builtin.inc"
      ));
  return *table;
}

// "ringmaster.dev" -> "dev.ringmaster".
std::string reversedGroup(const std::string& group) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = group.find('.', start);
    parts.push_back(group.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : ".") + *it;
  return out;
}

json customResourceSchema(const ApiResource& r) {
  json s = r.schema.is_object() ? r.schema : json{{"type", "object"}};
  const json& pod = builtinSchemas()[""]["io.k8s.api.core.v1.Pod"]["properties"];
  json& props = s["properties"];
  if (!props.is_object()) props = json::object();
  for (const char* f : {"apiVersion", "kind", "metadata"}) props[f] = pod[f];
  s["x-kubernetes-group-version-kind"] =
      json::array({{{"group", r.type.group}, {"kind", r.type.kind}, {"version", r.type.version}}});
  return s;
}

json listSchema(const ApiResource& r, const std::string& item_name) {
  const json& pod = builtinSchemas()[""]["io.k8s.api.core.v1.Pod"]["properties"];
  json s;
  s["description"] = r.type.kind + "List is a list of " + r.type.kind;
  s["required"] = {"items"};
  s["properties"]["apiVersion"] = pod["apiVersion"];
  s["properties"]["kind"] = pod["kind"];
  s["properties"]["items"] = {
      {"description", "List of " + r.type.resource +
                          ". More info: "
                          "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                          "api-conventions.md"},
      {"type", "array"},
      {"items", {{"$ref", "#/components/schemas/" + item_name}}}};
  s["properties"]["metadata"] = {
      {"description", "Standard list metadata."},
      {"allOf",
       json::array({{{"$ref", std::string("#/components/schemas/") + kMeta + "ListMeta"}}})}};
  s["x-kubernetes-group-version-kind"] = json::array(
      {{{"group", r.type.group}, {"kind", r.type.listKind()}, {"version", r.type.version}}});
  return s;
}

// The component names `schema` refers to ("#/components/schemas/<name>").
void collectRefs(const json& schema, std::set<std::string>* refs) {
  if (schema.is_object()) {
    for (const auto& [key, value] : schema.items()) {
      if (key == "$ref" && value.is_string()) {
        const std::string ref = value.get<std::string>();
        constexpr std::string_view kPrefix = "#/components/schemas/";
        if (ref.rfind(kPrefix, 0) == 0) refs->insert(ref.substr(kPrefix.size()));
      } else {
        collectRefs(value, refs);
      }
    }
  } else if (schema.is_array()) {
    for (const auto& item : schema) collectRefs(item, refs);
  }
}

// Adds the built-in schemas of other groups that `components` refers to, transitively (a
// Deployment's template is a core/v1 PodTemplateSpec): a document resolves every reference it
// makes, as kube-apiserver's do.
void addReferencedSchemas(json& components) {
  for (bool added = true; added;) {
    added = false;
    std::set<std::string> refs;
    for (const auto& [name, schema] : components.items()) collectRefs(schema, &refs);
    for (const auto& ref : refs) {
      if (components.contains(ref)) continue;
      for (const auto& [group, schemas] : builtinSchemas().items()) {
        if (!schemas.contains(ref)) continue;
        components[ref] = schemas[ref];
        added = true;
        break;
      }
    }
  }
}

}  // namespace

std::string openApiSchemaName(const ApiResource& r) {
  if (r.type.builtin) {
    if (r.type.group.empty()) return "io.k8s.api.core." + r.type.version + "." + r.type.kind;
    if (r.type.group == "apiextensions.k8s.io") {
      return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions." + r.type.version + "." +
             r.type.kind;
    }
    std::string g = r.type.group.substr(0, r.type.group.find('.'));
    return "io.k8s.api." + g + "." + r.type.version + "." + r.type.kind;
  }
  return reversedGroup(r.type.group) + "." + r.type.version + "." + r.type.kind;
}

json openApiComponents(const std::vector<ApiResource>& resources, const std::string& group,
                       const std::string& version) {
  json out = builtinSchemas()["meta"];
  bool builtin_group = false;
  for (const auto& r : resources) {
    if (r.type.group != group || r.type.version != version) continue;
    const std::string name = openApiSchemaName(r);
    if (r.type.builtin) {
      builtin_group = true;
      continue;
    }
    out[name] = customResourceSchema(r);
    out[name + "List"] = listSchema(r, name);
  }
  if (builtin_group && version == "v1" && builtinSchemas().contains(group)) {
    for (const auto& [name, schema] : builtinSchemas()[group].items()) out[name] = schema;
  }
  addReferencedSchemas(out);
  return out;
}

}  // namespace ringmaster::local
