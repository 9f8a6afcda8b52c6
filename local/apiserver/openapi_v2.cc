#include "local/apiserver/openapi_v2.h"

#include <set>
#include <string_view>

#include "local/apiserver/discovery.h"
#include "local/apiserver/openapi.h"
#include "local/apiserver/protobuf_wire.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using protobuf::Writer;

constexpr std::string_view kV3Prefix = "#/components/schemas/";
constexpr std::string_view kV2Prefix = "#/definitions/";

bool onlyRef(const json& s) { return s.is_object() && s.size() == 1 && s.contains("$ref"); }

// One v3 schema as v2 says it.
json toV2(const json& s) {
  if (!s.is_object()) return s;
  json out = json::object();
  for (const auto& [key, value] : s.items()) {
    if (key == "nullable" || key == "anyOf" || key == "oneOf" || key == "not") continue;
    if (key == "$ref") {
      std::string ref = value.get<std::string>();
      if (ref.rfind(kV3Prefix, 0) == 0) ref = std::string(kV2Prefix) + ref.substr(kV3Prefix.size());
      out["$ref"] = ref;
    } else if (key == "allOf" && value.is_array() && value.size() == 1 && onlyRef(value[0])) {
      // v3 wraps a described reference in allOf; v2 puts the reference beside the description.
      out["$ref"] = toV2(value[0])["$ref"];
    } else if (key == "allOf" && value.is_array()) {
      for (const auto& sub : value) out["allOf"].push_back(toV2(sub));
    } else if (key == "properties" && value.is_object()) {
      out["properties"] = json::object();
      for (const auto& [name, sub] : value.items()) out["properties"][name] = toV2(sub);
    } else if ((key == "items" || key == "additionalProperties") && value.is_object()) {
      out[key] = toV2(value);
    } else {
      out[key] = value;
    }
  }
  // A reference carries nothing that kube-openapi would read as an embedded type.
  if (out.contains("$ref")) {
    out.erase("type");
    out.erase("properties");
  }
  if (out.value("type", json()) == "array" && !out.contains("items")) out["items"] = json::object();
  return out;
}

// openapi.v2.Any{2: yaml}: JSON is YAML.
Writer any(const json& value) {
  Writer w;
  w.bytesField(2, value.dump());
  return w;
}

Writer schema(const json& s);

// NamedSchema{1: name, 2: value} entries of a Properties or Definitions message.
Writer namedSchemas(const json& map) {
  Writer w;
  for (const auto& [name, sub] : map.items()) {
    Writer entry;
    entry.bytesField(1, name);
    entry.messageField(2, schema(sub));
    w.messageField(1, entry);
  }
  return w;
}

// openapi.v2.Schema. Field numbers are gnostic's OpenAPIv2.proto.
Writer schema(const json& s) {
  Writer w;
  if (!s.is_object()) return w;
  auto str = [&](const char* key, uint32_t number) {
    if (s.contains(key) && s[key].is_string()) w.bytesField(number, s[key].get<std::string>());
  };
  auto num = [&](const char* key, uint32_t number) {
    if (s.contains(key) && s[key].is_number()) w.doubleField(number, s[key].get<double>());
  };
  auto count = [&](const char* key, uint32_t number) {
    if (s.contains(key) && s[key].is_number_integer() && s[key].get<int64_t>() > 0) {
      w.varintField(number, static_cast<uint64_t>(s[key].get<int64_t>()));
    }
  };
  auto flag = [&](const char* key, uint32_t number) {
    if (s.contains(key) && s[key].is_boolean() && s[key].get<bool>()) w.boolField(number, true);
  };
  str("$ref", 1);
  str("format", 2);
  str("title", 3);
  str("description", 4);
  if (s.contains("default")) w.messageField(5, any(s["default"]));
  num("multipleOf", 6);
  num("maximum", 7);
  flag("exclusiveMaximum", 8);
  num("minimum", 9);
  flag("exclusiveMinimum", 10);
  count("maxLength", 11);
  count("minLength", 12);
  str("pattern", 13);
  count("maxItems", 14);
  count("minItems", 15);
  flag("uniqueItems", 16);
  count("maxProperties", 17);
  count("minProperties", 18);
  if (s.contains("required") && s["required"].is_array()) {
    for (const auto& r : s["required"]) {
      if (r.is_string()) w.bytesField(19, r.get<std::string>());
    }
  }
  if (s.contains("enum") && s["enum"].is_array()) {
    for (const auto& e : s["enum"]) w.messageField(20, any(e));
  }
  if (s.contains("additionalProperties")) {
    const json& ap = s["additionalProperties"];
    Writer item;  // AdditionalPropertiesItem{1: schema | 2: boolean}
    if (ap.is_boolean()) {
      item.boolField(2, ap.get<bool>());
    } else {
      item.messageField(1, schema(ap));
    }
    w.messageField(21, item);
  }
  if (s.contains("type") && s["type"].is_string()) {
    Writer type;  // TypeItem{1: repeated value}
    type.bytesField(1, s["type"].get<std::string>());
    w.messageField(22, type);
  }
  if (s.contains("items")) {
    Writer items;  // ItemsItem{1: repeated schema}
    if (s["items"].is_array()) {
      for (const auto& sub : s["items"]) items.messageField(1, schema(sub));
    } else {
      items.messageField(1, schema(s["items"]));
    }
    w.messageField(23, items);
  }
  if (s.contains("allOf") && s["allOf"].is_array()) {
    for (const auto& sub : s["allOf"]) w.messageField(24, schema(sub));
  }
  if (s.contains("properties") && s["properties"].is_object()) {
    w.messageField(25, namedSchemas(s["properties"]));
  }
  flag("readOnly", 27);
  if (s.contains("example")) w.messageField(30, any(s["example"]));
  for (const auto& [key, value] : s.items()) {
    if (key.rfind("x-", 0) != 0) continue;
    Writer named;  // NamedAny{1: name, 2: value}
    named.bytesField(1, key);
    named.messageField(2, any(value));
    w.messageField(31, named);
  }
  return w;
}

}  // namespace

json openApiV2Document(const std::vector<ApiResource>& resources) {
  std::set<std::pair<std::string, std::string>> gvs;
  for (const auto& r : resources) gvs.insert({r.type.group, r.type.version});
  json definitions = json::object();
  for (const auto& [group, version] : gvs) {
    const json components = openApiComponents(resources, group, version);
    for (const auto& [name, s] : components.items()) definitions[name] = toV2(s);
  }
  json doc;
  doc["swagger"] = "2.0";
  doc["info"] = {{"title", "Kubernetes"}, {"version", kServerGitVersion}};
  doc["paths"] = json::object();
  doc["definitions"] = definitions;
  return doc;
}

std::string encodeOpenApiV2(const json& document) {
  Writer doc;
  doc.bytesField(1, document.value("swagger", "2.0"));
  if (document.contains("info")) {
    Writer info;  // Info{1: title, 2: version}
    info.bytesField(1, document["info"].value("title", ""));
    info.bytesField(2, document["info"].value("version", ""));
    doc.messageField(2, info);
  }
  if (document.contains("definitions")) doc.messageField(9, namedSchemas(document["definitions"]));
  return doc.bytes();
}

}  // namespace ringmaster::local
