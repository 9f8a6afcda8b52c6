#include "ringmaster/kube/event_recorder.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

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

// Holds every request until open() is called, then hands it to the scripted client.
class GatedClient : public ApiClient {
 public:
  explicit GatedClient(ApiClient& inner) : inner_(inner) {}
  core::Result<ApiResponse> request(const ApiRequest& request) override {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    lock.unlock();
    return inner_.request(request);
  }
  ApiResult<std::unique_ptr<WatchStream>> watch(const ApiRequest& request,
                                                WatchSink& sink) override {
    return inner_.watch(request, sink);
  }
  const std::string& defaultNamespace() const override { return inner_.defaultNamespace(); }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Until a request is held at the gate.
  bool waitForRequest() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return waiting_ > 0; });
  }

 private:
  ApiClient& inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

EventRecorder::Options queued(size_t max_queued) {
  EventRecorder::Options options{"ringmaster-operator", "", "", 16};
  options.max_queued = max_queued;
  return options;
}

TEST_F(EventRecorderTest, QueuedEventsAreWrittenInOrderStampedWhenRecorded) {
  for (int i = 0; i < 3; ++i) api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  GatedClient gated(api_);
  EventRecorder r(gated, clock_, queued(10));
  for (const char* reason : {"A", "B", "C"}) {
    ASSERT_TRUE(r.record(job_, kEventNormal, reason, "m").ok());
    clock_.advance(std::chrono::seconds(1));
  }
  EXPECT_TRUE(api_.calls().empty()) << "record() waited for the write";
  clock_.advance(std::chrono::hours(1));  // the sender writes later than the Events happened
  gated.open();
  ASSERT_TRUE(r.flush(std::chrono::seconds(10)));
  ASSERT_EQ(api_.calls().size(), 3u);
  const std::vector<std::string> reasons = {"A", "B", "C"};
  const std::vector<std::string> times = {"2026-11-22T02:00:00Z", "2026-11-22T02:00:01Z",
                                          "2026-11-22T02:00:02Z"};
  for (size_t i = 0; i < 3; ++i) {
    nlohmann::json sent = nlohmann::json::parse(api_.calls()[i].body);
    EXPECT_EQ(sent["reason"], reasons[i]);
    EXPECT_EQ(sent["firstTimestamp"], times[i]);
  }
}

TEST_F(EventRecorderTest, AFullQueueDropsTheEventAndSaysSo) {
  for (int i = 0; i < 2; ++i) api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  GatedClient gated(api_);
  EventRecorder r(gated, clock_, queued(1));
  ASSERT_TRUE(r.record(job_, kEventNormal, "First", "m").ok());
  ASSERT_TRUE(gated.waitForRequest());                            // the sender holds the first one
  ASSERT_TRUE(r.record(job_, kEventNormal, "Second", "m").ok());  // fills the queue
  core::Status dropped = r.record(job_, kEventWarning, "Third", "m");
  EXPECT_EQ(dropped.code(), core::Code::kUnavailable);
  EXPECT_NE(dropped.message().find("event Third for TrainingJob mnist dropped"), std::string::npos)
      << dropped.message();
  gated.open();
  ASSERT_TRUE(r.flush(std::chrono::seconds(10)));
  ASSERT_EQ(api_.calls().size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(api_.calls()[1].body)["reason"], "Second");
}

TEST_F(EventRecorderTest, TheDestructorWritesWhatIsStillQueued) {
  for (int i = 0; i < 2; ++i) api_.expect(Verb::kPost, kEvents, jsonResponse(201, "{}"));
  {
    EventRecorder r(api_, clock_, queued(10));
    ASSERT_TRUE(r.record(job_, kEventNormal, "A", "m").ok());
    ASSERT_TRUE(r.record(job_, kEventNormal, "B", "m").ok());
  }
  EXPECT_EQ(api_.calls().size(), 2u);
}

}  // namespace
}  // namespace ringmaster::kube
