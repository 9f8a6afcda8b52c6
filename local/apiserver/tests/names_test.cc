// Names through ApiServer::handle(): built-in objects get kube-apiserver's 422 for names that are
// not what their kind allows, URL segments "."/".." are refused, and the TrainingJob CRD of
// crds/trainingjob.yaml refuses volume names and paths that climb out of their directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "local/apiserver/api_server.h"
#include "local/apiserver/tests/in_process.h"
#include "local/run/run_command.h"
#include "ringmaster/kube/yaml_documents.h"
#include "tests/testutil/process.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using testing::call;

class NamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = testing::startServer(dir_.path());
    ASSERT_TRUE(started.ok()) << started.status().message();
    server_ = std::move(*started);
  }
  testing::Reply post(const std::string& url, const json& body) {
    return call(*server_, "POST", url, body.dump());
  }
  static json pod(const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}}},
            {"spec", {{"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
  }
  testutil::TempDir dir_;
  std::unique_ptr<ApiServer> server_;
};

TEST_F(NamesTest, PodsWithPathOrShellCharactersInTheirNameAre422) {
  for (const std::string name : {"../../tmp/x", "a b;c", "Bad_Name"}) {
    auto r = post("/api/v1/namespaces/default/pods", pod(name));
    ASSERT_EQ(r.status, 422) << name << ": " << r.body;
    json body = json::parse(r.body);
    EXPECT_EQ(body["reason"], "Invalid");
    EXPECT_EQ(body["details"]["name"], name);
    EXPECT_EQ(body["details"]["kind"], "Pod");
    ASSERT_EQ(body["details"]["causes"].size(), 1u);
    EXPECT_EQ(body["details"]["causes"][0]["field"], "metadata.name");
    EXPECT_EQ(body["details"]["causes"][0]["reason"], "FieldValueInvalid");
    const std::string message = body["message"];
    EXPECT_EQ(message.rfind("Pod " + json(name).dump() +
                                " is invalid: metadata.name: Invalid "
                                "value: " +
                                json(name).dump() + ": a lowercase RFC 1123 subdomain",
                            0),
              0u)
        << message;
  }
  auto list = call(*server_, "GET", "/api/v1/namespaces/default/pods");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(json::parse(list.body)["items"].empty());
  EXPECT_EQ(post("/api/v1/namespaces/default/pods", pod("worker-0")).status, 201);
}

TEST_F(NamesTest, NamespacesAndServicesFollowTheirOwnRules) {
  auto ns = post("/api/v1/namespaces",
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "Bad_NS"}}}});
  EXPECT_EQ(ns.status, 422) << ns.body;
  auto svc = post("/api/v1/namespaces/default/services", {{"apiVersion", "v1"},
                                                          {"kind", "Service"},
                                                          {"metadata", {{"name", "1abc"}}},
                                                          {"spec", {{"ports", {{{"port", 80}}}}}}});
  ASSERT_EQ(svc.status, 422) << svc.body;
  EXPECT_NE(svc.body.find("a DNS-1035 label must consist of"), std::string::npos) << svc.body;
}

TEST_F(NamesTest, DotSegmentsInUrlsAreRefused) {
  auto name = call(*server_, "GET", "/api/v1/namespaces/default/configmaps/..");
  EXPECT_EQ(name.status, 400) << name.body;
  EXPECT_EQ(json::parse(name.body)["message"], "Name parameter invalid: \"..\": may not be '..'");
  auto ns = call(*server_, "GET", "/api/v1/namespaces/../configmaps/x");
  EXPECT_EQ(ns.status, 404) << ns.body;
  auto del = call(*server_, "DELETE", "/api/v1/namespaces/default/pods/.");
  EXPECT_EQ(del.status, 400) << del.body;
}

// The TrainingJob CRD as shipped: volume names are DNS-1123 labels, paths have no "..".
class TrainingJobCrdTest : public NamesTest {
 protected:
  void SetUp() override {
    NamesTest::SetUp();
    if (HasFatalFailure()) return;
    auto docs = kube::parseYamlDocuments(builtInCrdsYaml(), "crds/");
    ASSERT_TRUE(docs.ok()) << docs.status().toString();
    ASSERT_EQ(docs->size(), 2u);  // TrainingJob, then Experiment
    ASSERT_EQ((*docs)[0]["metadata"]["name"], "trainingjobs.ringmaster.dev");
    auto r = post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", (*docs)[0]);
    ASSERT_EQ(r.status, 201) << r.body;
  }
  static json job(json spec) {
    spec["replicas"] = 1;
    return {{"apiVersion", "ringmaster.dev/v1alpha1"},
            {"kind", "TrainingJob"},
            {"metadata", {{"name", "fmnist"}}},
            {"spec", std::move(spec)}};
  }
  testing::Reply create(json spec) {
    return post("/apis/ringmaster.dev/v1alpha1/namespaces/default/trainingjobs",
                job(std::move(spec)));
  }
};

json mounts(const std::string& name, const std::string& path, const std::string& sub_path = "") {
  json m = {{"name", name}, {"mountPath", path}};
  if (!sub_path.empty()) m["subPath"] = sub_path;
  return {{"volumes", {{{"name", name}, {"emptyDir", json::object()}}}},
          {"volumeMounts", json::array({m})}};
}

struct BadJob {
  std::string what;
  json spec;
  std::string field;
};

TEST_F(TrainingJobCrdTest, VolumeNamesAndPathsThatClimbOutAre422NamingTheField) {
  const std::vector<BadJob> cases = {
      {"volume name ../x", mounts("../x", "/data"), "spec.volumes[0].name"},
      {"volume name with a dot", mounts("a.b", "/data"), "spec.volumes[0].name"},
      {"volume name of 64 characters", mounts(std::string(64, 'v'), "/data"),
       "spec.volumes[0].name"},
      {"relative mountPath", mounts("data", "data"), "spec.volumeMounts[0].mountPath"},
      {"mountPath with ..", mounts("data", "/data/../etc"), "spec.volumeMounts[0].mountPath"},
      {"absolute subPath", mounts("data", "/data", "/etc"), "spec.volumeMounts[0].subPath"},
      {"subPath with ..", mounts("data", "/data", "a/../.."), "spec.volumeMounts[0].subPath"},
      {"checkpoint path with ..",
       {{"trainer", {{"checkpoint", {{"path", "../../ckpt"}}}}}},
       "spec.trainer.checkpoint.path"},
  };
  for (const BadJob& c : cases) {
    auto r = create(c.spec);
    ASSERT_EQ(r.status, 422) << c.what << ": " << r.body;
    bool named = false;
    const json body = json::parse(r.body);
    for (const auto& cause : body["details"]["causes"]) {
      named = named || cause["field"] == c.field;
    }
    EXPECT_TRUE(named) << c.what << ": " << r.body;
  }
  json good = mounts("ckpt-0", "/ckpt/./run...1", "job/..hidden");
  good["trainer"] = {{"checkpoint", {{"path", "/ckpt/run"}}}};
  auto r = create(good);
  EXPECT_EQ(r.status, 201) << r.body;
}

}  // namespace
}  // namespace ringmaster::local
