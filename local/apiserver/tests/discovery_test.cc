#include "local/apiserver/discovery.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "local/apiserver/builtin_types.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

TEST(Discovery, CoreResourceListHasPodsWithStatusSubresource) {
  json doc = json::parse(apiResourceListText(builtinResources(), "", "v1"));
  EXPECT_EQ(doc["kind"], "APIResourceList");
  EXPECT_EQ(doc["groupVersion"], "v1");
  bool pods = false, pod_status = false;
  for (const auto& r : doc["resources"]) {
    if (r["name"] == "pods") {
      pods = true;
      EXPECT_EQ(r["shortNames"], json::array({"po"}));
      EXPECT_EQ(r["categories"], json::array({"all"}));
      EXPECT_EQ(r["kind"], "Pod");
      EXPECT_TRUE(r["namespaced"].get<bool>());
    }
    if (r["name"] == "pods/status") pod_status = r["verbs"].size() == 3;
  }
  EXPECT_TRUE(pods);
  EXPECT_TRUE(pod_status);
}

// As kube-apiserver lists a CRD's subresources: status, then scale (autoscaling/v1 Scale).
TEST(Discovery, ACustomResourceWithScaleListsItAfterItsStatus) {
  ApiResource dials;
  dials.type.group = "example.dev";
  dials.type.version = "v1";
  dials.type.resource = "dials";
  dials.type.kind = "Dial";
  dials.type.has_status_subresource = true;
  dials.scale = ScaleSubresource{".spec.replicas", ".status.replicas", ""};
  json doc = json::parse(apiResourceListText({dials}, "example.dev", "v1"));
  ASSERT_EQ(doc["resources"].size(), 3u) << doc.dump();
  EXPECT_EQ(doc["resources"][1]["name"], "dials/status");
  EXPECT_EQ(doc["resources"][2], json::parse(R"({"name":"dials/scale","singularName":"",
    "namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale",
    "verbs":["get","patch","update"]})"));
}

TEST(Discovery, GroupListOmitsCoreGroup) {
  json doc = json::parse(apiGroupListText(builtinResources()));
  EXPECT_EQ(doc["kind"], "APIGroupList");
  for (const auto& g : doc["groups"]) EXPECT_NE(g["name"], "");
  std::set<std::string> names;
  for (const auto& g : doc["groups"]) names.insert(g["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"apiextensions.k8s.io", "apps", "coordination.k8s.io",
                                          "networking.k8s.io", "rbac.authorization.k8s.io"}));
}

TEST(Discovery, EveryOpenApiV3DocumentResolvesItsReferences) {
  const auto all = builtinResources();
  const json index = json::parse(openApiV3IndexText(all));
  ASSERT_GE(index["paths"].size(), 6u);
  for (const auto& [gv, entry] : index["paths"].items()) {
    const json doc = json::parse(openApiV3DocumentText(all, gv));
    const json& schemas = doc["components"]["schemas"];
    const std::string text = schemas.dump();
    const std::string prefix = "\"#/components/schemas/";
    for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
      const size_t start = at + prefix.size();
      const std::string ref = text.substr(start, text.find('"', start) - start);
      EXPECT_TRUE(schemas.contains(ref)) << gv << " refers to " << ref;
    }
  }
  const json apps = json::parse(openApiV3DocumentText(all, "apis/apps/v1"));
  EXPECT_TRUE(apps["components"]["schemas"].contains("io.k8s.api.core.v1.PodSpec"));
}

TEST(Discovery, OpenApiV3DeclaresFieldValidationPerKind) {
  auto all = builtinResources();
  json index = json::parse(openApiV3IndexText(all));
  ASSERT_TRUE(index["paths"].contains("api/v1"));
  std::string url = index["paths"]["api/v1"]["serverRelativeURL"];
  EXPECT_EQ(url.rfind("/openapi/v3/api/v1?hash=", 0), 0u);
  json doc = json::parse(openApiV3DocumentText(all, "api/v1"));
  auto op = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
  EXPECT_EQ(op["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
  EXPECT_EQ(op["parameters"][0]["name"], "fieldValidation");
  EXPECT_EQ(openApiV3DocumentText(all, "apis/nope/v1"), "");
}

}  // namespace
}  // namespace ringmaster::local
