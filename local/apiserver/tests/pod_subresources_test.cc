// POST pods/{name}/binding and GET pods/{name}/log through ApiServer::handle().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "local/apiserver/api_server.h"
#include "local/apiserver/pod_log.h"
#include "local/apiserver/tests/in_process.h"
#include "tests/testutil/process.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::call;
using testing::StreamCall;

constexpr const char* kPods = "/api/v1/namespaces/default/pods";

json podManifest(const std::string& name, std::vector<std::string> containers = {"trainer"}) {
  json cs = json::array();
  for (const auto& c : containers) cs.push_back({{"name", c}, {"image", "busybox"}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec", {{"containers", cs}}}};
}

class PodSubresourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = testing::startServer(dir_.path());
    ASSERT_TRUE(started.ok()) << started.status().message();
    server_ = std::move(*started);
    root_ = fs::path(dir_.path()) / "kubelet";
  }

  json create(const json& pod) {
    auto r = call(*server_, "POST", kPods, pod.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body);
  }
  testing::Reply bind(const std::string& pod, const std::string& node) {
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", pod}, {"namespace", "default"}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    return call(*server_, "POST", std::string(kPods) + "/" + pod + "/binding", binding.dump());
  }
  void createNode(const std::string& name, bool annotated = true) {
    json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
    if (annotated) node["metadata"]["annotations"][kKubeletRootAnnotation] = root_.string();
    auto r = call(*server_, "POST", "/api/v1/nodes", node.dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  fs::path logDir(const json& pod) {
    return root_ / "pods" / "default" /
           (pod["metadata"]["name"].get<std::string>() + "_" +
            pod["metadata"]["uid"].get<std::string>());
  }
  void writeLog(const fs::path& file, const std::string& text, bool append = false) {
    fs::create_directories(file.parent_path());
    std::ofstream(file, append ? std::ios::app : std::ios::trunc) << text;
  }
  void setContainerState(const std::string& pod, const json& state) {
    json patch = {{"status", {{"containerStatuses", {{{"name", "trainer"}, {"state", state}}}}}}};
    auto r = call(*server_, "PATCH", std::string(kPods) + "/" + pod + "/status", patch.dump(),
                  "application/merge-patch+json");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  json bound(const std::string& name, std::vector<std::string> containers = {"trainer"}) {
    createNode("node-1");
    json pod = create(podManifest(name, std::move(containers)));
    EXPECT_EQ(bind(name, "node-1").status, 201);
    return pod;
  }

  testutil::TempDir dir_;
  fs::path root_;
  std::unique_ptr<ApiServer> server_;
};

TEST_F(PodSubresourcesTest, BindingSetsNodeNameAndPodScheduledAndAnswersStatus201) {
  create(podManifest("p"));
  auto r = bind("p", "node-1");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
  json pod = json::parse(call(*server_, "GET", std::string(kPods) + "/p").body);
  EXPECT_EQ(pod["spec"]["nodeName"], "node-1");
  ASSERT_EQ(pod["status"]["conditions"].size(), 1u);
  EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(pod["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(pod["status"]["phase"], "Pending");
}

// A DELETE's options come from its body when it has one, the query then ignored, as in
// kube-apiserver: a client that mixes the two gets the body's.
TEST_F(PodSubresourcesTest, DeleteOptionsComeFromTheBodyWhenThereIsOne) {
  json pod = bound("p");
  const std::string url = std::string(kPods) + "/p";
  auto wrong_uid = call(*server_, "DELETE", url, R"({"preconditions":{"uid":"someone-else"}})");
  EXPECT_EQ(wrong_uid.status, 409) << wrong_uid.body;

  // A bound pod is deleted gracefully: the query's gracePeriodSeconds=0 does not count.
  auto graceful =
      call(*server_, "DELETE", url + "?gracePeriodSeconds=0", R"({"kind":"DeleteOptions"})");
  ASSERT_EQ(graceful.status, 200) << graceful.body;
  EXPECT_TRUE(json::parse(graceful.body)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(call(*server_, "GET", url).status, 200);

  const json now = {{"gracePeriodSeconds", 0},
                    {"preconditions", {{"uid", pod["metadata"]["uid"]}}}};
  EXPECT_EQ(call(*server_, "DELETE", url, now.dump()).status, 200);
  EXPECT_EQ(call(*server_, "GET", url).status, 404);
}

TEST_F(PodSubresourcesTest, BindingAnAlreadyBoundPodIsConflict) {
  create(podManifest("p"));
  ASSERT_EQ(bind("p", "node-1").status, 201);
  auto r = bind("p", "node-2");
  EXPECT_EQ(r.status, 409);
  json body = json::parse(r.body);
  EXPECT_EQ(body["reason"], "Conflict");
  EXPECT_EQ(body["message"],
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to "
            "node \"node-1\"");
}

TEST_F(PodSubresourcesTest, BindingAMissingPodIsNotFound) {
  auto r = bind("nope", "node-1");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["message"], "pods \"nope\" not found");
}

TEST_F(PodSubresourcesTest, BindingRejectsANameMismatchAndANonNodeTarget) {
  create(podManifest("p"));
  json other = {{"metadata", {{"name", "q"}}}, {"target", {{"name", "n"}}}};
  EXPECT_EQ(call(*server_, "POST", std::string(kPods) + "/p/binding", other.dump()).status, 400);
  json svc = {{"target", {{"kind", "Service"}, {"name", "n"}}}};
  EXPECT_EQ(call(*server_, "POST", std::string(kPods) + "/p/binding", svc.dump()).status, 422);
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/binding").status, 405);
}

TEST_F(PodSubresourcesTest, DiscoveryListsBindingAndLog) {
  json doc = json::parse(call(*server_, "GET", "/api/v1").body);
  std::set<std::string> names;
  for (const auto& r : doc["resources"]) names.insert(r["name"]);
  EXPECT_TRUE(names.count("pods/binding"));
  EXPECT_TRUE(names.count("pods/log"));
}

TEST_F(PodSubresourcesTest, LogReturnsTheContainerFileAsPlainText) {
  json pod = bound("p");
  writeLog(logDir(pod) / "trainer.log", "one\ntwo\nthree\n");
  auto r = call(*server_, "GET", std::string(kPods) + "/p/log");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "text/plain");
  EXPECT_EQ(r.body, "one\ntwo\nthree\n");
}

TEST_F(PodSubresourcesTest, LogOfAContainerNamedLikeAPathReadsNoFileOutsideThePod) {
  // Pod specs are not validated: a container name could climb out of the pod's directory.
  json pod = bound("climb", {"../../../secret"});  // R/pods/default/climb_<uid>/../../../
  writeLog(root_ / "secret.log", "not for you\n");
  auto r = call(*server_, "GET", std::string(kPods) + "/climb/log");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.body.find("not for you"), std::string::npos) << r.body;
}

TEST_F(PodSubresourcesTest, LogHonoursTailLinesLimitBytesAndPrevious) {
  json pod = bound("p");
  writeLog(logDir(pod) / "trainer.log", "one\ntwo\nthree\n");
  writeLog(logDir(pod) / "trainer.previous.log", "old run\n");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?tailLines=2").body, "two\nthree\n");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?tailLines=0").body, "");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?tailLines=9").body,
            "one\ntwo\nthree\n");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?limitBytes=5").body, "one\nt");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?previous=true").body, "old run\n");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?tailLines=-1").status, 422);
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/p/log?limitBytes=x").status, 400);
}

TEST_F(PodSubresourcesTest, TailOffsetCountsAnUnterminatedLastLine) {
  fs::path f = fs::path(dir_.path()) / "f.log";
  writeLog(f, "a\nb\nc");
  EXPECT_EQ(tailOffset(f, 1), 4u);
  EXPECT_EQ(tailOffset(f, 2), 2u);
  EXPECT_EQ(tailOffset(f, 3), 0u);
  EXPECT_EQ(tailOffset(f, 0), 5u);
}

TEST_F(PodSubresourcesTest, LogNeedsAContainerNameWhenThePodHasSeveral) {
  bound("p", {"a", "b"});
  auto r = call(*server_, "GET", std::string(kPods) + "/p/log");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["message"],
            "a container name must be specified for pod p, choose one of: [a b]");
  auto bad = call(*server_, "GET", std::string(kPods) + "/p/log?container=c");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["message"], "container c is not valid for pod p");
  EXPECT_EQ(json::parse(bad.body)["reason"], "BadRequest");
}

TEST_F(PodSubresourcesTest, LogOfAWaitingContainerSaysWhy) {
  bound("p");
  setContainerState("p", {{"waiting", {{"reason", "ContainerCreating"}}}});
  auto r = call(*server_, "GET", std::string(kPods) + "/p/log");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["message"],
            "container \"trainer\" in pod \"p\" is waiting to start: ContainerCreating");
  auto prev = call(*server_, "GET", std::string(kPods) + "/p/log?previous=true");
  EXPECT_EQ(prev.status, 400);
  EXPECT_EQ(json::parse(prev.body)["message"],
            "previous terminated container \"trainer\" in pod \"p\" not found");
}

TEST_F(PodSubresourcesTest, LogOfAnUnboundPodIsEmptyAndOfAMissingPodNotFound) {
  create(podManifest("p"));
  auto r = call(*server_, "GET", std::string(kPods) + "/p/log");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(call(*server_, "GET", std::string(kPods) + "/nope/log").status, 404);
}

TEST_F(PodSubresourcesTest, LogWithoutKubeletRootAnnotationIsInternalError) {
  createNode("bare", false);
  create(podManifest("p"));
  ASSERT_EQ(bind("p", "bare").status, 201);
  auto r = call(*server_, "GET", std::string(kPods) + "/p/log");
  EXPECT_EQ(r.status, 500);
}

TEST_F(PodSubresourcesTest, FollowStreamsAppendedLinesUntilTheContainerTerminates) {
  json pod = bound("p");
  const fs::path file = logDir(pod) / "trainer.log";
  writeLog(file, "first\n");
  setContainerState("p", {{"running", {{"startedAt", "2026-11-22T01:59:56Z"}}}});
  StreamCall follow(*server_, std::string(kPods) + "/p/log?follow=true");
  ASSERT_TRUE(follow.sink().waitFor("first\n"));
  writeLog(file, "second\n", true);
  ASSERT_TRUE(follow.sink().waitFor("second\n"));
  writeLog(file, "last\n", true);
  setContainerState("p", {{"terminated", {{"exitCode", 0}}}});
  ASSERT_TRUE(follow.waitDone());
  auto reply = follow.reply();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "first\nsecond\nlast\n");
  EXPECT_NE(follow.sink().raw().find("\r\n0\r\n\r\n"), std::string::npos);  // stream ended
}

TEST_F(PodSubresourcesTest, FollowEndsWhenTheClientGoesAway) {
  json pod = bound("p");
  writeLog(logDir(pod) / "trainer.log", "x\n");
  StreamCall follow(*server_, std::string(kPods) + "/p/log?follow=true");
  ASSERT_TRUE(follow.sink().waitFor("x\n"));
  follow.disconnect();
  EXPECT_TRUE(follow.waitDone());
}

}  // namespace
}  // namespace ringmaster::local
