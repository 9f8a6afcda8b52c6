#include "local/apiserver/schema.h"

#include <gtest/gtest.h>

#include "local/apiserver/crd.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

// The TrainingJob schema (trimmed to what the cases use).
json trainingJobSchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
      "spec": {
        "type": "object", "required": ["replicas", "trainer"],
        "x-kubernetes-validations": [{"rule": "self.replicas * self.procsPerReplica <= 4096",
                                      "message": "world size (replicas * procsPerReplica) must be <= 4096"}],
        "properties": {
          "replicas": {"type": "integer", "format": "int32", "minimum": 1},
          "procsPerReplica": {"type": "integer", "format": "int32", "minimum": 1, "default": 1},
          "launcher": {"type": "string", "enum": ["native", "mpi"], "default": "native"},
          "trainer": {"type": "object", "required": ["image"], "properties": {
            "image": {"type": "string", "minLength": 1},
            "command": {"type": "array", "items": {"type": "string"}},
            "env": {"type": "array", "items": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}},
            "resources": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
      "status": {"type": "object", "properties": {
        "phase": {"type": "string", "enum": ["Pending", "Running", "Succeeded", "Failed"]},
        "startTime": {"type": "string", "format": "date-time"}}}}})");
}

json job(json spec) {
  return {{"apiVersion", "ringmaster.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "j"}, {"namespace", "default"}}},
          {"spec", std::move(spec)}};
}

std::vector<std::string> texts(const std::vector<StatusCause>& causes) {
  std::vector<std::string> out;
  for (const auto& c : causes) out.push_back(c.field + ": " + c.message + " (" + c.reason + ")");
  return out;
}

SchemaOutcome admit(json obj, const json& schema = trainingJobSchema(), const json* old = nullptr) {
  return admitCustomResource(obj, old, schema, false);
}

TEST(Schema, WrongTypeNamesTheFieldAndAddsTheUncheckedRulesCause) {
  auto out = admit(job({{"replicas", "many"}, {"trainer", {{"image", "i"}}}}));
  EXPECT_EQ(texts(out.causes),
            (std::vector<std::string>{
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type "
                "integer: \"string\" (FieldValueTypeInvalid)",
                "<nil>: Invalid value: \"null\": some validation rules were not checked because "
                "the object was invalid; correct the existing errors to complete validation "
                "(FieldValueInvalid)"}));
}

TEST(Schema, SeveralViolationsComeRequiredThenUnsupportedThenInvalid) {
  auto out =
      admit(job({{"launcher", "slurm"}, {"replicas", 0}, {"trainer", {{"command", {"python"}}}}}));
  ASSERT_EQ(out.causes.size(), 4u);
  EXPECT_EQ(texts(out.causes)[0], "spec.trainer.image: Required value (FieldValueRequired)");
  EXPECT_EQ(texts(out.causes)[1],
            "spec.launcher: Unsupported value: \"slurm\": supported values: \"native\", \"mpi\" "
            "(FieldValueNotSupported)");
  EXPECT_EQ(texts(out.causes)[2],
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or "
            "equal to 1 (FieldValueInvalid)");
  EXPECT_EQ(out.causes[3].field, "<nil>");
  // The joined 422 message kube-apiserver sends.
  StatusError e = invalidError("TrainingJob", "ringmaster.dev", "bad-multiple", out.causes);
  EXPECT_EQ(e.message().substr(0, 100),
            "TrainingJob.ringmaster.dev \"bad-multiple\" is invalid: [spec.trainer.image: Required "
            "value, spec.laun");
}

TEST(Schema, BoundsViolationsDoNotBlockCelRules) {
  // A minimum violation alone gets no "rules were not checked" cause …
  auto zero = admit(job({{"replicas", 0}, {"trainer", {{"image", "i"}}}}));
  EXPECT_EQ(texts(zero.causes),
            (std::vector<std::string>{"spec.replicas: Invalid value: 0: spec.replicas in body "
                                      "should be greater than or equal to 1 (FieldValueInvalid)"}));
  // … and the rules still run next to it.
  auto both = admit(job({{"replicas", 5000}, {"trainer", {{"image", ""}}}}));
  ASSERT_EQ(both.causes.size(), 2u);
  EXPECT_EQ(both.causes[0].field, "spec.trainer.image");
  EXPECT_EQ(both.causes[1].field, "spec");
}

TEST(Schema, CelRuleFailureUsesTheRuleMessageAtTheRulesField) {
  auto out =
      admit(job({{"procsPerReplica", 4}, {"replicas", 2048}, {"trainer", {{"image", "i"}}}}));
  EXPECT_EQ(texts(out.causes),
            (std::vector<std::string>{"spec: Invalid value: \"object\": world size (replicas * "
                                      "procsPerReplica) must be <= 4096 (FieldValueInvalid)"}));
}

TEST(Schema, DefaultsAreAppliedAndUnknownFieldsPrunedAndReported) {
  json obj =
      job({{"replicas", 2},
           {"gpus", 8},
           {"trainer", {{"image", "i"}, {"x", 1}, {"resources", {{"limits", {{"cpu", "1"}}}}}}}});
  obj["extra"] = true;
  obj["metadata"]["labels"] = {{"a", "b"}};
  auto out = admitCustomResource(obj, nullptr, trainingJobSchema(), false);
  EXPECT_TRUE(out.causes.empty()) << texts(out.causes)[0];
  EXPECT_EQ(out.unknown_fields, (std::vector<std::string>{"extra", "spec.gpus", "spec.trainer.x"}));
  EXPECT_EQ(obj["spec"]["procsPerReplica"], 1);
  EXPECT_EQ(obj["spec"]["launcher"], "native");
  EXPECT_FALSE(obj["spec"].contains("gpus"));
  EXPECT_FALSE(obj.contains("extra"));
  EXPECT_EQ(obj["spec"]["trainer"]["resources"]["limits"]["cpu"], "1");  // preserved
  EXPECT_EQ(obj["metadata"]["labels"]["a"], "b");                        // metadata untouched
}

TEST(Schema, NullOfANonNullableFieldIsDroppedOrDefaulted) {
  json obj = job({{"replicas", 1},
                  {"launcher", nullptr},
                  {"trainer", {{"image", "i"}, {"command", nullptr}}}});
  auto out = admitCustomResource(obj, nullptr, trainingJobSchema(), false);
  EXPECT_TRUE(out.causes.empty());
  EXPECT_EQ(obj["spec"]["launcher"], "native");
  EXPECT_FALSE(obj["spec"]["trainer"].contains("command"));
}

struct KeywordCase {
  const char* name;
  json schema;  // of field `f`
  json value;
  std::string expected;  // "" = accepted; else "field: message (reason)"
};

class SchemaKeyword : public ::testing::TestWithParam<KeywordCase> {};

TEST_P(SchemaKeyword, AcceptsOrRejectsWithTheExactMessage) {
  const auto& c = GetParam();
  json schema = {{"type", "object"}, {"properties", {{"f", c.schema}}}};
  json obj = {{"f", c.value}};
  auto out = admitCustomResource(obj, nullptr, schema, false);
  if (c.expected.empty()) {
    EXPECT_TRUE(out.causes.empty()) << texts(out.causes)[0];
  } else {
    ASSERT_EQ(out.causes.size(), 1u) << c.name;
    EXPECT_EQ(texts(out.causes)[0], c.expected);
  }
}

const json kS = json::parse(R"({"type":"string"})");

INSTANTIATE_TEST_SUITE_P(
    Table, SchemaKeyword,
    ::testing::Values(
        KeywordCase{"type ok", {{"type", "integer"}}, 3, ""},
        KeywordCase{"integral float is an integer", {{"type", "integer"}}, 3.0, ""},
        KeywordCase{"type bad",
                    {{"type", "boolean"}},
                    "yes",
                    "f: Invalid value: \"string\": f in body must be of type boolean: \"string\" "
                    "(FieldValueTypeInvalid)"},
        KeywordCase{"number accepts integers", {{"type", "number"}}, 2, ""},
        KeywordCase{"minimum",
                    {{"type", "integer"}, {"minimum", 2}},
                    1,
                    "f: Invalid value: 1: f in body should be greater than or equal to 2 "
                    "(FieldValueInvalid)"},
        KeywordCase{"exclusiveMinimum",
                    {{"type", "integer"}, {"minimum", 2}, {"exclusiveMinimum", true}},
                    2,
                    "f: Invalid value: 2: f in body should be greater than 2 (FieldValueInvalid)"},
        KeywordCase{"maximum",
                    {{"type", "number"}, {"maximum", 1.5}},
                    2,
                    "f: Invalid value: 2: f in body should be less than or equal to 1.5 "
                    "(FieldValueInvalid)"},
        KeywordCase{"exclusiveMaximum",
                    {{"type", "integer"}, {"maximum", 5}, {"exclusiveMaximum", true}},
                    5,
                    "f: Invalid value: 5: f in body should be less than 5 (FieldValueInvalid)"},
        KeywordCase{"multipleOf",
                    {{"type", "integer"}, {"multipleOf", 4}},
                    6,
                    "f: Invalid value: 6: f in body should be a multiple of 4 (FieldValueInvalid)"},
        KeywordCase{"minLength",
                    {{"type", "string"}, {"minLength", 3}},
                    "ab",
                    "f: Invalid value: \"ab\": f in body should be at least 3 chars long "
                    "(FieldValueInvalid)"},
        KeywordCase{"maxLength",
                    {{"type", "string"}, {"maxLength", 2}},
                    "abc",
                    "f: Too long: may not be longer than 2 (FieldValueTooLong)"},
        KeywordCase{"pattern ok", {{"type", "string"}, {"pattern", "^[a-z]+$"}}, "abc", ""},
        KeywordCase{"pattern",
                    {{"type", "string"}, {"pattern", "^[a-z]+$"}},
                    "a1",
                    "f: Invalid value: \"a1\": f in body should match '^[a-z]+$' "
                    "(FieldValueInvalid)"},
        KeywordCase{"enum",
                    {{"type", "string"}, {"enum", {"a", "b"}}},
                    "c",
                    "f: Unsupported value: \"c\": supported values: \"a\", \"b\" "
                    "(FieldValueNotSupported)"},
        KeywordCase{"minItems",
                    {{"type", "array"}, {"items", kS}, {"minItems", 2}},
                    {"x"},
                    "f: Invalid value: 1: f in body should have at least 2 items "
                    "(FieldValueInvalid)"},
        KeywordCase{"maxItems",
                    {{"type", "array"}, {"items", kS}, {"maxItems", 1}},
                    {"x", "y"},
                    "f: Too many: 2: must have at most 1 items (FieldValueTooMany)"},
        KeywordCase{"items typed",
                    {{"type", "array"}, {"items", kS}},
                    {"x", 1},
                    "f[1]: Invalid value: \"integer\": f[1] in body must be of type string: "
                    "\"integer\" (FieldValueTypeInvalid)"},
        KeywordCase{"uniqueItems",
                    {{"type", "array"}, {"items", kS}, {"uniqueItems", true}},
                    {"x", "x"},
                    "f[1]: Duplicate value: \"x\" (FieldValueDuplicate)"},
        // A real API server checks formats of strings only: a bound needs a maximum.
        KeywordCase{"format int32 is no bound",
                    {{"type", "integer"}, {"format", "int32"}},
                    3000000000LL,
                    ""},
        KeywordCase{
            "format int64 ok", {{"type", "integer"}, {"format", "int64"}}, 3000000000LL, ""},
        KeywordCase{"format date-time ok",
                    {{"type", "string"}, {"format", "date-time"}},
                    "2026-11-22T01:59:56Z",
                    ""},
        KeywordCase{"format date-time",
                    {{"type", "string"}, {"format", "date-time"}},
                    "soon",
                    "f: Invalid value: \"soon\": f in body must be of type date-time: \"soon\" "
                    "(FieldValueTypeInvalid)"},
        KeywordCase{"nullable", {{"type", "string"}, {"nullable", true}}, nullptr, ""},
        KeywordCase{"int-or-string int", {{"x-kubernetes-int-or-string", true}}, 3, ""},
        KeywordCase{"int-or-string string", {{"x-kubernetes-int-or-string", true}}, "50%", ""},
        KeywordCase{"int-or-string bad",
                    {{"x-kubernetes-int-or-string", true}},
                    true,
                    "f: Invalid value: \"boolean\": f in body must be of type integer or string: "
                    "\"boolean\" (FieldValueTypeInvalid)"},
        KeywordCase{"required",
                    {{"type", "object"}, {"required", {"a"}}, {"properties", {{"a", kS}}}},
                    json::object(),
                    "f.a: Required value (FieldValueRequired)"},
        KeywordCase{"additionalProperties",
                    {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}},
                    {{"k", "v"}},
                    "f.k: Invalid value: \"string\": f.k in body must be of type integer: "
                    "\"string\" (FieldValueTypeInvalid)"},
        KeywordCase{"maxProperties",
                    {{"type", "object"},
                     {"maxProperties", 1},
                     {"x-kubernetes-preserve-unknown-fields", true}},
                    {{"a", 1}, {"b", 2}},
                    "f: Too many: 2: must have at most 1 items (FieldValueTooMany)"},
        KeywordCase{"CEL without message",
                    {{"type", "integer"}, {"x-kubernetes-validations", {{{"rule", "self > 5"}}}}},
                    3,
                    "f: Invalid value: \"integer\": failed rule: self > 5 (FieldValueInvalid)"},
        KeywordCase{"CEL messageExpression",
                    {{"type", "string"},
                     {"x-kubernetes-validations",
                      {{{"rule", "self != 'x'"}, {"messageExpression", "'got ' + self"}}}}},
                    "x",
                    "f: Invalid value: \"string\": got x (FieldValueInvalid)"},
        KeywordCase{
            "CEL reason",
            {{"type", "string"},
             {"x-kubernetes-validations",
              {{{"rule", "self != 'x'"}, {"message", "no"}, {"reason", "FieldValueForbidden"}}}}},
            "x",
            "f: Forbidden: no (FieldValueForbidden)"},
        KeywordCase{"CEL unsupported accepted",
                    {{"type", "string"},
                     {"x-kubernetes-validations", {{{"rule", "duration(self) > duration('1s')"}}}}},
                    "x",
                    ""}),
    [](const ::testing::TestParamInfo<KeywordCase>& info) {
      std::string n = info.param.name;
      for (auto& ch : n) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

TEST(Schema, TransitionRulesRunOnlyOnUpdate) {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"spec",
                    {{"type", "object"},
                     {"x-kubernetes-validations",
                      {{{"rule", "self.size >= oldSelf.size"}, {"message", "may not shrink"}}}},
                     {"properties", {{"size", {{"type", "integer"}}}}}}}}}};
  json created = {{"spec", {{"size", 1}}}};
  EXPECT_TRUE(admitCustomResource(created, nullptr, schema, false).causes.empty());
  json old = {{"spec", {{"size", 5}}}};
  json shrunk = {{"spec", {{"size", 1}}}};
  auto out = admitCustomResource(shrunk, &old, schema, false);
  EXPECT_EQ(texts(out.causes),
            (std::vector<std::string>{
                "spec: Invalid value: \"object\": may not shrink (FieldValueInvalid)"}));
}

TEST(Schema, StatusWritesReportOnlyStatusCauses) {
  json obj = job({{"replicas", 0}, {"trainer", {{"image", "i"}}}});
  obj["status"] = {{"phase", "Lost"}};
  auto out = admitCustomResource(obj, nullptr, trainingJobSchema(), true);
  // Not spec.replicas; and a value outside an enum leaves the rules checked (they pass here).
  ASSERT_EQ(out.causes.size(), 1u) << ::testing::PrintToString(texts(out.causes));
  EXPECT_EQ(out.causes[0].field, "status.phase");
}

TEST(Schema, StructuralCheckRejectsMissingTypes) {
  json schema = json::parse(R"({"type": "object", "properties": {"spec": {"properties":
      {"a": {"type": "string"}}}, "list": {"type": "array"}}})");
  auto causes = checkStructuralSchema(schema, "spec.versions[0].schema.openAPIV3Schema");
  EXPECT_EQ(texts(causes),
            (std::vector<std::string>{
                "spec.versions[0].schema.openAPIV3Schema.properties[list].items: Required value: "
                "must be specified (FieldValueRequired)",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
                "must not be empty for specified object fields (FieldValueRequired)"}));
  EXPECT_TRUE(checkStructuralSchema(trainingJobSchema(), "s").empty());
}

TEST(Schema, CrdWithoutStructuralSchemaIsInvalid) {
  json crd = json::parse(R"({"apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition", "metadata": {"name": "foos.example.dev"},
    "spec": {"group": "example.dev", "scope": "Namespaced",
             "names": {"plural": "foos", "kind": "Foo"},
             "versions": [{"name": "v1", "served": true, "storage": true,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties":
                             {"spec": {"description": "no type"}}}}},
                          {"name": "v2", "served": true, "storage": false}]}})");
  auto e = validateCrd(crd);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), 422);
  EXPECT_EQ(e->message(),
            "CustomResourceDefinition.apiextensions.k8s.io \"foos.example.dev\" is invalid: "
            "[spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must "
            "not be empty for specified object fields, "
            "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required]");
}

}  // namespace
}  // namespace ringmaster::local
