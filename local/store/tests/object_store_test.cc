#include "local/store/object_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "local/store/tests/test_types.h"
#include "ringmaster/core/base64.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::kCm;
using testing::kNs;
using testing::kPods;
using testing::kTj;

// 8-4-4-4-12 lower-case hex, version 4, variant 10xx.
bool isUuid4(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && std::string("0123456789abcdef").find(s[i]) == std::string::npos) return false;
  }
  return s[14] == '4' && std::string("89ab").find(s[19]) != std::string::npos;
}

class ObjectStoreTest : public ::testing::Test {
 protected:
  ObjectStoreTest() : store_(options()) {
    store_.registerType(testing::trainingJobs());
    store_.registerType(testing::configMaps());
    store_.registerType(testing::pods());
  }
  ObjectStoreOptions options() {
    ObjectStoreOptions o;
    o.clock = clock_.clock();
    o.random_seed = 42;
    o.history_length = 50;
    return o;
  }
  static json tj(const std::string& name, int replicas = 1) {
    return {{"apiVersion", "ringmaster.dev/v1alpha1"},
            {"kind", "TrainingJob"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec", {{"replicas", replicas}}}};
  }
  static json cm(const std::string& name, json labels = json::object()) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"labels", labels}}},
            {"data", {{"index", name}}}};
  }
  ObjectPtr mustCreate(const ResourceKey& key, json obj, const std::string& ns = "default") {
    auto r = store_.create(key, ns, std::move(obj));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().bodyText());
    return r.ok() ? r.value() : nullptr;
  }

  FakeClock clock_;
  ObjectStore store_;
};

TEST_F(ObjectStoreTest, CreateSetsUidTimestampGenerationAndResourceVersion) {
  ObjectPtr a = mustCreate(kTj, tj("mnist"));
  ObjectPtr b = mustCreate(kTj, tj("cifar"));
  const json& m = a->object["metadata"];
  EXPECT_TRUE(isUuid4(m["uid"].get<std::string>())) << m["uid"];
  EXPECT_EQ(m["creationTimestamp"], "2026-11-22T01:55:51Z");
  EXPECT_EQ(m["generation"], 1);
  EXPECT_EQ(m["resourceVersion"], "1");
  EXPECT_EQ(b->object["metadata"]["resourceVersion"], "2");
  EXPECT_NE(m["uid"], b->object["metadata"]["uid"]);
  EXPECT_EQ(a->text, a->object.dump());
  // Built-in kinds without generation get none.
  ObjectPtr c = mustCreate(kCm, cm("c"));
  EXPECT_FALSE(c->object["metadata"].contains("generation"));
  EXPECT_EQ(store_.resourceVersion(), 3u);
}

// The commit listener hears the type of every write that lands (a controller's wake-up), not of
// a refused one, and nothing once removed.
TEST_F(ObjectStoreTest, TheCommitListenerHearsEveryCommittedWrite) {
  std::vector<std::string> heard;
  store_.setCommitListener([&](const ResourceKey& key) { heard.push_back(key.qualified()); });
  mustCreate(kTj, tj("mnist"));
  mustCreate(kCm, cm("c"));
  ASSERT_TRUE(store_.update(kTj, "default", "mnist", tj("mnist", 2)).ok());
  EXPECT_FALSE(store_.create(kTj, "default", tj("mnist")).ok());  // already exists
  ASSERT_TRUE(store_.remove(kCm, "default", "c", {}).ok());
  EXPECT_EQ(heard, (std::vector<std::string>{"trainingjobs.ringmaster.dev", "configmaps",
                                             "trainingjobs.ringmaster.dev", "configmaps"}));
  store_.setCommitListener(nullptr);
  mustCreate(kCm, cm("d"));
  EXPECT_EQ(heard.size(), 4u);
}

TEST_F(ObjectStoreTest, CreateOfAnExistingNameIsAlreadyExistsExactlyAsTheApiserver) {
  mustCreate(kTj, tj("resnet"));
  auto r = store_.create(kTj, "default", tj("resnet"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 409);
  EXPECT_EQ(
      r.error().bodyText(),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"trainingjobs.ringmaster.dev \"resnet\" already exists","reason":"AlreadyExists","details":{"name":"resnet","group":"ringmaster.dev","kind":"trainingjobs"},"code":409})");
}

TEST_F(ObjectStoreTest, GenerateNameAddsASuffixAndMissingNameIsInvalid) {
  json obj = tj("");
  obj["metadata"].erase("name");
  obj["metadata"]["generateName"] = "job-";
  ObjectPtr a = mustCreate(kTj, obj);
  std::string generated = a->object["metadata"]["name"];
  ASSERT_EQ(generated.size(), 9u);
  EXPECT_EQ(generated.substr(0, 4), "job-");
  EXPECT_EQ(generated.substr(4).find_first_not_of("bcdfghjklmnpqrstvwxz2456789"),
            std::string::npos);
  obj["metadata"].erase("generateName");
  auto r = store_.create(kTj, "default", obj);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 422);
  EXPECT_EQ(r.error().message(),
            "TrainingJob.ringmaster.dev \"\" is invalid: metadata.name: Required value: name or "
            "generateName is required");
}

TEST_F(ObjectStoreTest, GetOfAMissingObjectIsNotFound) {
  auto r = store_.get(kTj, "default", "nope");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.error().bodyText(),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"trainingjobs.ringmaster.dev \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"ringmaster.dev","kind":"trainingjobs"},"code":404})");
}

TEST_F(ObjectStoreTest, UpdateWithAStaleResourceVersionIsConflict) {
  ObjectPtr a = mustCreate(kTj, tj("mnist"));
  json stale = a->object;
  ASSERT_TRUE(store_.update(kTj, "default", "mnist", tj("mnist", 2)).ok());  // unconditional
  stale["spec"]["replicas"] = 5;
  auto r = store_.update(kTj, "default", "mnist", stale);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 409);
  EXPECT_EQ(
      r.error().bodyText(),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on trainingjobs.ringmaster.dev \"mnist\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"mnist","group":"ringmaster.dev","kind":"trainingjobs"},"code":409})");
  // With the current resourceVersion it goes through.
  json fresh = store_.get(kTj, "default", "mnist").value()->object;
  fresh["spec"]["replicas"] = 5;
  auto ok = store_.update(kTj, "default", "mnist", fresh);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value()->object["spec"]["replicas"], 5);
}

TEST_F(ObjectStoreTest, UpdateKeepsSystemMetadata) {
  ObjectPtr a = mustCreate(kTj, tj("mnist"));
  json body = tj("mnist", 3);
  body["metadata"]["uid"] = "forged";
  body["metadata"]["creationTimestamp"] = "1999-01-01T00:00:00Z";
  auto r = store_.update(kTj, "default", "mnist", body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value()->object["metadata"]["uid"], a->object["metadata"]["uid"]);
  EXPECT_EQ(r.value()->object["metadata"]["creationTimestamp"], "2026-11-22T01:55:51Z");
}

TEST_F(ObjectStoreTest, GenerationChangesOnlyWithSpec) {
  mustCreate(kTj, tj("mnist"));
  // Label change: no generation bump.
  auto r1 = store_.patch(kTj, "default", "mnist", PatchType::kMerge,
                         R"({"metadata":{"labels":{"team":"vision"}}})");
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1.value()->object["metadata"]["generation"], 1);
  // Spec change: 1 -> 2.
  auto r2 = store_.patch(kTj, "default", "mnist", PatchType::kMerge, R"({"spec":{"replicas":4}})");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2.value()->object["metadata"]["generation"], 2);
  // Status write: no bump.
  auto r3 = store_.patch(kTj, "default", "mnist", PatchType::kMerge,
                         R"({"status":{"phase":"Running"}})", Subresource::kStatus);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3.value()->object["metadata"]["generation"], 2);
  EXPECT_EQ(r3.value()->object["status"]["phase"], "Running");
}

TEST_F(ObjectStoreTest, StatusSubresourceIgnoresSpecAndMainResourceIgnoresStatus) {
  mustCreate(kTj, tj("mnist", 4));
  // e2: spec through /status is ignored, status applied.
  auto e2 =
      store_.patch(kTj, "default", "mnist", PatchType::kMerge,
                   R"({"spec":{"replicas":7},"status":{"phase":"Running"}})", Subresource::kStatus);
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(e2.value()->object["spec"]["replicas"], 4);
  EXPECT_EQ(e2.value()->object["status"]["phase"], "Running");
  EXPECT_EQ(e2.value()->object["metadata"]["generation"], 1);
  // e3: status through the main resource is ignored: no write, same resourceVersion.
  uint64_t rv = store_.resourceVersion();
  auto e3 =
      store_.patch(kTj, "default", "mnist", PatchType::kMerge, R"({"status":{"phase":"Failed"}})");
  ASSERT_TRUE(e3.ok());
  EXPECT_EQ(e3.value()->object["status"]["phase"], "Running");
  EXPECT_EQ(e3.value()->resource_version, e2.value()->resource_version);
  EXPECT_EQ(store_.resourceVersion(), rv);
  // Status on create is dropped for custom resources with the subresource.
  json with_status = tj("other");
  with_status["status"] = {{"phase", "Done"}};
  EXPECT_FALSE(mustCreate(kTj, with_status)->object.contains("status"));
}

TEST_F(ObjectStoreTest, PatchErrorsAreStatusObjects) {
  mustCreate(kTj, tj("mnist"));
  auto bad_json = store_.patch(kTj, "default", "mnist", PatchType::kMerge, "{nope");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.error().code(), 400);
  auto bad_path = store_.patch(kTj, "default", "mnist", PatchType::kJson,
                               R"([{"op":"replace","path":"/spec/missing/x","value":1}])");
  ASSERT_FALSE(bad_path.ok());
  EXPECT_EQ(bad_path.error().code(), 422);
  EXPECT_EQ(bad_path.error().reason(), "Invalid");
  auto smp = store_.patch(kTj, "default", "mnist", PatchType::kStrategicMerge, "{}");
  ASSERT_FALSE(smp.ok());
  EXPECT_EQ(smp.error().code(), 415);
  auto missing = store_.patch(kTj, "default", "nope", PatchType::kMerge, "{}");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), 404);
}

TEST_F(ObjectStoreTest, StrategicMergePatchMergesContainersByName) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec",
               {{"containers",
                 {{{"name", "a"}, {"image", "x:1"}, {"env", {{{"name", "A"}, {"value", "1"}}}}},
                  {{"name", "b"}, {"image", "y:1"}}}}}}};
  mustCreate(kPods, pod);
  auto r = store_.patch(
      kPods, "default", "p", PatchType::kStrategicMerge,
      R"({"spec":{"containers":[{"name":"a","image":"x:2","env":[{"name":"B","value":"2"}]}]}})");
  ASSERT_TRUE(r.ok()) << r.error().bodyText();
  const json& cs = r.value()->object["spec"]["containers"];
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0]["image"], "x:2");
  EXPECT_EQ(cs[0]["env"].size(), 2u);
  EXPECT_EQ(cs[1]["image"], "y:1");
}

TEST_F(ObjectStoreTest, DeleteWithoutFinalizersAnswersStatusSuccess) {
  ObjectPtr a = mustCreate(kTj, tj("gc-demo"));
  auto r = store_.remove(kTj, "default", "gc-demo", testing::propagation("Background"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->deleted);
  ASSERT_TRUE(r->status.has_value());
  EXPECT_EQ(
      r->status->bodyText(),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"gc-demo","group":"ringmaster.dev","kind":"trainingjobs","uid":")" +
          a->object["metadata"]["uid"].get<std::string>() + R"("}})");
  EXPECT_EQ(store_.get(kTj, "default", "gc-demo").error().code(), 404);
}

TEST_F(ObjectStoreTest, DeleteChecksPreconditions) {
  mustCreate(kTj, tj("mnist"));
  DeleteOptions o;
  o.precondition_uid = "other";
  auto r = store_.remove(kTj, "default", "mnist", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 409);
  EXPECT_NE(r.error().message().find(
                "\"mnist\": the UID in the precondition (other) does not match the UID in record"),
            std::string::npos)
      << r.error().message();
  o.precondition_uid.reset();
  o.precondition_resource_version = "999";
  EXPECT_EQ(store_.remove(kTj, "default", "mnist", o).error().code(), 409);
}

TEST_F(ObjectStoreTest, FinalizersHoldTheObjectUntilTheLastIsRemoved) {
  json obj = tj("fin-demo");
  obj["metadata"]["finalizers"] = {"ringmaster.dev/cleanup"};
  mustCreate(kTj, obj);
  auto w =
      store_.watch(kTj, "default", testing::watchFrom(std::to_string(store_.resourceVersion())));
  ASSERT_TRUE(w.ok());
  clock_.advance(std::chrono::seconds(3));
  auto r = store_.remove(kTj, "default", "fin-demo", testing::propagation("Background"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->deleted);
  EXPECT_FALSE(r->status.has_value());
  const json& m = r->object->object["metadata"];
  EXPECT_EQ(m["deletionTimestamp"], "2026-11-22T01:55:54Z");
  EXPECT_EQ(m["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(m["generation"], 2);  // bumped by the deletion (g6)
  EXPECT_TRUE(store_.get(kTj, "default", "fin-demo").ok());
  // A second DELETE changes nothing.
  EXPECT_EQ(store_.remove(kTj, "default", "fin-demo", {}).value().object->resource_version,
            r->object->resource_version);
  auto patched = store_.patch(kTj, "default", "fin-demo", PatchType::kMerge,
                              R"({"metadata":{"finalizers":null}})");
  ASSERT_TRUE(patched.ok());
  EXPECT_FALSE(patched.value()->object["metadata"].contains("finalizers"));
  EXPECT_EQ(store_.get(kTj, "default", "fin-demo").error().code(), 404);
  auto e1 = w.value()->next(std::chrono::seconds(1));
  auto e2 = w.value()->next(std::chrono::seconds(1));
  ASSERT_TRUE(e1 && e2);
  EXPECT_EQ(e1->type, WatchEventType::kModified);
  EXPECT_EQ(e2->type, WatchEventType::kDeleted);
  EXPECT_EQ(e2->object->object["metadata"]["finalizers"][0], "ringmaster.dev/cleanup");
  EXPECT_EQ(e2->object->resource_version, store_.resourceVersion());
}

TEST_F(ObjectStoreTest, GarbageCollectorDeletesDependentsOfADeletedOwner) {
  ObjectPtr owner = mustCreate(kTj, tj("gc-demo"));
  json ref = {{"apiVersion", "ringmaster.dev/v1alpha1"},
              {"kind", "TrainingJob"},
              {"name", "gc-demo"},
              {"uid", owner->object["metadata"]["uid"]},
              {"controller", true},
              {"blockOwnerDeletion", true}};
  json child = cm("gc-demo-hostfile");
  child["metadata"]["ownerReferences"] = json::array({ref});
  mustCreate(kCm, child);
  ObjectPtr other = mustCreate(kTj, tj("other"));
  json ref2 = ref;
  ref2["name"] = "other";
  ref2["uid"] = other->object["metadata"]["uid"];
  json shared = cm("shared");
  shared["metadata"]["ownerReferences"] = {ref, ref2};
  mustCreate(kCm, shared);
  EXPECT_EQ(store_.collectGarbage(), 0u);
  ASSERT_TRUE(store_.remove(kTj, "default", "gc-demo").ok());
  EXPECT_EQ(store_.collectGarbage(), 2u);
  EXPECT_EQ(store_.get(kCm, "default", "gc-demo-hostfile").error().code(), 404);
  // The object with a remaining owner stays, without the dangling reference.
  auto kept = store_.get(kCm, "default", "shared");
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept.value()->object["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(kept.value()->object["metadata"]["ownerReferences"][0]["name"], "other");
}

TEST_F(ObjectStoreTest, GarbageCollectionScansOnlyAfterWritesThatCanMakeGarbage) {
  ObjectPtr owner = mustCreate(kTj, tj("scan"));
  auto childOf = [&](const std::string& name, const json& uid) {
    json child = cm(name);
    child["metadata"]["ownerReferences"] = {{{"apiVersion", "ringmaster.dev/v1alpha1"},
                                             {"kind", "TrainingJob"},
                                             {"name", "scan"},
                                             {"uid", uid}}};
    return child;
  };
  store_.collectGarbage();  // the first call scans: nothing is known yet
  const uint64_t settled = store_.garbageScans();
  EXPECT_EQ(store_.collectGarbage(), 0u);
  mustCreate(kCm, childOf("child-1", owner->object["metadata"]["uid"]));
  mustCreate(kCm, cm("plain"));
  ASSERT_TRUE(
      store_.patch(kCm, "default", "plain", PatchType::kMerge, R"({"data":{"a":"b"}})").ok());
  EXPECT_EQ(store_.collectGarbage(), 0u);
  EXPECT_EQ(store_.garbageScans(), settled) << "owned by a live object, or owned by none";

  // A reference to a uid that does not exist: scanned and collected.
  mustCreate(kCm, childOf("orphan", "no-such-uid"));
  EXPECT_EQ(store_.collectGarbage(), 1u);
  EXPECT_EQ(store_.garbageScans(), settled + 1);
  EXPECT_EQ(store_.get(kCm, "default", "orphan").error().code(), 404);
  EXPECT_EQ(store_.collectGarbage(), 0u);
  EXPECT_EQ(store_.garbageScans(), settled + 1);

  // The owner's deletion: scanned, its dependent collected.
  ASSERT_TRUE(store_.remove(kTj, "default", "scan").ok());
  EXPECT_EQ(store_.collectGarbage(), 1u);
  EXPECT_EQ(store_.garbageScans(), settled + 2);
  EXPECT_EQ(store_.get(kCm, "default", "child-1").error().code(), 404);
  EXPECT_TRUE(store_.get(kCm, "default", "plain").ok());
}

TEST_F(ObjectStoreTest, ForegroundDeletionWaitsForBlockingDependents) {
  ObjectPtr owner = mustCreate(kTj, tj("gc-fg"));
  json child = cm("gc-fg-hostfile");
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "ringmaster.dev/v1alpha1"},
                                           {"kind", "TrainingJob"},
                                           {"name", "gc-fg"},
                                           {"uid", owner->object["metadata"]["uid"]},
                                           {"blockOwnerDeletion", true}}};
  child["metadata"]["finalizers"] = {"example.com/hold"};
  mustCreate(kCm, child);
  auto r = store_.remove(kTj, "default", "gc-fg", testing::propagation("Foreground"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->deleted);
  EXPECT_EQ(r->object->object["metadata"]["finalizers"], json({"foregroundDeletion"}));
  store_.collectGarbage();
  // The child is being deleted but its own finalizer holds it, so the owner waits.
  EXPECT_TRUE(store_.get(kCm, "default", "gc-fg-hostfile")
                  .value()
                  ->object["metadata"]
                  .contains("deletionTimestamp"));
  EXPECT_TRUE(store_.get(kTj, "default", "gc-fg").ok());
  ASSERT_TRUE(store_
                  .patch(kCm, "default", "gc-fg-hostfile", PatchType::kMerge,
                         R"({"metadata":{"finalizers":null}})")
                  .ok());
  store_.collectGarbage();
  EXPECT_EQ(store_.get(kTj, "default", "gc-fg").error().code(), 404);
}

TEST_F(ObjectStoreTest, OrphanDeletionKeepsDependentsAndDropsTheirReference) {
  ObjectPtr owner = mustCreate(kTj, tj("o"));
  json child = cm("o-child");
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "ringmaster.dev/v1alpha1"},
                                           {"kind", "TrainingJob"},
                                           {"name", "o"},
                                           {"uid", owner->object["metadata"]["uid"]}}};
  mustCreate(kCm, child);
  ASSERT_TRUE(store_.remove(kTj, "default", "o", testing::propagation("Orphan")).ok());
  store_.collectGarbage();
  auto kept = store_.get(kCm, "default", "o-child");
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept.value()->object["metadata"].contains("ownerReferences"));
}

TEST_F(ObjectStoreTest, BoundPodsAreDeletedGracefullyUnboundAtOnce) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "bound"}}},
              {"spec", {{"nodeName", "node-1"}, {"terminationGracePeriodSeconds", 10}}}};
  mustCreate(kPods, pod);
  pod["metadata"]["name"] = "unbound";
  pod["spec"].erase("nodeName");
  mustCreate(kPods, pod);
  auto u = store_.remove(kPods, "default", "unbound");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->deleted);
  EXPECT_FALSE(u->status.has_value());  // pods answer with the object
  auto b = store_.remove(kPods, "default", "bound");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->deleted);
  EXPECT_EQ(b->object->object["metadata"]["deletionGracePeriodSeconds"], 10);
  EXPECT_EQ(b->object->object["metadata"]["deletionTimestamp"], "2026-11-22T01:56:01Z");
  DeleteOptions now;
  now.grace_period_seconds = 0;
  auto gone = store_.remove(kPods, "default", "bound", now);
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->deleted);
}

TEST_F(ObjectStoreTest, NamespacesMustExistAndTheirDeletionEmptiesThem) {
  store_.registerType(testing::namespaces());
  auto missing = store_.create(kCm, "paging", cm("a"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "namespaces \"paging\" not found");
  mustCreate(kNs, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "paging"}}}},
             "");
  mustCreate(kCm, cm("a"), "paging");
  mustCreate(kCm, cm("b"), "paging");
  auto d = store_.remove(kNs, "", "paging");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->object->object["status"]["phase"], "Terminating");
  auto refused = store_.create(kCm, "paging", cm("c"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), 403);
  EXPECT_EQ(refused.error().message(),
            "configmaps \"c\" is forbidden: unable to create new content in namespace paging "
            "because it is being terminated");
  store_.collectGarbage();
  EXPECT_EQ(store_.get(kCm, "paging", "a").error().code(), 404);
  EXPECT_EQ(store_.get(kNs, "", "paging").error().code(), 404);
}

// 6 ConfigMaps, limit=2, three pages sharing one resourceVersion.
TEST_F(ObjectStoreTest, LimitAndContinueWalkSixObjectsInThreePages) {
  for (int i = 1; i <= 5; ++i) {
    mustCreate(kCm, cm("cm-" + std::to_string(i), {{"app", "demo"}, {"tier", i <= 3 ? "a" : "b"}}),
               "paging");
  }
  mustCreate(kCm, cm("kube-root-ca.crt"), "paging");
  mustCreate(kCm, cm("elsewhere"), "default");
  uint64_t list_rv = store_.resourceVersion();
  ListOptions o;
  o.limit = 2;
  auto p1 = store_.list(kCm, "paging", o);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->items.size(), 2u);
  EXPECT_EQ(p1->items[0]->object["metadata"]["name"], "cm-1");
  EXPECT_EQ(p1->remaining_item_count, 4);
  EXPECT_EQ(p1->resource_version, list_rv);
  auto token = decodeContinueToken(p1->continue_token);
  ASSERT_TRUE(token);
  EXPECT_EQ(token->start, std::string("cm-2") + '\0');
  EXPECT_EQ(core::base64UrlDecode(p1->continue_token).value(),
            "{\"v\":\"meta.k8s.io/v1\",\"rv\":" + std::to_string(list_rv) +
                ",\"start\":\"cm-2\\u0000\"}");
  // A write between pages does not show: pages are one snapshot.
  ASSERT_TRUE(store_.remove(kCm, "paging", "cm-3").ok());
  o.continue_token = p1->continue_token;
  auto p2 = store_.list(kCm, "paging", o);
  ASSERT_TRUE(p2.ok());
  ASSERT_EQ(p2->items.size(), 2u);
  EXPECT_EQ(p2->items[0]->object["metadata"]["name"], "cm-3");
  EXPECT_EQ(p2->items[1]->object["metadata"]["name"], "cm-4");
  EXPECT_EQ(p2->remaining_item_count, 2);
  EXPECT_EQ(p2->resource_version, list_rv);
  o.continue_token = p2->continue_token;
  auto p3 = store_.list(kCm, "paging", o);
  ASSERT_TRUE(p3.ok());
  ASSERT_EQ(p3->items.size(), 2u);
  EXPECT_EQ(p3->items[1]->object["metadata"]["name"], "kube-root-ca.crt");
  EXPECT_TRUE(p3->continue_token.empty());
  EXPECT_FALSE(p3->remaining_item_count.has_value());
  std::string text = ObjectStore::listText(testing::configMaps(), p3.value());
  EXPECT_EQ(text.rfind("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{"
                       "\"resourceVersion\":\"" +
                           std::to_string(list_rv) + "\"},\"items\":[",
                       0),
            0u);
  EXPECT_EQ(json::parse(text)["items"].size(), 2u);
}

TEST(ContinueToken, ATokenAClientAlteredIsUnreadableNotAnException) {
  // A "v" that is not a string used to throw out of decodeContinueToken.
  for (const char* raw : {R"({"v":1,"rv":1,"start":"a"})", R"({"v":null,"rv":1,"start":"a"})",
                          R"({"v":["meta.k8s.io/v1"],"rv":1,"start":"a"})", R"([1])", "1"}) {
    EXPECT_FALSE(decodeContinueToken(core::base64UrlEncode(raw))) << raw;
  }
  auto good =
      decodeContinueToken(core::base64UrlEncode(R"({"v":"meta.k8s.io/v1","rv":7,"start":"a"})"));
  ASSERT_TRUE(good);
  EXPECT_EQ(good->rv, 7);
}

TEST_F(ObjectStoreTest, AContinueTokenOlderThanTheHistoryIsExpired) {
  for (int i = 0; i < 3; ++i) mustCreate(kCm, cm("cm-" + std::to_string(i)));
  ListOptions o;
  o.limit = 1;
  auto p1 = store_.list(kCm, "default", o);
  ASSERT_TRUE(p1.ok());
  for (int i = 0; i < 60; ++i) {  // history_length is 50
    ASSERT_TRUE(store_
                    .patch(kCm, "default", "cm-2", PatchType::kMerge,
                           R"({"data":{"n":")" + std::to_string(i) + "\"}}")
                    .ok());
  }
  o.continue_token = p1->continue_token;
  auto r = store_.list(kCm, "default", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 410);
  EXPECT_EQ(r.error().reason(), "Expired");
  EXPECT_EQ(r.error().message().rfind("The provided continue parameter is too old to display a "
                                      "consistent list result.",
                                      0),
            0u);
  json body = r.error().body();
  auto fresh = decodeContinueToken(body["metadata"]["continue"].get<std::string>());
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->rv, -1);
  EXPECT_EQ(fresh->start, std::string("cm-0") + '\0');
  // The fresh token continues without consistency.
  o.continue_token = body["metadata"]["continue"];
  auto rest = store_.list(kCm, "default", o);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->items[0]->object["metadata"]["name"], "cm-1");
}

TEST_F(ObjectStoreTest, ListWithSelectors) {
  for (int i = 1; i <= 5; ++i) {
    mustCreate(kCm, cm("cm-" + std::to_string(i), {{"app", "demo"}, {"tier", i <= 3 ? "a" : "b"}}),
               "paging");
  }
  mustCreate(kCm, cm("kube-root-ca.crt"), "paging");
  auto names = [&](const ListOptions& o) {
    std::vector<std::string> out;
    auto r = store_.list(kCm, "paging", o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().bodyText());
    if (r.ok()) {
      for (const auto& i : r->items) out.push_back(i->object["metadata"]["name"]);
    }
    return out;
  };
  ListOptions o;
  o.label_selector = "app=demo,tier=b";
  EXPECT_EQ(names(o), (std::vector<std::string>{"cm-4", "cm-5"}));
  o.label_selector = "app=demo,tier in (a),!missing";
  EXPECT_EQ(names(o), (std::vector<std::string>{"cm-1", "cm-2", "cm-3"}));
  o.label_selector = "tier notin (a)";
  EXPECT_EQ(names(o), (std::vector<std::string>{"cm-4", "cm-5", "kube-root-ca.crt"}));
  o.label_selector = "!app";
  EXPECT_EQ(names(o), (std::vector<std::string>{"kube-root-ca.crt"}));
  o.label_selector = "";
  o.field_selector = "metadata.name=cm-3";
  EXPECT_EQ(names(o), (std::vector<std::string>{"cm-3"}));
  o.field_selector = "data.index=3";
  auto bad = store_.list(kCm, "paging", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.error().bodyText(),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"\"data.index\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"","reason":"BadRequest","code":400})");
  o.field_selector = "spec.launcher=mpi";
  auto bad_cr = store_.list(kTj, "default", o);
  ASSERT_FALSE(bad_cr.ok());
  EXPECT_EQ(
      bad_cr.error().bodyText(),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"field label not supported: spec.launcher","reason":"BadRequest","code":400})");
  // Registered per-type fields work.
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec", {{"nodeName", "n1"}}}};
  mustCreate(kPods, pod);
  o.field_selector = "spec.nodeName=n1";
  auto pods = store_.list(kPods, "", o);
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(pods->items.size(), 1u);
}

TEST_F(ObjectStoreTest, ListResourceVersionSemantics) {
  mustCreate(kCm, cm("a"));
  uint64_t rv1 = store_.resourceVersion();
  mustCreate(kCm, cm("b"));
  ListOptions exact;
  exact.resource_version = std::to_string(rv1);
  exact.resource_version_match = "Exact";
  auto old = store_.list(kCm, "default", exact);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->items.size(), 1u);
  EXPECT_EQ(old->resource_version, rv1);
  ListOptions future;
  future.resource_version = "9999";
  auto r = store_.list(kCm, "default", future);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 504);
  // Custom resource lists carry "continue":"" and sorted keys (g6.3).
  mustCreate(kTj, tj("fin-demo"));
  auto l = store_.list(kTj, "default", {});
  ASSERT_TRUE(l.ok());
  std::string text = ObjectStore::listText(testing::trainingJobs(), l.value());
  EXPECT_NE(text.find(",\"kind\":\"TrainingJobList\",\"metadata\":{\"continue\":\"\","
                      "\"resourceVersion\":\"" +
                      std::to_string(store_.resourceVersion()) + "\"}}"),
            std::string::npos);
}

TEST_F(ObjectStoreTest, TenThousandPodsListQuickly) {
  for (int i = 0; i < 10000; ++i) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "pod-" + std::to_string(i)},
                  {"labels", {{"app", "scale"}, {"index", std::to_string(i)}}}}},
                {"spec",
                 {{"nodeName", "node-1"},
                  {"containers",
                   {{{"name", "main"},
                     {"image", "busybox"},
                     {"command", {"sleep", "3600"}},
                     {"env", {{{"name", "RANK"}, {"value", std::to_string(i)}}}}}}}}},
                {"status", {{"phase", "Running"}}}};
    ASSERT_TRUE(store_.create(kPods, "default", std::move(pod)).ok());
  }
  auto start = std::chrono::steady_clock::now();
  auto list = store_.list(kPods, "default", {});
  ASSERT_TRUE(list.ok());
  std::string text = ObjectStore::listText(testing::pods(), list.value());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(list->items.size(), 10000u);
  ListOptions sel;
  sel.label_selector = "app=scale,index in (5,7)";
  auto start2 = std::chrono::steady_clock::now();
  auto filtered = store_.list(kPods, "default", sel);
  double ms2 =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start2).count();
  ASSERT_TRUE(filtered.ok());
  EXPECT_EQ(filtered->items.size(), 2u);
  std::printf(
      "[ timing ] list of 10000 pods + body (%zu bytes): %.1f ms; with a label selector: "
      "%.1f ms\n",
      text.size(), ms, ms2);
}

}  // namespace
}  // namespace ringmaster::local
