#include "local/apiserver/openapi_v2.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "local/apiserver/builtin_types.h"
#include "local/apiserver/protobuf_wire.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

// Every schema of the document, by path, with `fn`.
void walk(const json& s, const std::string& path,
          const std::function<void(const json&, const std::string&)>& fn) {
  if (!s.is_object()) return;
  fn(s, path);
  if (s.contains("properties")) {
    for (const auto& [k, v] : s["properties"].items()) walk(v, path + "." + k, fn);
  }
  if (s.contains("items")) walk(s["items"], path + "[]", fn);
  if (s.contains("additionalProperties")) walk(s["additionalProperties"], path + "{}", fn);
}

TEST(OpenApiV2, DefinitionsAreWhatKubeOpenApiAccepts) {
  const json doc = openApiV2Document(builtinResources());
  EXPECT_EQ(doc["swagger"], "2.0");
  const json& defs = doc["definitions"];
  for (const char* name :
       {"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.rbac.v1.ClusterRole",
        "io.k8s.api.core.v1.ServiceAccount", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}) {
    EXPECT_TRUE(defs.contains(name)) << name;
  }
  EXPECT_EQ(defs["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment");
  int refs = 0;
  for (const auto& [name, schema] : defs.items()) {
    walk(schema, name, [&](const json& s, const std::string& path) {
      for (const char* v3_only : {"nullable", "anyOf", "oneOf", "not"}) {
        EXPECT_FALSE(s.contains(v3_only)) << path << " keeps " << v3_only;
      }
      if (s.value("type", "") == "array") {
        EXPECT_TRUE(s["items"].is_object()) << path;
      }
      if (!s.contains("$ref")) return;
      ++refs;
      const std::string ref = s["$ref"];
      ASSERT_EQ(ref.rfind("#/definitions/", 0), 0u) << path << ": " << ref;
      EXPECT_TRUE(defs.contains(ref.substr(14))) << path << ": dangling " << ref;
      EXPECT_FALSE(s.contains("type") || s.contains("properties")) << path;
    });
  }
  EXPECT_GT(refs, 20);
}

// The protobuf decodes as gnostic's openapi.v2.Document: 1 swagger, 2 info, 9 definitions of
// NamedSchema{1 name, 2 Schema}; in a Schema 4 is the description, 22 the type, 25 the
// properties, 31 the vendor extensions.
TEST(OpenApiV2, ProtobufCarriesTheDocument) {
  const json doc = openApiV2Document(builtinResources());
  const std::string bytes = encodeOpenApiV2(doc);
  protobuf::Reader r(bytes);
  protobuf::Field f;
  std::string swagger;
  std::map<std::string, std::string> definitions;
  while (!r.done()) {
    ASSERT_TRUE(r.next(&f));
    if (f.number == 1) swagger = f.bytes;
    if (f.number != 9) continue;
    protobuf::Reader defs(f.bytes);
    protobuf::Field named;
    while (!defs.done()) {
      ASSERT_TRUE(defs.next(&named));
      ASSERT_EQ(named.number, 1u);
      protobuf::Reader entry(named.bytes);
      protobuf::Field g;
      std::string name, schema;
      while (!entry.done()) {
        ASSERT_TRUE(entry.next(&g));
        if (g.number == 1) name = g.bytes;
        if (g.number == 2) schema = g.bytes;
      }
      definitions[name] = schema;
    }
  }
  EXPECT_EQ(swagger, "2.0");
  EXPECT_EQ(definitions.size(), doc["definitions"].size());
  ASSERT_TRUE(definitions.count("io.k8s.api.apps.v1.Deployment"));
  protobuf::Reader schema(definitions["io.k8s.api.apps.v1.Deployment"]);
  protobuf::Field g;
  std::string description, type, gvk_name, gvk_yaml;
  while (!schema.done()) {
    ASSERT_TRUE(schema.next(&g));
    if (g.number == 4) description = g.bytes;
    if (g.number == 22) {  // TypeItem{1: value}
      protobuf::Reader t(g.bytes);
      protobuf::Field v;
      while (!t.done() && t.next(&v)) type = v.bytes;
    }
    if (g.number == 31) {  // NamedAny{1: name, 2: Any{2: yaml}}
      protobuf::Reader n(g.bytes);
      protobuf::Field v;
      while (!n.done() && n.next(&v)) {
        if (v.number == 1) gvk_name = v.bytes;
        if (v.number != 2) continue;
        protobuf::Reader any(v.bytes);
        protobuf::Field y;
        while (!any.done() && any.next(&y)) gvk_yaml = y.bytes;
      }
    }
  }
  EXPECT_EQ(description, doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["description"]);
  EXPECT_EQ(type, "object");
  EXPECT_EQ(gvk_name, "x-kubernetes-group-version-kind");
  EXPECT_EQ(json::parse(gvk_yaml)[0]["group"], "apps");
}

TEST(ProtobufWriter, WritesWhatTheReaderReads) {
  protobuf::Writer inner;
  inner.bytesField(1, "x");
  protobuf::Writer w;
  w.varintField(3, 300);
  w.boolField(4, true);
  w.messageField(5, inner);
  w.doubleField(6, 1.5);
  protobuf::Reader r(w.bytes());
  protobuf::Field f;
  ASSERT_TRUE(r.next(&f));
  EXPECT_EQ(f.number, 3u);
  EXPECT_EQ(f.varint, 300u);
  ASSERT_TRUE(r.next(&f));
  EXPECT_EQ(f.varint, 1u);
  ASSERT_TRUE(r.next(&f));
  EXPECT_EQ(f.number, 5u);
  EXPECT_EQ(f.bytes, inner.bytes());
  ASSERT_TRUE(r.next(&f));
  EXPECT_EQ(f.wire, 1u);
  double d = 0;
  std::memcpy(&d, f.bytes.data(), sizeof d);
  EXPECT_EQ(d, 1.5);
  EXPECT_TRUE(r.done());
}

}  // namespace
}  // namespace ringmaster::local
