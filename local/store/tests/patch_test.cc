#include "local/store/patch.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

using nlohmann::json;

TEST(MergePatch, FollowsRfc7386) {
  json target = json::parse(R"({"a":"b","c":{"d":"e","f":"g"},"l":[1,2]})");
  json patch = json::parse(R"({"a":"z","c":{"f":null},"l":[3],"n":{"x":null}})");
  EXPECT_EQ(applyMergePatch(target, patch),
            json::parse(R"({"a":"z","c":{"d":"e"},"l":[3],"n":{}})"));
  EXPECT_EQ(applyMergePatch(json::parse(R"({"a":1})"), json::parse("[1]")), json::parse("[1]"));
}

TEST(JsonPatch, AppliesEveryOperation) {
  json doc = json::parse(R"({"metadata":{"labels":{"a/b":"1"}},"spec":{"list":[1,2,3]}})");
  json patch = json::parse(R"([
    {"op":"test","path":"/metadata/labels/a~1b","value":"1"},
    {"op":"add","path":"/spec/list/-","value":4},
    {"op":"add","path":"/spec/list/0","value":0},
    {"op":"remove","path":"/spec/list/1"},
    {"op":"replace","path":"/metadata/labels/a~1b","value":"2"},
    {"op":"copy","from":"/spec/list","path":"/spec/copy"},
    {"op":"move","from":"/spec/copy","path":"/spec/moved"}
  ])");
  auto r = applyJsonPatch(doc, patch);
  ASSERT_TRUE(r.ok()) << r.error().bodyText();
  EXPECT_EQ(r.value(), json::parse(R"({"metadata":{"labels":{"a/b":"2"}},
      "spec":{"list":[0,2,3,4],"moved":[0,2,3,4]}})"));
}

TEST(JsonPatch, ErrorsOnBadPathsAndFailedTests) {
  json doc = json::parse(R"({"a":{"b":1}})");
  auto missing = applyJsonPatch(doc, json::parse(R"([{"op":"replace","path":"/x","value":1}])"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), 422);
  EXPECT_EQ(missing.error().causes().at(0).message,
            "replace operation does not apply: doc is missing key: /x: missing value");
  auto test = applyJsonPatch(doc, json::parse(R"([{"op":"test","path":"/a/b","value":2}])"));
  ASSERT_FALSE(test.ok());
  EXPECT_EQ(test.error().causes().at(0).message, "testing value /a/b failed: test failed");
  EXPECT_EQ(applyJsonPatch(doc, json::parse(R"([{"op":"remove","path":"/a/zz"}])")).error().code(),
            422);
  EXPECT_EQ(
      applyJsonPatch(doc, json::parse(R"([{"op":"add","path":"/q/r","value":1}])")).error().code(),
      422);
  EXPECT_EQ(applyJsonPatch(doc, json::parse(R"({"op":"add"})")).error().code(), 400);
  // Into a number, a string or below one: refused, not handed to nlohmann (which asserts).
  for (const char* patch : {R"([{"op":"add","path":"/a/b/c","value":1}])",
                            R"([{"op":"add","path":"/a/b/-","value":1}])",
                            R"([{"op":"copy","from":"/a","path":"/a/b/x"}])",
                            R"([{"op":"move","from":"/a/b","path":"/s/t"}])"}) {
    json with_string = doc;
    with_string["s"] = "text";
    auto refused = applyJsonPatch(with_string, json::parse(patch));
    ASSERT_FALSE(refused.ok()) << patch;
    EXPECT_EQ(refused.error().code(), 422) << patch;
  }
  // The whole patch applies or nothing: the input is untouched.
  EXPECT_EQ(doc, json::parse(R"({"a":{"b":1}})"));
}

TEST(StrategicMergePatch, MergesListsByKeyAndHonoursDirectives) {
  json pod = json::parse(R"({"metadata":{"finalizers":["a"]},"spec":{
    "containers":[{"name":"main","image":"x:1","ports":[{"containerPort":80,"name":"http"}],
                   "volumeMounts":[{"name":"d","mountPath":"/data"}]},
                  {"name":"side","image":"y:1"}],
    "tolerations":[{"key":"t1"}],
    "volumes":[{"name":"d","emptyDir":{}},{"name":"e","emptyDir":{}}]},
    "status":{"conditions":[{"type":"Ready","status":"False"},{"type":"PodScheduled","status":"True"}]}})");
  json patch = json::parse(R"({"metadata":{"finalizers":["b"]},"spec":{
    "containers":[{"name":"main","image":"x:2","ports":[{"containerPort":8080}]},
                  {"name":"side","$patch":"delete"},{"name":"new","image":"z"}],
    "tolerations":[{"key":"t2"}],
    "volumes":[{"name":"e","$patch":"delete"}],
    "$setElementOrder/containers":[{"name":"main"},{"name":"new"}]},
    "status":{"conditions":[{"type":"Ready","status":"True"}]}})");
  auto r = applyStrategicMergePatch(pod, patch);
  ASSERT_TRUE(r.ok());
  const json& out = r.value();
  EXPECT_EQ(out["metadata"]["finalizers"], json({"a", "b"}));
  ASSERT_EQ(out["spec"]["containers"].size(), 2u);
  EXPECT_EQ(out["spec"]["containers"][0]["image"], "x:2");
  EXPECT_EQ(out["spec"]["containers"][0]["ports"].size(), 2u);
  EXPECT_EQ(out["spec"]["containers"][0]["volumeMounts"].size(), 1u);
  EXPECT_EQ(out["spec"]["containers"][1]["name"], "new");
  EXPECT_EQ(out["spec"]["tolerations"], json::parse(R"([{"key":"t2"}])"));  // no key: replaced
  EXPECT_EQ(out["spec"]["volumes"], json::parse(R"([{"name":"d","emptyDir":{}}])"));
  EXPECT_EQ(out["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(out["status"]["conditions"].size(), 2u);
  EXPECT_FALSE(out["spec"].contains("$setElementOrder/containers"));
}

TEST(StrategicMergePatch, RetainKeysReplaceAndDeleteFromPrimitiveList) {
  json obj = json::parse(R"({"metadata":{"finalizers":["a","b"]},
    "spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},
            "env":[{"name":"A","value":"1"}]}})");
  json patch = json::parse(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]},
    "spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"},
            "env":[{"$patch":"replace"},{"name":"B","value":"2"}]}})");
  auto r = applyStrategicMergePatch(obj, patch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value()["metadata"]["finalizers"], json({"b"}));
  EXPECT_EQ(r.value()["spec"]["strategy"], json::parse(R"({"type":"Recreate"})"));
  EXPECT_EQ(r.value()["spec"]["env"], json::parse(R"([{"name":"B","value":"2"}])"));
}

// Directives and operation fields of the wrong type are ignored or refused, never thrown (the
// fuzzer's finds: a "$patch" holding an object, an "op" holding a number).
TEST(Patch, MistypedDirectivesAndOperationFieldsAreNotExceptions) {
  json obj = json::parse(R"({"spec":{"env":[{"name":"A","value":"1"}]}})");
  auto merged = applyStrategicMergePatch(
      obj, json::parse(R"({"$patch":{"x":1},"spec":{"env":[{"name":"A","$patch":[1]}]}})"));
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged.value()["spec"]["env"], json::parse(R"([{"name":"A","value":"1"}])"));
  auto op = applyJsonPatch(obj, json::parse(R"([{"op":7,"path":"/spec"}])"));
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.error().causes().at(0).message, "Unexpected kind: ");
  auto from = applyJsonPatch(obj, json::parse(R"([{"op":"copy","from":{},"path":"/x"}])"));
  ASSERT_FALSE(from.ok());
  EXPECT_EQ(from.error().code(), 422);
}

TEST(PatchType, FromContentType) {
  EXPECT_EQ(patchTypeFromContentType("application/merge-patch+json"), PatchType::kMerge);
  EXPECT_EQ(patchTypeFromContentType("application/json-patch+json; charset=utf-8"),
            PatchType::kJson);
  EXPECT_EQ(patchTypeFromContentType("application/strategic-merge-patch+json"),
            PatchType::kStrategicMerge);
  EXPECT_FALSE(patchTypeFromContentType("application/json"));
}

}  // namespace
}  // namespace ringmaster::local
