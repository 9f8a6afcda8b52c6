#include "local/apiserver/discovery.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

TEST(Discovery, GroupListOmitsCoreGroup) {
  json doc = json::parse(apiGroupListText(builtinResources()));
  EXPECT_EQ(doc["kind"], "APIGroupList");
  for (const auto& g : doc["groups"]) EXPECT_NE(g["name"], "");
  // apiextensions.k8s.io, coordination.k8s.io, networking.k8s.io
  EXPECT_EQ(doc["groups"].size(), 3u);
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
