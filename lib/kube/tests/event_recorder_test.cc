#include "ringmaster/kube/event_recorder.h"

#include <gtest/gtest.h>

#include "fake_api_client.h"
#include "fake_clock.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::kube {
namespace {

using testing::FakeApiClient;
using testing::FakeClock;
using testing::jsonResponse;
using testing::statusResponse;

const std::string kEvents = "/api/v1/namespaces/default/events";

class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_.metadata.name = "mnist";
    job_.metadata.namespace_name = "default";
    job_.metadata.uid = "a811";
    job_.metadata.resource_version = "292";
  }
  EventRecorder recorder() {
    return EventRecorder(api_, clock_, EventRecorder::Options{"ringmaster-operator", "", "", 2});
  }
  FakeApiClient api_;
  FakeClock clock_;
  TrainingJob job_;
};

TEST_F(EventRecorderTest, WritesTheClientGoShape) {
  api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  EventRecorder r = recorder();
  ASSERT_TRUE(r.record(job_, kEventNormal, "WorkersCreated", "Created 4 worker pods").ok());
  nlohmann::json sent = nlohmann::json::parse(api_.calls().at(0).body);
  // 2026-11-22T02:00:00Z in nanoseconds, in hex.
  EXPECT_EQ(sent["metadata"]["name"], "mnist.18ea3b7ac8b64000");
  EXPECT_EQ(sent["metadata"]["namespace"], "default");
  EXPECT_EQ(sent["involvedObject"], (nlohmann::json{{"apiVersion", TrainingJob::kApiVersion},
                                                    {"kind", "TrainingJob"},
                                                    {"name", "mnist"},
                                                    {"namespace", "default"},
                                                    {"uid", "a811"},
                                                    {"resourceVersion", "292"}}));
  EXPECT_EQ(sent["kind"], "Event");
  EXPECT_EQ(sent["reason"], "WorkersCreated");
  EXPECT_EQ(sent["type"], "Normal");
  EXPECT_EQ(sent["count"], 1);
  EXPECT_EQ(sent["source"], (nlohmann::json{{"component", "ringmaster-operator"}}));
  EXPECT_EQ(sent["firstTimestamp"], "2026-11-22T02:00:00Z");
  EXPECT_EQ(sent["lastTimestamp"], "2026-11-22T02:00:00Z");
  EXPECT_TRUE(sent["eventTime"].is_null());
  EXPECT_EQ(sent["reportingComponent"], "ringmaster-operator");
}

TEST_F(EventRecorderTest, RepeatsArePatchedWithCountAndLastTimestamp) {
  api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  api_.expect(Verb::kPatch, kEvents + "/mnist.18ea3b7ac8b64000", jsonResponse(200, "{}"));
  api_.expect(Verb::kPatch, kEvents + "/mnist.18ea3b7ac8b64000", jsonResponse(200, "{}"));
  EventRecorder r = recorder();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(r.record(job_, kEventWarning, "WorkerFailed", "exit 137").ok());
    clock_.advance(std::chrono::seconds(10));
  }
  ApiRequest last = api_.calls().at(2);
  EXPECT_EQ(last.content_type, kStrategicMergePatchContentType);
  EXPECT_EQ(nlohmann::json::parse(last.body),
            (nlohmann::json{
                {"count", 3}, {"lastTimestamp", "2026-11-22T02:00:20Z"}, {"message", "exit 137"}}));
}

TEST_F(EventRecorderTest, ADifferentMessageIsANewEvent) {
  api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  EventRecorder r = recorder();
  ASSERT_TRUE(r.record(job_, kEventWarning, "WorkerFailed", "exit 137").ok());
  clock_.advance(std::chrono::seconds(1));
  ASSERT_TRUE(r.record(job_, kEventWarning, "WorkerFailed", "exit 1").ok());
  EXPECT_EQ(api_.remaining(), 0u);
}

TEST_F(EventRecorderTest, ExpiredEventStartsANewSeries) {
  api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  api_.expect(Verb::kPatch, kEvents + "/mnist.18ea3b7ac8b64000",
              statusResponse(404, "NotFound", "events \"mnist.18ea3b7ac8b64000\" not found"));
  api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  EventRecorder r = recorder();
  ASSERT_TRUE(r.record(job_, kEventNormal, "Started", "go").ok());
  clock_.advance(std::chrono::hours(2));
  ASSERT_TRUE(r.record(job_, kEventNormal, "Started", "go").ok());
  nlohmann::json sent = nlohmann::json::parse(api_.calls().at(2).body);
  EXPECT_EQ(sent["count"], 1);
  EXPECT_NE(sent["metadata"]["name"], "mnist.18ea3b7ac8b64000");
}

TEST_F(EventRecorderTest, ApiErrorsAreReturnedWithContext) {
  api_.expect(Verb::kPost, kEvents, statusResponse(403, "Forbidden", "cannot create events"));
  EventRecorder r = recorder();
  core::Status s = r.record(job_, kEventNormal, "Started", "go");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("event Started for TrainingJob mnist"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("cannot create events"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::kube
