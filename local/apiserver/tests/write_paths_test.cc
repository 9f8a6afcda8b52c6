// Write paths of ApiServer::handle(): field validation (Warning header / Strict 400), dryRun,
// server-side apply (common case) and protobuf bodies, for custom and built-in resources.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "local/apiserver/api_server.h"
#include "local/apiserver/tests/in_process.h"
#include "ringmaster/core/base64.h"
#include "tests/testutil/process.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::call;

constexpr const char* kJobs = "/apis/example.dev/v1/namespaces/default/jobs";

json crd() {
  return json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"jobs.example.dev"},
    "spec":{"group":"example.dev","scope":"Namespaced","names":{"plural":"jobs","kind":"Job"},
      "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
        "schema":{"openAPIV3Schema":{"type":"object","properties":{
          "spec":{"type":"object","properties":{
            "size":{"type":"integer","minimum":1},
            "mode":{"type":"string","default":"fast"}}}}}}}]}})");
}

json job(const std::string& name, json spec) {
  return {{"apiVersion", "example.dev/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}}},
          {"spec", std::move(spec)}};
}

class WritePathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = testing::startServer(dir_.path());
    ASSERT_TRUE(started.ok()) << started.status().message();
    server_ = std::move(*started);
    auto r = call(*server_, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                  crd().dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  testutil::TempDir dir_;
  std::unique_ptr<ApiServer> server_;
};

TEST_F(WritePathsTest, UnknownFieldsArePrunedWithAWarningByDefault) {
  auto r = call(*server_, "POST", kJobs, job("a", {{"size", 2}, {"gpus", 8}}).dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.header("Warning"), R"(299 - "unknown field \"spec.gpus\"")");
  json obj = json::parse(r.body);
  EXPECT_FALSE(obj["spec"].contains("gpus"));
  EXPECT_EQ(obj["spec"]["mode"], "fast");  // defaulted
}

TEST_F(WritePathsTest, StrictFieldValidationRejectsUnknownFieldsWith400) {
  auto r = call(*server_, "POST", std::string(kJobs) + "?fieldValidation=Strict",
                job("a", {{"size", 2}, {"gpus", 8}, {"zz", 1}}).dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["message"],
            "Job in version \"v1\" cannot be handled as a Job: strict decoding error: unknown "
            "field \"spec.gpus\", unknown field \"spec.zz\"");
  auto ignored = call(*server_, "POST", std::string(kJobs) + "?fieldValidation=Ignore",
                      job("b", {{"size", 2}, {"gpus", 8}}).dump());
  EXPECT_EQ(ignored.status, 201);
  EXPECT_EQ(ignored.header("Warning"), "");
  EXPECT_EQ(call(*server_, "POST", std::string(kJobs) + "?fieldValidation=Loud",
                 job("c", {{"size", 2}}).dump())
                .status,
            400);
}

TEST_F(WritePathsTest, SchemaIsEnforcedOnPatchesAndStatusWrites) {
  ASSERT_EQ(call(*server_, "POST", kJobs, job("a", {{"size", 2}}).dump()).status, 201);
  auto bad = call(*server_, "PATCH", std::string(kJobs) + "/a", R"({"spec":{"size":0}})",
                  "application/merge-patch+json");
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(json::parse(bad.body)["details"]["causes"][0]["field"], "spec.size");
  auto typed = call(*server_, "PATCH", std::string(kJobs) + "/a/status", R"({"status":{"x":1}})",
                    "application/merge-patch+json");
  EXPECT_EQ(typed.status, 200);  // status has no schema here: pruned, not rejected
  EXPECT_FALSE(json::parse(typed.body).contains("status"));
}

TEST_F(WritePathsTest, DryRunAllPersistsNothing) {
  auto r =
      call(*server_, "POST", std::string(kJobs) + "?dryRun=All", job("a", {{"size", 2}}).dump());
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(call(*server_, "GET", std::string(kJobs) + "/a").status, 404);
  ASSERT_EQ(call(*server_, "POST", kJobs, job("a", {{"size", 2}}).dump()).status, 201);
  auto del = call(*server_, "DELETE", std::string(kJobs) + "/a", R"({"dryRun":["All"]})");
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(json::parse(del.body)["status"], "Success");
  EXPECT_EQ(call(*server_, "GET", std::string(kJobs) + "/a").status, 200);
  EXPECT_EQ(
      call(*server_, "POST", std::string(kJobs) + "?dryRun=Some", job("b", {{"size", 2}}).dump())
          .status,
      400);
}

TEST_F(WritePathsTest, ServerSideApplyCreatesThenMerges) {
  auto created = call(*server_, "PATCH", std::string(kJobs) + "/a?fieldManager=kubectl",
                      job("a", {{"size", 2}}).dump(), "application/apply-patch+yaml");
  EXPECT_EQ(created.status, 201) << created.body;
  auto merged = call(*server_, "PATCH", std::string(kJobs) + "/a?fieldManager=kubectl",
                     job("a", {{"size", 3}}).dump(), "application/apply-patch+yaml");
  EXPECT_EQ(merged.status, 200) << merged.body;
  json obj = json::parse(merged.body);
  EXPECT_EQ(obj["spec"]["size"], 3);
  EXPECT_EQ(obj["metadata"]["generation"], 2);
  auto invalid = call(*server_, "PATCH", std::string(kJobs) + "/a", job("a", {{"size", 0}}).dump(),
                      "application/apply-patch+yaml");
  EXPECT_EQ(invalid.status, 422);
  auto renamed = call(*server_, "PATCH", std::string(kJobs) + "/a",
                      job("other", {{"size", 1}}).dump(), "application/apply-patch+yaml");
  EXPECT_EQ(renamed.status, 400);
}

TEST_F(WritePathsTest, ProtobufConfigMapBodyIsDecodedOtherKindsAre415) {
  auto field = [](int n, const std::string& payload) {
    return std::string(1, static_cast<char>((n << 3) | 2)) +
           std::string(1, static_cast<char>(payload.size())) + payload;
  };
  auto envelope = [&](const std::string& kind, const std::string& raw) {
    return std::string("k8s\0", 4) + field(1, field(1, "v1") + field(2, kind)) + field(2, raw);
  };
  const std::string cm =
      envelope("ConfigMap", field(1, field(1, "pb")) + field(2, field(1, "a") + field(2, "b")));
  auto r = call(*server_, "POST", "/api/v1/namespaces/default/configmaps", cm,
                "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["data"]["a"], "b");
  auto pod = call(*server_, "POST", "/api/v1/namespaces/default/pods",
                  envelope("Pod", field(1, field(1, "x"))), "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(pod.status, 415);
  EXPECT_EQ(json::parse(pod.body)["reason"], "UnsupportedMediaType");
}

TEST_F(WritePathsTest, OpenApiPublishesTheCrdSchemaAndBuiltinKinds) {
  auto doc = json::parse(call(*server_, "GET", "/openapi/v3/apis/example.dev/v1").body);
  const json& job_schema = doc["components"]["schemas"]["dev.example.v1.Job"];
  EXPECT_EQ(job_schema["x-kubernetes-group-version-kind"][0]["kind"], "Job");
  EXPECT_EQ(job_schema["properties"]["spec"]["properties"]["size"]["minimum"], 1);
  EXPECT_TRUE(doc["components"]["schemas"].contains("dev.example.v1.JobList"));
  auto core = json::parse(call(*server_, "GET", "/openapi/v3/api/v1").body);
  const json& schemas = core["components"]["schemas"];
  EXPECT_EQ(schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
  EXPECT_TRUE(schemas["io.k8s.api.core.v1.Container"]["properties"].contains("image"));
  EXPECT_TRUE(schemas.contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
  // Every $ref resolves inside the document.
  std::function<void(const json&)> check = [&](const json& v) {
    if (v.is_object()) {
      if (v.contains("$ref")) {
        std::string ref = v["$ref"];
        EXPECT_TRUE(schemas.contains(ref.substr(ref.rfind('/') + 1))) << ref;
      }
      for (const auto& [k, e] : v.items()) check(e);
    } else if (v.is_array()) {
      for (const auto& e : v) check(e);
    }
  };
  check(schemas);
}

TEST_F(WritePathsTest, TokenRequestIssuesAServiceAccountToken) {
  const std::string base = "/api/v1/namespaces/default/serviceaccounts";
  ASSERT_EQ(call(*server_, "POST", base, R"({"apiVersion":"v1","kind":"ServiceAccount",
    "metadata":{"name":"robot"}})")
                .status,
            201);
  auto request = [&](const std::string& account, int64_t seconds) {
    json body = {{"apiVersion", "authentication.k8s.io/v1"},
                 {"kind", "TokenRequest"},
                 {"spec",
                  {{"expirationSeconds", seconds},
                   {"boundObjectRef", {{"kind", "Pod"}, {"name", "p1"}, {"uid", "u1"}}}}}};
    return call(*server_, "POST", base + "/" + account + "/token", body.dump());
  };
  // The token's claims: the second of its three base64url parts.
  auto claims = [](const std::string& token) {
    const auto first = token.find('.');
    const auto second = token.find('.', first + 1);
    auto text = core::base64UrlDecode(token.substr(first + 1, second - first - 1));
    return text ? json::parse(*text) : json();
  };
  struct Case {
    int64_t asked;
    int64_t valid;  // exp - iat
  };
  for (const Case& c : {Case{600, 600}, Case{3607, 365LL * 24 * 3600}, Case{7200, 7200}}) {
    auto r = request("robot", c.asked);
    ASSERT_EQ(r.status, 201) << r.body;
    const json answer = json::parse(r.body);
    EXPECT_EQ(answer["kind"], "TokenRequest");
    EXPECT_EQ(answer["spec"]["audiences"], json::array({"https://kubernetes.default.svc"}));
    const json c_claims = claims(answer["status"]["token"].get<std::string>());
    EXPECT_EQ(c_claims["sub"], "system:serviceaccount:default:robot");
    EXPECT_EQ(c_claims["kubernetes.io"]["pod"]["name"], "p1");
    EXPECT_EQ(c_claims["exp"].get<int64_t>() - c_claims["iat"].get<int64_t>(), c.valid) << c.asked;
  }
  auto too_short = request("robot", 599);
  EXPECT_EQ(too_short.status, 422);
  EXPECT_NE(too_short.body.find("may not specify a duration less than 10 minutes"),
            std::string::npos)
      << too_short.body;
  EXPECT_EQ(request("nobody", 600).status, 404);
}

}  // namespace
}  // namespace ringmaster::local
