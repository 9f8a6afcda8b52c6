#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "local/store/object_store.h"
#include "local/store/tests/test_types.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::kCm;
using testing::kTj;

json cm(const std::string& name, const std::string& tier = "a") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"tier", tier}}}}},
          {"data", {{"k", "v"}}}};
}

class WatchTest : public ::testing::Test {
 protected:
  WatchTest() : store_(options()) {
    store_.registerType(testing::configMaps());
    store_.registerType(testing::trainingJobs());
  }
  ObjectStoreOptions options() {
    ObjectStoreOptions o;
    o.clock = clock_.clock();
    o.history_length = 5;
    o.watch_queue_capacity = 3;
    return o;
  }
  static std::string name(const WatchEvent& e) {
    return e.object->object["metadata"]["name"].get<std::string>();
  }
  testing::FakeClock clock_;
  ObjectStore store_;
};

TEST_F(WatchTest, DeliversAddedModifiedDeletedInOrder) {
  auto w =
      store_.watch(kCm, "default", testing::watchFrom(std::to_string(store_.resourceVersion())));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(store_.create(kCm, "default", cm("a")).ok());
  ASSERT_TRUE(store_.patch(kCm, "default", "a", PatchType::kMerge, R"({"data":{"k":"w"}})").ok());
  ASSERT_TRUE(store_.create(kCm, "other", cm("b")).ok());  // other namespace: not seen
  ASSERT_TRUE(store_.remove(kCm, "default", "a").ok());
  std::vector<std::pair<WatchEventType, std::string>> seen;
  for (int i = 0; i < 3; ++i) {
    auto e = w.value()->next(milliseconds(1000));
    ASSERT_TRUE(e);
    seen.emplace_back(e->type, e->object->object["metadata"]["resourceVersion"]);
  }
  EXPECT_EQ(seen[0], std::make_pair(WatchEventType::kAdded, std::string("1")));
  EXPECT_EQ(seen[1], std::make_pair(WatchEventType::kModified, std::string("2")));
  EXPECT_EQ(seen[2], std::make_pair(WatchEventType::kDeleted, std::string("4")));
  EXPECT_FALSE(w.value()->next(milliseconds(10)));
}

TEST_F(WatchTest, EventLineIsTheWireFormat) {
  auto w = store_.watch(kCm, "", testing::watchFrom("0"));
  ASSERT_TRUE(store_.create(kCm, "default", cm("a")).ok());
  auto e = w.value()->next(milliseconds(1000));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line(), "{\"type\":\"ADDED\",\"object\":" + e->object->text + "}\n");
}

TEST_F(WatchTest, WatchWithoutResourceVersionStartsWithSyntheticAdded) {
  ASSERT_TRUE(store_.create(kCm, "default", cm("a")).ok());
  ASSERT_TRUE(store_.create(kCm, "default", cm("b")).ok());
  auto w = store_.watch(kCm, "default", testing::watchFrom(""));
  ASSERT_TRUE(w.ok());
  auto a = w.value()->next(milliseconds(100));
  auto b = w.value()->next(milliseconds(100));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->type, WatchEventType::kAdded);
  EXPECT_EQ(name(*a), "a");
  EXPECT_EQ(name(*b), "b");
}

TEST_F(WatchTest, ReplaysHistoryFromAResourceVersion) {
  ASSERT_TRUE(store_.create(kCm, "default", cm("a")).ok());
  uint64_t rv = store_.resourceVersion();
  ASSERT_TRUE(store_.create(kCm, "default", cm("b")).ok());
  ASSERT_TRUE(store_.create(kCm, "default", cm("c")).ok());
  auto w = store_.watch(kCm, "default", testing::watchFrom(std::to_string(rv)));
  auto e1 = w.value()->next(milliseconds(100));
  auto e2 = w.value()->next(milliseconds(100));
  ASSERT_TRUE(e1 && e2);
  EXPECT_EQ(name(*e1), "b");
  EXPECT_EQ(name(*e2), "c");
}

TEST_F(WatchTest, TooOldResourceVersionIsAnErrorEvent410) {
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(
        store_.create(kTj, "default", {{"metadata", {{"name", "j" + std::to_string(i)}}}}).ok());
  auto w = store_.watch(kTj, "default", testing::watchFrom("1", true));
  ASSERT_TRUE(w.ok());
  auto e = w.value()->next(milliseconds(100));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, WatchEventType::kError);
  EXPECT_EQ(
      e->line(),
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":"
      "{},\"status\":\"Failure\",\"message\":\"too old resource version: 1 (3)\",\"reason\":"
      "\"Expired\",\"code\":410}}\n");
  EXPECT_FALSE(w.value()->next(milliseconds(10)));
  EXPECT_TRUE(w.value()->done());
  // From the oldest kept point it works.
  EXPECT_EQ(
      store_.watch(kTj, "default", testing::watchFrom("3")).value()->next(milliseconds(100))->type,
      WatchEventType::kAdded);
}

TEST(WatchHistory, IsBoundedByBytesAsWellAsByCount) {
  // 40 updates of a 1 MiB ConfigMap against a 4 MiB budget: only the newest few stay, and a
  // watch from before them is told to relist (410) instead of the store holding 40 MiB.
  ObjectStoreOptions o;
  o.history_bytes = 4 << 20;
  ObjectStore store(o);
  store.registerType(testing::configMaps());
  json big = cm("big");
  for (int i = 0; i < 40; ++i) {
    big["data"]["k"] = std::string(1 << 20, static_cast<char>('a' + i % 26));
    auto written = i == 0 ? store.create(kCm, "default", big)
                          : store.update(kCm, "default", "big", big, Subresource::kMain);
    ASSERT_TRUE(written.ok()) << written.error().message();
  }
  auto old = store.watch(kCm, "default", testing::watchFrom("1", true));
  ASSERT_TRUE(old.ok());
  auto e = old.value()->next(milliseconds(100));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, WatchEventType::kError);
  EXPECT_NE(e->line().find("\"code\":410"), std::string::npos);
  // The last three versions (3 MiB) fit in the budget and replay.
  auto recent = store.watch(kCm, "default", testing::watchFrom("37", true));
  ASSERT_TRUE(recent.ok());
  for (int want = 38; want <= 40; ++want) {
    auto ev = recent.value()->next(milliseconds(100));
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->type, WatchEventType::kModified);
    EXPECT_EQ(ev->object->resource_version, static_cast<uint64_t>(want));
  }
}

TEST_F(WatchTest, BookmarksCarryOnlyTheResourceVersion) {
  auto with = store_.watch(kTj, "default", testing::watchFrom("0", true));
  auto without = store_.watch(kTj, "default", testing::watchFrom("0"));
  ASSERT_TRUE(store_.create(kTj, "default", {{"metadata", {{"name", "j"}}}}).ok());
  store_.sendBookmarks();
  ASSERT_EQ(with.value()->next(milliseconds(100))->type, WatchEventType::kAdded);
  auto b = with.value()->next(milliseconds(100));
  ASSERT_TRUE(b);
  EXPECT_EQ(
      b->line(),
      "{\"type\":\"BOOKMARK\",\"object\":{\"apiVersion\":\"ringmaster.dev/v1alpha1\",\"kind\":"
      "\"TrainingJob\",\"metadata\":{\"resourceVersion\":\"1\"}}}\n");
  ASSERT_EQ(without.value()->next(milliseconds(100))->type, WatchEventType::kAdded);
  EXPECT_FALSE(without.value()->next(milliseconds(10)));
}

TEST_F(WatchTest, InitialEventsEndBookmarkOnlyWhenAsked) {
  ASSERT_TRUE(store_.create(kTj, "default", {{"metadata", {{"name", "j"}}}}).ok());
  WatchOptions o;
  o.allow_bookmarks = true;
  o.send_initial_events = true;
  auto w = store_.watch(kTj, "default", o);
  ASSERT_EQ(w.value()->next(milliseconds(100))->type, WatchEventType::kAdded);
  auto b = w.value()->next(milliseconds(100));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->type, WatchEventType::kBookmark);
  EXPECT_EQ(b->object->object["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

TEST_F(WatchTest, ObjectsLeavingTheSelectorAreSeenAsDeleted) {
  ASSERT_TRUE(store_.create(kCm, "default", cm("a", "a")).ok());
  WatchOptions o;
  o.resource_version = std::to_string(store_.resourceVersion());
  o.label_selector = "tier=a";
  auto w = store_.watch(kCm, "default", o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(
      store_
          .patch(kCm, "default", "a", PatchType::kMerge, R"({"metadata":{"labels":{"tier":"b"}}})")
          .ok());
  ASSERT_TRUE(
      store_
          .patch(kCm, "default", "a", PatchType::kMerge, R"({"metadata":{"labels":{"tier":"a"}}})")
          .ok());
  auto left = w.value()->next(milliseconds(100));
  auto back = w.value()->next(milliseconds(100));
  ASSERT_TRUE(left && back);
  EXPECT_EQ(left->type, WatchEventType::kDeleted);
  EXPECT_EQ(left->object->object["metadata"]["labels"]["tier"], "a");  // last matching state
  EXPECT_EQ(left->object->object["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(back->type, WatchEventType::kAdded);
  // Field selectors apply too.
  WatchOptions f;
  f.resource_version = "0";
  f.field_selector = "metadata.name=zzz";
  auto none = store_.watch(kCm, "default", f);
  EXPECT_FALSE(none.value()->next(milliseconds(10)));
  f.field_selector = "spec.x=1";
  EXPECT_EQ(store_.watch(kCm, "default", f).error().code(), 400);
}

TEST_F(WatchTest, ASlowWatcherIsDroppedWithoutBlockingWriters) {
  auto w =
      store_.watch(kCm, "default", testing::watchFrom(std::to_string(store_.resourceVersion())));
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(store_.create(kCm, "default", cm("c" + std::to_string(i))).ok());
  EXPECT_TRUE(w.value()->overflowed());
  int delivered = 0;
  while (w.value()->next(milliseconds(10))) ++delivered;
  EXPECT_EQ(delivered, 3);  // the queue's capacity, then the end of the stream
  EXPECT_TRUE(w.value()->done());
}

TEST_F(WatchTest, NextBlocksUntilAnEventArrivesAndCloseEndsIt) {
  auto w = store_.watch(kCm, "default", testing::watchFrom("0"));
  std::thread writer([&] { ASSERT_TRUE(store_.create(kCm, "default", cm("late")).ok()); });
  auto e = w.value()->next(std::chrono::seconds(10));
  writer.join();
  ASSERT_TRUE(e);
  EXPECT_EQ(name(*e), "late");
  std::thread closer([&] { w.value()->close(); });
  EXPECT_FALSE(w.value()->next(std::chrono::seconds(10)));
  closer.join();
  EXPECT_TRUE(w.value()->done());
  ASSERT_TRUE(store_.create(kCm, "default", cm("after")).ok());  // the store drops it
}

}  // namespace
}  // namespace ringmaster::local
