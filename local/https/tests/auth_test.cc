#include "local/https/auth.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ringmaster::local {
namespace {

Request request(std::string method, std::string path, std::string auth = "") {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  if (!auth.empty()) r.headers.add("Authorization", std::move(auth));
  return r;
}

TEST(BearerAuthenticator, AdmitsOnlyTheExactTokenAndTreatsNoneAsAnonymous) {
  BearerAuthenticator auth("s3cret");
  using D = BearerAuthenticator::Decision;
  struct Case {
    const char* header;
    D decision;
    const char* user;
  };
  const Case cases[] = {
      {"Bearer s3cret", D::kAdmin, "ringmaster-local-admin"},
      {"bearer s3cret", D::kAdmin, "ringmaster-local-admin"},
      {"Bearer s3cre", D::kInvalidToken, ""},
      {"Bearer s3cretX", D::kInvalidToken, ""},
      {"Bearer ", D::kInvalidToken, ""},
      {"", D::kAnonymous, "system:anonymous"},
      {"Basic dTpw", D::kAnonymous, "system:anonymous"},
  };
  for (const auto& c : cases) {
    const auto result = auth.check(request("GET", "/api", c.header));
    EXPECT_EQ(result.decision, c.decision) << c.header;
    EXPECT_EQ(result.user, c.user) << c.header;
  }
}

TEST(BearerAuthenticator, AsksTokenUserAboutOtherTokens) {
  BearerAuthenticator auth("s3cret", [](std::string_view token) -> std::optional<std::string> {
    if (token == "sa-token") return "system:serviceaccount:ns:sa";
    return std::nullopt;
  });
  using D = BearerAuthenticator::Decision;
  const auto sa = auth.check(request("GET", "/api", "Bearer sa-token"));
  EXPECT_EQ(sa.decision, D::kUser);
  EXPECT_EQ(sa.user, "system:serviceaccount:ns:sa");
  EXPECT_EQ(auth.check(request("GET", "/api", "Bearer s3cret")).decision, D::kAdmin);
  EXPECT_EQ(auth.check(request("GET", "/api", "Bearer other")).decision, D::kInvalidToken);
}

TEST(Unauthorized, IsKubeApiserversMinimalStatus) {
  // The minimal Status kube-apiserver sends for a token it does not know: 129 bytes.
  EXPECT_EQ(unauthorizedBody(),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"Unauthorized","reason":"Unauthorized","code":401})"
            "\n");
  EXPECT_EQ(unauthorizedBody().size(), 129u);
}

TEST(AnonymousForbidden, NamesResourceGroupAndNamespaceLikeRbac) {
  // As kube-apiserver answers an anonymous request that RBAC forbids.
  auto body = nlohmann::json::parse(anonymousForbiddenBody(
      request("GET", "/apis/ringmaster.dev/v1alpha1/namespaces/default/trainingjobs")));
  EXPECT_EQ(body["message"],
            "trainingjobs.ringmaster.dev is forbidden: User \"system:anonymous\" cannot list "
            "resource \"trainingjobs\" in API group \"ringmaster.dev\" in the namespace "
            "\"default\"");
  EXPECT_EQ(body["reason"], "Forbidden");
  EXPECT_EQ(body["code"], 403);
  EXPECT_EQ(body["details"],
            nlohmann::json({{"group", "ringmaster.dev"}, {"kind", "trainingjobs"}}));
}

TEST(AnonymousForbidden, CoversCoreNamedClusterWatchAndNonResourceRequests) {
  auto message = [](Request r) {
    return nlohmann::json::parse(anonymousForbiddenBody(r))["message"].get<std::string>();
  };
  EXPECT_EQ(message(request("DELETE", "/api/v1/namespaces/ns1/pods/p1")),
            "pods \"p1\" is forbidden: User \"system:anonymous\" cannot delete resource \"pods\" "
            "in API group \"\" in the namespace \"ns1\"");
  EXPECT_EQ(message(request("GET", "/api/v1/nodes")),
            "nodes is forbidden: User \"system:anonymous\" cannot list resource \"nodes\" in API "
            "group \"\" at the cluster scope");
  Request watch = request("GET", "/api/v1/namespaces/ns1/pods");
  watch.query = {{"watch", "true"}};
  EXPECT_NE(message(watch).find("cannot watch resource \"pods\""), std::string::npos);
  EXPECT_NE(message(request("PUT", "/apis/g/v1/namespaces/n/things/t/status"))
                .find("cannot update resource \"things/status\" in API group \"g\""),
            std::string::npos);
  EXPECT_EQ(message(request("GET", "/apis")),
            "forbidden: User \"system:anonymous\" cannot get path \"/apis\"");
}

TEST(IsPublicPath, AllowsHealthAndVersionOnly) {
  for (const char* path : {"/healthz", "/healthz/ping", "/livez", "/readyz", "/version"}) {
    EXPECT_TRUE(isPublicPath(path)) << path;
  }
  for (const char* path : {"/api", "/apis", "/healthzz", "/versions", "/openapi/v3"}) {
    EXPECT_FALSE(isPublicPath(path)) << path;
  }
}

}  // namespace
}  // namespace ringmaster::local
