#include "local/apiserver/scale.h"

#include <gtest/gtest.h>

#include "local/apiserver/crd.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

const ScaleSubresource kScale{".spec.replicas", ".status.currentReplicas", ".status.selector"};

json job() {
  return json::parse(R"({"apiVersion":"ringmaster.dev/v1alpha1","kind":"TrainingJob",
    "metadata":{"name":"j","namespace":"ns","uid":"u1","resourceVersion":"7",
                "creationTimestamp":"2026-12-07T10:00:00Z","labels":{"a":"b"}},
    "spec":{"replicas":2,"elastic":{"minReplicas":1}},
    "status":{"currentReplicas":1,"selector":"ringmaster.dev/job-name=j"}})");
}

TEST(ScaleOf, ReadsTheCountsAndTheSelectorAtTheSubresourcesPaths) {
  const json s = scaleOf(kScale, job());
  EXPECT_EQ(s["kind"], "Scale");
  EXPECT_EQ(s["apiVersion"], "autoscaling/v1");
  EXPECT_EQ(s["metadata"], json::parse(R"({"name":"j","namespace":"ns","uid":"u1",
    "resourceVersion":"7","creationTimestamp":"2026-12-07T10:00:00Z"})"));
  EXPECT_EQ(s["spec"]["replicas"], 2);
  EXPECT_EQ(s["status"]["replicas"], 1);
  EXPECT_EQ(s["status"]["selector"], "ringmaster.dev/job-name=j");
  // In kube-apiserver's key order.
  EXPECT_EQ(
      scaleText(s).rfind(R"({"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name")", 0),
      0u)
      << scaleText(s);
}

TEST(ScaleOf, AbsentCountsAreZeroAndAnAbsentSelectorIsLeftOut) {
  json j = job();
  j.erase("status");
  j["spec"].erase("replicas");
  const json s = scaleOf(kScale, j);
  EXPECT_EQ(s["spec"]["replicas"], 0);
  EXPECT_EQ(s["status"], json::parse(R"({"replicas":0})"));
}

TEST(WithScale, WritesOnlyTheSpecCountAndTakesTheResourceVersionAsAPrecondition) {
  const json written = json::parse(R"({"kind":"Scale","metadata":{"name":"j"},
    "spec":{"replicas":3},"status":{"replicas":9}})");
  auto out = withScale(kScale, job(), written, "j");
  ASSERT_TRUE(out.ok()) << out.error().message();
  json want = job();
  want["spec"]["replicas"] = 3;  // status is the object's own
  EXPECT_EQ(out.value(), want);

  json pinned = written;
  pinned["metadata"]["resourceVersion"] = "5";
  auto with_rv = withScale(kScale, job(), pinned, "j");
  ASSERT_TRUE(with_rv.ok());
  EXPECT_EQ(with_rv.value()["metadata"]["resourceVersion"], "5");
}

TEST(WithScale, RefusesWhatKubeApiserverRefuses) {
  struct Row {
    const char* body;
    int code;
    const char* message;
  };
  const Row rows[] = {
      {R"({"spec":{"replicas":1}})", 400,
       "the name of the object (j based on URL) was undeterminable: name must be provided"},
      {R"({"metadata":{"name":"other"},"spec":{"replicas":1}})", 400,
       "the name of the object (other) does not match the name on the URL (j)"},
      {R"({"metadata":{"name":"j"},"spec":{"replicas":"3"}})", 400,
       "the replica count spec.replicas must be an integer"},
      {R"({"metadata":{"name":"j"},"spec":{"replicas":1.5}})", 400,
       "the replica count spec.replicas must be an integer"},
  };
  for (const auto& row : rows) {
    auto out = withScale(kScale, job(), json::parse(row.body), "j");
    ASSERT_FALSE(out.ok()) << row.body;
    EXPECT_EQ(out.error().code(), row.code) << row.body;
    EXPECT_NE(out.error().message().find(row.message), std::string::npos)
        << row.body << ": " << out.error().message();
  }
}

TEST(WithScalePatch, PatchesTheObjectsScale) {
  struct Row {
    PatchType type;
    const char* patch;
    int replicas;         // the object's spec.replicas after; -1: refused
    int code;             // when refused
    const char* rv = "";  // the precondition left in the object's metadata
  };
  const Row rows[] = {
      {PatchType::kMerge, R"({"spec":{"replicas":4}})", 4, 0, "7"},
      {PatchType::kMerge, R"({"status":{"replicas":4}})", 2, 0, "7"},  // status is not written
      {PatchType::kJson, R"([{"op":"replace","path":"/spec/replicas","value":1}])", 1, 0, "7"},
      {PatchType::kMerge, R"({"metadata":{"resourceVersion":"3"},"spec":{"replicas":4}})", 4, 0,
       "3"},
      {PatchType::kMerge, R"({"spec":{"replicas":"x"}})", -1, 422},
      {PatchType::kJson, R"([{"op":"test","path":"/spec/replicas","value":9}])", -1, 422},
      {PatchType::kStrategicMerge, R"({"spec":{"replicas":4}})", -1, 415},
  };
  for (const auto& row : rows) {
    auto out = withScalePatch(kScale, job(), row.type, row.patch, "j");
    if (row.replicas < 0) {
      ASSERT_FALSE(out.ok()) << row.patch;
      EXPECT_EQ(out.error().code(), row.code) << row.patch << ": " << out.error().message();
      continue;
    }
    ASSERT_TRUE(out.ok()) << row.patch << ": " << out.error().message();
    EXPECT_EQ(out.value()["spec"]["replicas"], row.replicas) << row.patch;
    EXPECT_EQ(out.value()["status"], job()["status"]) << row.patch;
    EXPECT_EQ(out.value()["metadata"]["resourceVersion"], row.rv) << row.patch;
  }
}

TEST(ScaleCauses, CountsAreNonNegativeInt32sAndTheSelectorAString) {
  struct Row {
    const char* path;  // set in job() (a JSON pointer)
    json value;
    bool status_write;
    const char* field;    // "" = no cause
    const char* message;  // part of it
  };
  const Row rows[] = {
      {"/spec/replicas", 3, false, "", ""},
      {"/spec/replicas", -1, false, ".spec.replicas",
       "Invalid value: -1: should be a non-negative integer"},
      {"/spec/replicas", -1, true, "", ""},  // a status write leaves spec alone
      {"/spec/replicas", int64_t{1} << 31, false, ".spec.replicas",
       "should be less than or equal to 2147483647"},
      {"/spec/replicas", "2", false, ".spec.replicas", "should be an integer"},
      {"/status/currentReplicas", -2, true, ".status.currentReplicas",
       "should be a non-negative integer"},
      {"/status/selector", 5, false, ".status.selector", "should be a string"},
  };
  for (const auto& row : rows) {
    json j = job();
    j[json::json_pointer(row.path)] = row.value;
    auto causes = scaleCauses(kScale, j, row.status_write);
    if (std::string(row.field).empty()) {
      EXPECT_TRUE(causes.empty()) << row.path << " = " << row.value;
      continue;
    }
    ASSERT_EQ(causes.size(), 1u) << row.path << " = " << row.value;
    EXPECT_EQ(causes[0].field, row.field);
    EXPECT_NE(causes[0].message.find(row.message), std::string::npos) << causes[0].message;
  }
}

TEST(ScaleSubresourceOf, ReadsACrdVersionsDeclaration) {
  const json version = json::parse(R"({"name":"v1","subresources":{"status":{},
    "scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.ready"}}})");
  auto scale = scaleSubresourceOf(version);
  ASSERT_TRUE(scale.has_value());
  EXPECT_EQ(scale->spec_replicas_path, ".spec.replicas");
  EXPECT_EQ(scale->status_replicas_path, ".status.ready");
  EXPECT_EQ(scale->label_selector_path, "");
  EXPECT_FALSE(scaleSubresourceOf(json::parse(R"({"subresources":{"status":{}}})")));
}

TEST(ScaleSubresourceCauses, PathsMustLieUnderSpecAndStatus) {
  struct Row {
    const char* scale;
    const char* field;  // "" = accepted
    const char* message;
  };
  const Row rows[] = {
      {R"({"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas",
           "labelSelectorPath":".status.selector"})",
       "", ""},
      {R"({"statusReplicasPath":".status.replicas"})", "s.specReplicasPath", "Required value"},
      {R"({"specReplicasPath":".spec.replicas"})", "s.statusReplicasPath", "Required value"},
      {R"({"specReplicasPath":".status.replicas","statusReplicasPath":".status.replicas"})",
       "s.specReplicasPath", "should be a json path under .spec"},
      {R"({"specReplicasPath":".spec.replicas","statusReplicasPath":".spec.replicas"})",
       "s.statusReplicasPath", "should be a json path under .status"},
      {R"({"specReplicasPath":".spec.r[0]","statusReplicasPath":".status.replicas"})",
       "s.specReplicasPath", "should be a json path under .spec"},
      {R"({"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas",
           "labelSelectorPath":".metadata.labels"})",
       "s.labelSelectorPath", "should be a json path under either .spec or .status"},
  };
  for (const auto& row : rows) {
    const json version = {{"subresources", {{"scale", json::parse(row.scale)}}}};
    auto causes = scaleSubresourceCauses(version, "s");
    if (std::string(row.field).empty()) {
      EXPECT_TRUE(causes.empty()) << row.scale;
      continue;
    }
    ASSERT_EQ(causes.size(), 1u) << row.scale;
    EXPECT_EQ(causes[0].field, row.field);
    EXPECT_NE(causes[0].message.find(row.message), std::string::npos) << causes[0].message;
  }
}

// The CRD's declaration reaches its served resources, and a bad one refuses the CRD.
TEST(ScaleSubresourceOf, ACrdWithScaleServesItAndABadOneIsRefused) {
  json crd = json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.dev"},
    "spec":{"group":"example.dev","scope":"Namespaced",
      "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget"},
      "versions":[{"name":"v1","served":true,"storage":true,
        "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas",
                                             "statusReplicasPath":".status.replicas"}},
        "schema":{"openAPIV3Schema":{"type":"object","properties":{
          "spec":{"type":"object","properties":{"replicas":{"type":"integer"}}},
          "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}})");
  auto served = resourcesFromCrd(crd);
  ASSERT_TRUE(served.ok()) << served.error().message();
  ASSERT_EQ(served.value().served.size(), 1u);
  ASSERT_TRUE(served.value().served[0].scale.has_value());
  EXPECT_EQ(served.value().served[0].scale->status_replicas_path, ".status.replicas");

  // Every write of such a resource checks its counts, between the schema's checks and the rules.
  json gadget = json::parse(R"({"apiVersion":"example.dev/v1","kind":"Gadget",
    "metadata":{"name":"g"},"spec":{"replicas":-1}})");
  AdmitContext context;
  auto refused = served.value().storage.admit(gadget, nullptr, context);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code(), 422);
  ASSERT_EQ(refused->causes().size(), 1u);
  EXPECT_EQ(refused->causes()[0].field, ".spec.replicas");

  crd["spec"]["versions"][0]["subresources"]["scale"].erase("statusReplicasPath");
  auto bad = resourcesFromCrd(crd);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(
                "spec.versions[0].subresources.scale.statusReplicasPath: Required value"),
            std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace ringmaster::local
