#include "ringmaster/kube/watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fake_api_client.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/reflector.h"

namespace ringmaster::kube {
namespace {

using std::chrono::milliseconds;
using testing::FakeApiClient;
using testing::jsonResponse;
using testing::queryParam;
using testing::statusResponse;

const ResourceType kWatchedConfigMaps{"", "v1", "configmaps", true};
const std::string kConfigMapsPath = "/api/v1/namespaces/ns/configmaps";

nlohmann::json configMap(const std::string& name, const std::string& rv,
                         const std::string& value = "v") {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}},
          {"data", {{"k", value}}}};
}

std::string listBody(const std::string& rv, std::vector<nlohmann::json> items) {
  return nlohmann::json{{"metadata", {{"resourceVersion", rv}}}, {"items", items}}.dump();
}

std::string event(const std::string& type, const nlohmann::json& object) {
  return nlohmann::json{{"type", type}, {"object", object}}.dump();
}

std::string bookmark(const std::string& rv) {
  return event(
      "BOOKMARK",
      {{"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}});
}

std::string expired() {
  return event("ERROR", nlohmann::json::parse(encodeText(ApiStatus::failure(
                            410, "Expired", "too old resource version: 5 (90)"))));
}

class WatcherTest : public ::testing::Test {
 protected:
  Watcher<ConfigMap>::Options options() {
    Watcher<ConfigMap>::Options o;
    o.poll = milliseconds(0);
    o.seed = 7;
    o.initial_backoff = milliseconds(100);
    o.max_backoff = milliseconds(1000);
    o.backoff_jitter = 0;  // exact delays
    return o;
  }
  std::unique_ptr<Watcher<ConfigMap>> makeWatcher() {
    Watcher<ConfigMap>::Handler h;
    h.relisted = [this](std::vector<ConfigMap> items, std::vector<RawObject> undecodable) {
      relists_.push_back(items.size());
      for (const RawObject& raw : undecodable) {
        undecodable_.push_back("LISTED " + raw.metadata.name + ": " + raw.error.message());
      }
    };
    h.event = [this](const WatchEvent<ConfigMap>& e) {
      events_.push_back(std::string(watchEventTypeName(e.type)) + " " + e.object.metadata.name);
    };
    h.undecodable = [this](const WatchEvent<RawObject>& e) {
      undecodable_.push_back(std::string(watchEventTypeName(e.type)) + " " +
                             e.object.metadata.name + ": " + e.object.error.message());
    };
    return std::make_unique<Watcher<ConfigMap>>(
        ResourceClient<ConfigMap>(api_, kWatchedConfigMaps, "ns"), h, options());
  }
  ApiRequest call(size_t i) { return api_.calls().at(i); }

  FakeApiClient api_;
  std::vector<size_t> relists_;
  std::vector<std::string> events_;
  std::vector<std::string> undecodable_;
};

// A ConfigMap whose data is not a map of strings: what a server may hold that the type cannot.
nlohmann::json badConfigMap(const std::string& name, const std::string& rv) {
  nlohmann::json object = configMap(name, rv);
  object["data"]["k"] = 7;
  return object;
}

TEST_F(WatcherTest, ListsThenWatchesFromTheListsResourceVersion) {
  api_.expect(Verb::kGet, kConfigMapsPath,
              jsonResponse(200, listBody("10", {configMap("a", "9")})));
  api_.expectWatch(kConfigMapsPath, {event("ADDED", configMap("b", "11"))}, std::nullopt);
  auto w = makeWatcher();
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kEmpty);
  EXPECT_EQ(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kListing);
  EXPECT_EQ(relists_, std::vector<size_t>{1});
  EXPECT_EQ(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kWatching);
  ApiRequest watch = call(1);
  EXPECT_EQ(queryParam(watch, "resourceVersion"), "10");
  EXPECT_EQ(queryParam(watch, "allowWatchBookmarks"), "true");
  int timeout = std::stoi(queryParam(watch, "timeoutSeconds"));
  EXPECT_GE(timeout, 300);
  EXPECT_LE(timeout, 600);
  w->step();
  EXPECT_EQ(events_, std::vector<std::string>{"ADDED b"});
  EXPECT_EQ(w->resourceVersion(), "11");
}

TEST_F(WatcherTest, BookmarksAdvanceTheResourceVersionAndCleanEndRewatches) {
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("10", {})));
  api_.expectWatch(kConfigMapsPath, {bookmark("20")}, core::Status::Ok());
  api_.expectWatch(kConfigMapsPath, {}, std::nullopt);
  auto w = makeWatcher();
  w->step();
  w->step();
  EXPECT_EQ(w->step(), milliseconds(0));  // bookmark, then the server's clean end
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kListing);
  EXPECT_EQ(w->resourceVersion(), "20");
  EXPECT_TRUE(events_.empty());
  w->step();
  EXPECT_EQ(queryParam(call(2), "resourceVersion"), "20");
  EXPECT_EQ(api_.remaining(), 0u);
}

TEST_F(WatcherTest, ExpiredEventGoesBackToAFreshList) {
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("5", {})));
  api_.expectWatch(kConfigMapsPath, {expired(), event("ADDED", configMap("ignored", "99"))},
                   std::nullopt);
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("90", {})));
  auto w = makeWatcher();
  w->step();
  w->step();
  EXPECT_EQ(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kEmpty);
  EXPECT_EQ(api_.openWatches(), 0);  // the old stream was cancelled
  EXPECT_TRUE(events_.empty());      // nothing after the ERROR was delivered
  w->step();
  EXPECT_EQ(queryParam(call(2), "resourceVersion"), "");  // a consistent read, not the stale rv
  EXPECT_EQ(w->resourceVersion(), "90");
  EXPECT_EQ(relists_.size(), 2u);
}

TEST_F(WatcherTest, HttpGoneOnWatchRelists) {
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("5", {})));
  api_.expectWatchFailure(kConfigMapsPath,
                          statusResponse(410, "Expired", "too old resource version"));
  auto w = makeWatcher();
  w->step();
  EXPECT_EQ(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kEmpty);
}

TEST_F(WatcherTest, DroppedConnectionReconnectsFromTheLastVersionWithBackoff) {
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("10", {})));
  api_.expectWatch(kConfigMapsPath, {event("ADDED", configMap("a", "12"))},
                   core::unavailable("connection reset"));
  api_.expectWatch(kConfigMapsPath, {}, core::unavailable("connection reset"));
  api_.expectWatch(kConfigMapsPath, {}, std::nullopt);
  auto w = makeWatcher();
  w->step();
  w->step();
  milliseconds first = w->step();
  EXPECT_EQ(first, milliseconds(100));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kListing);
  EXPECT_EQ(events_, std::vector<std::string>{"ADDED a"});
  w->step();
  EXPECT_EQ(queryParam(call(2), "resourceVersion"), "12");
  EXPECT_EQ(w->step(), milliseconds(200));  // a second failure in a row doubles it
  w->step();
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kWatching);
  EXPECT_EQ(w->lastError().code(), core::Code::kUnavailable);
}

TEST_F(WatcherTest, TooManyRequestsWaitsForRetryAfter) {
  api_.expect(Verb::kGet, kConfigMapsPath,
              statusResponse(429, "TooManyRequests", "slow down", {{"Retry-After", "7"}}));
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("3", {})));
  auto w = makeWatcher();
  EXPECT_EQ(w->step(), milliseconds(7000));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kEmpty);
  EXPECT_EQ(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kListing);
}

TEST_F(WatcherTest, ServerErrorsBackOffExponentiallyUpToTheCap) {
  for (int i = 0; i < 6; ++i) {
    api_.expect(Verb::kGet, kConfigMapsPath, statusResponse(500, "InternalError", "etcd down"));
  }
  auto w = makeWatcher();
  std::vector<milliseconds> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(w->step());
  EXPECT_EQ(delays,
            (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(400),
                                       milliseconds(800), milliseconds(1000), milliseconds(1000)}));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kEmpty);
}

TEST_F(WatcherTest, UndecodableEventRewatchesWithBackoff) {
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("10", {})));
  api_.expectWatch(kConfigMapsPath, {R"({"type":"FOO","object":{}})"}, std::nullopt);
  auto w = makeWatcher();
  w->step();
  w->step();
  EXPECT_GT(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kListing);
  EXPECT_NE(w->lastError().message().find("FOO"), std::string::npos);
}

TEST_F(WatcherTest, AnItemThatDoesNotDecodeIsHandedOverApartAndTheOthersStillArrive) {
  api_.expect(Verb::kGet, kConfigMapsPath,
              jsonResponse(200, listBody("10", {configMap("a", "8"), badConfigMap("bad", "9")})));
  api_.expectWatch(
      kConfigMapsPath,
      {event("MODIFIED", badConfigMap("a", "11")), event("ADDED", configMap("c", "12")),
       event("DELETED", badConfigMap("bad", "13"))},
      std::nullopt);
  auto w = makeWatcher();
  EXPECT_EQ(w->step(), milliseconds(0));
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kListing);
  EXPECT_EQ(relists_, std::vector<size_t>{1});
  w->step();
  EXPECT_EQ(w->step(), milliseconds(0));  // no backoff: the watch goes on
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kWatching);
  EXPECT_EQ(events_, std::vector<std::string>{"ADDED c"});
  const std::string why = "data.k: expected string, got number";
  EXPECT_EQ(undecodable_, (std::vector<std::string>{"LISTED bad: " + why, "MODIFIED a: " + why,
                                                    "DELETED bad: " + why}));
  EXPECT_EQ(w->resourceVersion(), "13");
  EXPECT_TRUE(w->lastError().ok()) << w->lastError().message();
}

TEST_F(WatcherTest, AWatchThatOpensWithMoreThanTheBoundDoesNotBlockItsOwnThread) {
  // The fake hands every line over inside watch(), on the watcher's thread, as a transport may
  // do with what arrived with the response headers: 3 MiB against a bound of 1 MiB.
  std::vector<std::string> lines;
  for (int i = 0; i < 96; ++i) {
    lines.push_back(event("ADDED", configMap("cm" + std::to_string(i), std::to_string(11 + i),
                                             std::string(32 << 10, 'x'))));
  }
  api_.expect(Verb::kGet, kConfigMapsPath, jsonResponse(200, listBody("10", {})));
  api_.expectWatch(kConfigMapsPath, lines, std::nullopt);
  auto w = makeWatcher();
  w->step();
  w->step();
  EXPECT_EQ(w->state(), Watcher<ConfigMap>::State::kWatching);
  w->step();
  EXPECT_EQ(events_.size(), 96u);
  EXPECT_EQ(w->resourceVersion(), "106");
}

using LineQueue = detail::LineQueue;

// Takes lines from `q` until `want` arrived or 5 s passed.
std::vector<std::string> takeAll(LineQueue& q, size_t want) {
  std::vector<std::string> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (all.size() < want && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::string> lines;
    std::optional<core::Status> closed;
    q.take(milliseconds(50), {}, lines, closed);
    all.insert(all.end(), lines.begin(), lines.end());
  }
  return all;
}

TEST(LineQueueTest, AProducerWaitsPastTheBoundUntilLinesAreTaken) {
  LineQueue q(100);
  q.bound();
  std::atomic<int> produced = 0;
  std::thread producer([&] {
    for (int i = 0; i < 10; ++i) {
      std::string line(39, 'a' + i);
      line.push_back('\n');
      q.onLine(line);
      ++produced;
    }
  });
  // Two 40-byte lines fit in 100 bytes; the third waits however long nobody takes.
  for (int i = 0; i < 500 && produced < 2; ++i) std::this_thread::sleep_for(milliseconds(10));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(produced, 2);
  std::vector<std::string> all = takeAll(q, 10);
  producer.join();
  ASSERT_EQ(all.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(all[i][0], 'a' + i) << "in order";
  EXPECT_LE(q.peakBytes(), 100u);
}

TEST(LineQueueTest, ALineLongerThanTheBoundStillPasses) {
  LineQueue q(10);
  q.bound();
  q.onLine(std::string(50, 'x'));
  EXPECT_EQ(takeAll(q, 1), std::vector<std::string>{std::string(50, 'x')});
}

TEST(LineQueueTest, NothingWaitsBeforeTheWatchIsOpen) {
  LineQueue q(100);
  for (int i = 0; i < 10; ++i) q.onLine(std::string(40, 'x'));  // this thread; would block
  EXPECT_EQ(takeAll(q, 10).size(), 10u);
}

TEST(LineQueueTest, AbandonReleasesABlockedProducerAndDropsTheRest) {
  LineQueue q(100);
  q.bound();
  std::atomic<bool> returned = false;
  std::thread producer([&] {
    for (int i = 0; i < 5; ++i) q.onLine(std::string(40, 'x'));
    returned = true;
  });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(returned) << "the third line waits";
  q.abandon();
  producer.join();
  EXPECT_TRUE(returned);
  std::vector<std::string> lines;
  std::optional<core::Status> closed;
  q.take(milliseconds(0), {}, lines, closed);
  EXPECT_TRUE(lines.empty());
}

TEST(ReflectorTest, ObjectsThatDoNotDecodeAreKeptApartWithTheirError) {
  FakeApiClient api;
  api.expect(Verb::kGet, kConfigMapsPath,
             jsonResponse(200, listBody("10", {configMap("a", "8"), badConfigMap("b", "9")})));
  api.expectWatch(
      kConfigMapsPath,
      {event("MODIFIED", badConfigMap("a", "11")), event("MODIFIED", configMap("b", "12")),
       event("DELETED", badConfigMap("a", "13"))},
      std::nullopt);
  Watcher<ConfigMap>::Options options;
  options.poll = milliseconds(0);
  std::vector<std::string> notified;
  Reflector<ConfigMap>::Handler notify;
  notify.relisted = [&](std::vector<ConfigMap> items, std::vector<RawObject> undecodable) {
    notified.push_back("relisted " + std::to_string(items.size()) + "+" +
                       std::to_string(undecodable.size()));
  };
  notify.undecodable = [&](const WatchEvent<RawObject>& e) {
    notified.push_back("undecodable " + e.object.metadata.name);
  };
  Reflector<ConfigMap> reflector(ResourceClient<ConfigMap>(api, kWatchedConfigMaps, "ns"), options,
                                 notify);
  auto store = reflector.store();
  auto undecodable = reflector.undecodable();
  reflector.step();
  EXPECT_EQ(store->keys(), std::vector<std::string>{"ns/a"});
  EXPECT_EQ(undecodable->keys(), std::vector<std::string>{"ns/b"});
  EXPECT_EQ(undecodable->get("ns/b")->error.message(), "data.k: expected string, got number");
  reflector.step();
  reflector.step();  // a breaks, b is mended, a (still bad) is deleted
  EXPECT_EQ(store->keys(), std::vector<std::string>{"ns/b"});
  EXPECT_EQ(undecodable->size(), 0u);
  EXPECT_EQ(notified, (std::vector<std::string>{"relisted 1+1", "undecodable a", "undecodable a"}));
}

TEST(ReflectorTest, CacheConvergesAfterARelist) {
  FakeApiClient api;
  api.expect(Verb::kGet, kConfigMapsPath,
             jsonResponse(200, listBody("10", {configMap("a", "8"), configMap("b", "9")})));
  api.expectWatch(kConfigMapsPath,
                  {event("ADDED", configMap("c", "11")),
                   event("MODIFIED", configMap("a", "12", "x")), expired()},
                  std::nullopt);
  // While the watch was down, b was deleted and a changed again.
  api.expect(Verb::kGet, kConfigMapsPath,
             jsonResponse(200, listBody("20", {configMap("a", "15", "y"), configMap("c", "11")})));
  api.expectWatch(kConfigMapsPath, {event("DELETED", configMap("c", "21"))}, std::nullopt);

  Watcher<ConfigMap>::Options options;
  options.poll = milliseconds(0);
  int notified = 0;
  Reflector<ConfigMap>::Handler notify;
  notify.event = [&](const WatchEvent<ConfigMap>&) { ++notified; };
  Reflector<ConfigMap> reflector(ResourceClient<ConfigMap>(api, kWatchedConfigMaps, "ns"), options,
                                 notify);
  auto store = reflector.store();
  reflector.step();
  EXPECT_EQ(store->keys(), (std::vector<std::string>{"ns/a", "ns/b"}));
  reflector.step();
  reflector.step();  // c added, a modified, then 410
  std::shared_ptr<const ConfigMap> a_before = store->get("ns", "a");
  ASSERT_NE(a_before, nullptr);
  EXPECT_EQ(a_before->data.at("k"), "x");
  EXPECT_EQ(store->size(), 3u);
  reflector.step();  // relist
  EXPECT_EQ(store->keys(), (std::vector<std::string>{"ns/a", "ns/c"}));
  EXPECT_EQ(store->get("ns/a")->data.at("k"), "y");
  EXPECT_EQ(a_before->data.at("k"), "x");  // a reader's snapshot is not mutated
  EXPECT_EQ(store->get("ns/b"), nullptr);
  reflector.step();
  reflector.step();
  EXPECT_EQ(store->keys(), std::vector<std::string>{"ns/a"});
  EXPECT_EQ(notified, 3);
}

TEST(ReflectorTest, TheTransformTrimsWhatTheStoreAndTheHandlerSee) {
  FakeApiClient api;
  api.expect(Verb::kGet, kConfigMapsPath,
             jsonResponse(200, listBody("10", {configMap("a", "8", "listed")})));
  api.expectWatch(kConfigMapsPath,
                  {event("ADDED", configMap("b", "11", "added")),
                   event("MODIFIED", configMap("a", "12", "modified"))},
                  std::nullopt);
  Watcher<ConfigMap>::Options options;
  options.poll = milliseconds(0);
  std::vector<std::string> seen;  // data.k as the handler saw it
  Reflector<ConfigMap>::Handler notify;
  notify.relisted = [&](std::vector<ConfigMap> items, std::vector<RawObject>) {
    for (const ConfigMap& cm : items) seen.push_back(cm.data.at("k"));
  };
  notify.event = [&](const WatchEvent<ConfigMap>& e) { seen.push_back(e.object.data.at("k")); };
  notify.transform = [](ConfigMap& cm) { cm.data["k"] = "trimmed"; };
  Reflector<ConfigMap> reflector(ResourceClient<ConfigMap>(api, kWatchedConfigMaps, "ns"), options,
                                 notify);
  auto store = reflector.store();
  reflector.step();
  reflector.step();
  reflector.step();
  EXPECT_EQ(store->keys(), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(store->get("ns/a")->data.at("k"), "trimmed");
  EXPECT_EQ(store->get("ns/a")->metadata.resource_version, "12");
  EXPECT_EQ(store->get("ns/b")->data.at("k"), "trimmed");
  EXPECT_EQ(seen, (std::vector<std::string>{"trimmed", "trimmed", "trimmed"}));
}

// What a projected cache keeps of a ConfigMap: its key and one value.
struct ConfigMapValue {
  struct Name {
    std::string name;
    std::string namespace_name;
  } metadata;
  std::string k;
};

TEST(ReflectorTest, AProjectionIsWhatTheStoreKeepsWhileTheHandlerSeesTheDecodedObject) {
  FakeApiClient api;
  api.expect(Verb::kGet, kConfigMapsPath,
             jsonResponse(200, listBody("10", {configMap("a", "8", "listed"),
                                               configMap("c", "9", "listed")})));
  api.expectWatch(kConfigMapsPath,
                  {event("ADDED", configMap("b", "11", "added")),
                   event("MODIFIED", configMap("a", "12", "modified")),
                   event("DELETED", configMap("c", "13", "listed"))},
                  std::nullopt);
  Watcher<ConfigMap>::Options options;
  options.poll = milliseconds(0);
  std::vector<std::string> seen;  // resourceVersion as the handler saw it
  Reflector<ConfigMap, ConfigMapValue>::Handler notify;
  notify.relisted = [&](std::vector<ConfigMap> items, std::vector<RawObject>) {
    for (const ConfigMap& cm : items) seen.push_back(cm.metadata.resource_version);
  };
  notify.event = [&](const WatchEvent<ConfigMap>& e) {
    seen.push_back(e.object.metadata.resource_version);
  };
  Reflector<ConfigMap, ConfigMapValue> reflector(
      ResourceClient<ConfigMap>(api, kWatchedConfigMaps, "ns"), options, notify,
      [](const ConfigMap& cm) {
        return ConfigMapValue{{cm.metadata.name, cm.metadata.namespace_name}, cm.data.at("k")};
      });
  auto store = reflector.store();
  reflector.step();
  EXPECT_EQ(store->keys(), (std::vector<std::string>{"ns/a", "ns/c"}));
  EXPECT_EQ(store->get("ns/a")->k, "listed");
  reflector.step();
  reflector.step();  // b added, a modified, c deleted
  EXPECT_EQ(store->keys(), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(store->get("ns/a")->k, "modified");
  EXPECT_EQ(store->get("ns/b")->k, "added");
  EXPECT_EQ(seen, (std::vector<std::string>{"8", "9", "11", "12", "13"}));
}

}  // namespace
}  // namespace ringmaster::kube
