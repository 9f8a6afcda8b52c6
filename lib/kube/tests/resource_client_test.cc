#include "ringmaster/kube/resource_client.h"

#include <gtest/gtest.h>

#include "fake_api_client.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::kube {
namespace {

using testing::FakeApiClient;
using testing::jsonResponse;
using testing::queryParam;
using testing::statusResponse;

const ResourceType kConfigMapsType{"", "v1", "configmaps", true};
const ResourceType kTrainingJobs{"ringmaster.dev", "v1alpha1", "trainingjobs", true};
const ResourceType kNodes{"", "v1", "nodes", false};

TEST(ResourcePathTest, BuildsCoreGroupAndNamedGroupPaths) {
  EXPECT_EQ(collectionPath(kConfigMapsType, "default"), "/api/v1/namespaces/default/configmaps");
  EXPECT_EQ(collectionPath(kConfigMapsType, ""), "/api/v1/configmaps");
  EXPECT_EQ(objectPath(kTrainingJobs, "ns", "mnist", "status"),
            "/apis/ringmaster.dev/v1alpha1/namespaces/ns/trainingjobs/mnist/status");
  EXPECT_EQ(objectPath(kNodes, "ignored", "node-1"), "/api/v1/nodes/node-1");
  EXPECT_EQ(objectPath(kConfigMapsType, "a b", "x/y"), "/api/v1/namespaces/a%20b/configmaps/x%2Fy");
}

TEST(ResourceClientTest, GetDecodesTheTypedObject) {
  FakeApiClient api;
  api.expect(Verb::kGet, "/api/v1/namespaces/default/configmaps/cfg",
             jsonResponse(200, R"({"apiVersion":"v1","kind":"ConfigMap",
                 "metadata":{"name":"cfg","resourceVersion":"7"},"data":{"k":"v"}})"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  ApiResult<ConfigMap> cm = client.get("cfg");
  ASSERT_TRUE(cm.ok()) << cm.status().toString();
  EXPECT_EQ(cm->metadata.resource_version, "7");
  EXPECT_EQ(cm->data.at("k"), "v");
}

TEST(ResourceClientTest, NotFoundKeepsTheServersStatus) {
  FakeApiClient api;
  api.expect(Verb::kGet, "/api/v1/namespaces/default/configmaps/nope",
             statusResponse(404, "NotFound", "configmaps \"nope\" not found"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  ApiResult<ConfigMap> cm = client.get("nope");
  ASSERT_FALSE(cm.ok());
  EXPECT_TRUE(cm.error().isNotFound());
  EXPECT_EQ(cm.error().httpCode(), 404);
  EXPECT_EQ(cm.error().reason(), "NotFound");
  EXPECT_EQ(cm.status().code(), core::Code::kNotFound);
  EXPECT_NE(cm.status().message().find("configmaps \"nope\" not found"), std::string::npos);
  EXPECT_NE(cm.status().message().find("GET /api/v1/namespaces/default/configmaps/nope"),
            std::string::npos);
}

TEST(ResourceClientTest, TellsAlreadyExistsFromConflict) {
  FakeApiClient api;
  api.expect(Verb::kPost, "/api/v1/namespaces/default/configmaps",
             statusResponse(409, "AlreadyExists", "configmaps \"cfg\" already exists"));
  api.expect(Verb::kPut, "/api/v1/namespaces/default/configmaps/cfg",
             statusResponse(409, "Conflict", "the object has been modified"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  ConfigMap cm;
  cm.metadata.name = "cfg";
  ApiResult<ConfigMap> created = client.create(cm);
  ASSERT_FALSE(created.ok());
  EXPECT_TRUE(created.error().isAlreadyExists());
  EXPECT_FALSE(created.error().isConflict());
  EXPECT_EQ(created.status().code(), core::Code::kAlreadyExists);
  ApiResult<ConfigMap> updated = client.update(cm);
  ASSERT_FALSE(updated.ok());
  EXPECT_TRUE(updated.error().isConflict());
  EXPECT_FALSE(updated.error().isAlreadyExists());
}

TEST(ResourceClientTest, CreateSendsTypeMetaAndJson) {
  FakeApiClient api;
  api.expect(Verb::kPost, "/api/v1/namespaces/team/configmaps",
             jsonResponse(201, R"({"metadata":{"name":"cfg","uid":"u1"}})"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType);  // namespace taken from the object
  ConfigMap cm;
  cm.metadata.name = "cfg";
  cm.metadata.namespace_name = "team";
  ApiResult<ConfigMap> created = client.create(cm);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  EXPECT_EQ(created->metadata.uid, "u1");
  ApiRequest sent = api.calls().at(0);
  core::Result<ConfigMap> body = decodeText<ConfigMap>(sent.body);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->kind, "ConfigMap");
  EXPECT_EQ(body->api_version, "v1");
}

TEST(ResourceClientTest, PatchUsesTheContentTypeOfItsKind) {
  FakeApiClient api;
  api.expect(Verb::kPatch, "/api/v1/namespaces/default/configmaps/cfg",
             jsonResponse(200, R"({"metadata":{"name":"cfg"}})"));
  api.expect(Verb::kPatch, "/api/v1/namespaces/default/configmaps/cfg/status",
             jsonResponse(200, R"({"metadata":{"name":"cfg"}})"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  ASSERT_TRUE(client.patch("cfg", PatchType::kMerge, {{"data", {{"a", "b"}}}}).ok());
  ASSERT_TRUE(client
                  .patch("cfg", PatchType::kJson,
                         nlohmann::json::array({{{"op", "remove"}, {"path", "/data/a"}}}), "status")
                  .ok());
  EXPECT_EQ(api.calls()[0].content_type, kMergePatchContentType);
  EXPECT_EQ(api.calls()[1].content_type, kJsonPatchContentType);
  EXPECT_EQ(api.calls()[0].body, R"({"data":{"a":"b"}})");
}

TEST(ResourceClientTest, ListAndWatchCarryTheirQuery) {
  FakeApiClient api;
  api.expect(Verb::kGet, "/api/v1/configmaps",
             jsonResponse(200, R"({"metadata":{"resourceVersion":"42"},"items":[]})"));
  api.expectWatch("/api/v1/configmaps", {}, std::nullopt);
  ResourceClient<ConfigMap> client(api, kConfigMapsType);
  ListOptions list;
  list.label_selector = "app=x";
  list.limit = 10;
  ApiResult<List<ConfigMap>> items = client.list(list);
  ASSERT_TRUE(items.ok()) << items.status().toString();
  EXPECT_EQ(items->metadata.resource_version, "42");

  struct NullSink : WatchSink {
    void onLine(std::string_view) override {}
    void onClose(const core::Status&) override {}
  } sink;
  WatchOptions watch;
  watch.resource_version = "42";
  watch.timeout_seconds = 400;
  ASSERT_TRUE(client.watch(watch, sink).ok());
  ApiRequest l = api.calls()[0], w = api.calls()[1];
  EXPECT_EQ(queryParam(l, "labelSelector"), "app=x");
  EXPECT_EQ(queryParam(l, "limit"), "10");
  EXPECT_EQ(queryParam(w, "watch"), "true");
  EXPECT_EQ(queryParam(w, "resourceVersion"), "42");
  EXPECT_EQ(queryParam(w, "timeoutSeconds"), "400");
  EXPECT_EQ(queryParam(w, "allowWatchBookmarks"), "true");
  EXPECT_GT(w.timeout, std::chrono::seconds(400));
}

TEST(ResourceClientTest, ReplyThatDoesNotDecodeNamesCallAndField) {
  FakeApiClient api;
  api.expect(Verb::kGet, "/api/v1/namespaces/default/configmaps/cfg",
             jsonResponse(200, R"({"metadata":{"name":"cfg"},"data":{"k":3}})"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  ApiResult<ConfigMap> cm = client.get("cfg");
  ASSERT_FALSE(cm.ok());
  EXPECT_TRUE(cm.error().isTransport());
  EXPECT_EQ(cm.status().code(), core::Code::kInvalidArgument);
  EXPECT_NE(cm.status().message().find("data.k"), std::string::npos) << cm.status().message();
}

TEST(ResourceClientTest, PlainTextErrorBodyBecomesTheMessage) {
  FakeApiClient api;
  api.expect(Verb::kDelete, "/api/v1/namespaces/default/configmaps/cfg",
             ApiResponse{404, {{"Content-Type", "text/plain"}}, "404 page not found\n"});
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  ApiResult<NoContent> removed = client.remove("cfg");
  ASSERT_FALSE(removed.ok());
  EXPECT_TRUE(removed.error().isNotFound());
  EXPECT_EQ(removed.error().apiStatus().message, "404 page not found");
}

// A delete of one object, not of whatever now has its name.
TEST(ResourceClientTest, DeleteWithAUidPreconditionSendsItInTheBody) {
  FakeApiClient api;
  api.expect(Verb::kDelete, "/api/v1/namespaces/default/configmaps/cfg",
             statusResponse(409, "Conflict", "Precondition failed: UID in precondition: u-1"));
  ResourceClient<ConfigMap> client(api, kConfigMapsType, "default");
  DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = "u-1";
  ApiResult<NoContent> removed = client.remove("cfg", options);
  ASSERT_FALSE(removed.ok());
  EXPECT_TRUE(removed.error().isConflict());
  ASSERT_EQ(api.calls().size(), 1u);
  const nlohmann::json body = nlohmann::json::parse(api.calls()[0].body);
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["kind"], "DeleteOptions");
}

TEST(ApiErrorTest, KeepsRetryAfter) {
  ApiError e = ApiError::fromResponse(
      "GET /x", statusResponse(429, "TooManyRequests", "slow down", {{"Retry-After", "3"}}));
  EXPECT_TRUE(e.isTooManyRequests());
  ASSERT_TRUE(e.retryAfter().has_value());
  EXPECT_EQ(*e.retryAfter(), std::chrono::seconds(3));
  EXPECT_EQ(e.status().code(), core::Code::kUnavailable);
}

TEST(ApiResultTest, ConvertsToCoreResult) {
  ApiResult<int> bad = ApiError::fromStatus(core::timeoutError("deadline"));
  core::Result<int> r = std::move(bad);
  EXPECT_EQ(r.status().code(), core::Code::kTimeout);
  core::Result<int> good = ApiResult<int>(5);
  EXPECT_EQ(*good, 5);
}

}  // namespace
}  // namespace ringmaster::kube
