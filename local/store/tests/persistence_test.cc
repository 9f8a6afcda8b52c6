#include "local/store/persistence.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "local/store/object_store.h"
#include "local/store/tests/test_types.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;
using testing::kCm;

class PersistenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rm-store-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::unique_ptr<ObjectStore> newStore(size_t per_snapshot = 20000) {
    ObjectStoreOptions o;
    o.log_records_per_snapshot = per_snapshot;
    auto s = std::make_unique<ObjectStore>(o);
    s->registerType(testing::configMaps());
    return s;
  }
  static json cm(const std::string& name) {
    return {{"metadata", {{"name", name}}}, {"data", {{"k", name}}}};
  }
  std::filesystem::path dir_;
};

TEST_F(PersistenceTest, StateAndResourceVersionSurviveARestartThroughTheLog) {
  std::string uid;
  {
    auto s = newStore();
    ASSERT_TRUE(s->open(dir_).ok());
    uid = s->create(kCm, "default", cm("a")).value()->object["metadata"]["uid"];
    ASSERT_TRUE(s->create(kCm, "default", cm("b")).ok());
    ASSERT_TRUE(s->patch(kCm, "default", "a", PatchType::kMerge, R"({"data":{"k":"z"}})").ok());
    ASSERT_TRUE(s->remove(kCm, "default", "b").ok());
    EXPECT_EQ(s->resourceVersion(), 4u);
  }
  auto s = newStore();
  ASSERT_TRUE(s->open(dir_).ok());
  EXPECT_EQ(s->resourceVersion(), 4u);
  auto a = s->get(kCm, "default", "a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value()->object["data"]["k"], "z");
  EXPECT_EQ(a.value()->object["metadata"]["uid"], uid);
  EXPECT_EQ(s->get(kCm, "default", "b").error().code(), 404);
  EXPECT_EQ(s->create(kCm, "default", cm("c")).value()->resource_version, 5u);
  // A watch from before the restart is too old: the client relists.
  auto w = s->watch(kCm, "default", testing::watchFrom("2"));
  EXPECT_EQ(w.value()->next(std::chrono::milliseconds(10))->type, WatchEventType::kError);
}

TEST_F(PersistenceTest, SnapshotsCompactTheLogAndATornRecordIsDropped) {
  {
    auto s = newStore(/*per_snapshot=*/3);
    ASSERT_TRUE(s->open(dir_).ok());
    for (int i = 0; i < 7; ++i)
      ASSERT_TRUE(s->create(kCm, "default", cm("c" + std::to_string(i))).ok());
  }
  EXPECT_TRUE(std::filesystem::exists(dir_ / "snapshot.jsonl"));
  {
    std::ofstream torn(dir_ / "wal.jsonl", std::ios::app);
    torn << "{\"rv\":99,\"g\":\"\",\"r\":\"configmaps\",\"k\":\"default/x\",\"o\":{\"meta";
  }
  auto s = newStore();
  ASSERT_TRUE(s->open(dir_).ok());
  EXPECT_EQ(s->resourceVersion(), 7u);
  EXPECT_EQ(s->objectCount(), 7u);
  ASSERT_TRUE(s->create(kCm, "default", cm("after")).ok());
  auto again = newStore();
  s.reset();
  ASSERT_TRUE(again->open(dir_).ok());
  EXPECT_EQ(again->objectCount(), 8u);
}

TEST_F(PersistenceTest, SaveAndLoadRoundTrip) {
  auto s = newStore();
  ASSERT_TRUE(s->create(kCm, "default", cm("a")).ok());
  ASSERT_TRUE(s->create(kCm, "kube-system", cm("b")).ok());
  ASSERT_TRUE(s->save(dir_).ok());
  auto t = newStore();
  ASSERT_TRUE(t->load(dir_).ok());
  EXPECT_EQ(t->resourceVersion(), 2u);
  EXPECT_EQ(t->get(kCm, "kube-system", "b").value()->text,
            s->get(kCm, "kube-system", "b").value()->text);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "snapshot.jsonl.tmp"));
}

TEST_F(PersistenceTest, AnUnreadableSnapshotIsAnError) {
  std::filesystem::create_directories(dir_);
  ASSERT_TRUE(writeFileAtomic(dir_ / "snapshot.jsonl", "not json\n").ok());
  auto s = newStore();
  core::Status st = s->open(dir_);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("snapshot.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::local
