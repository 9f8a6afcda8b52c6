// WriteOptions (dry run, field validation, warnings), AdmitContext and mutate().
#include <gtest/gtest.h>

#include "local/store/object_store.h"
#include "local/store/tests/test_types.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;
using testing::kCm;
using testing::kPods;
using testing::kTj;

json tj(const std::string& name, int replicas = 1) {
  return {{"apiVersion", "ringmaster.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"replicas", replicas}}}};
}

class WriteOptionsTest : public ::testing::Test {
 protected:
  WriteOptionsTest() {
    ResourceType t = testing::trainingJobs();
    // Records what the hook saw, rejects replicas 0 and warns about `spec.extra`.
    t.admit = [this](json& obj, const json* old, AdmitContext& ctx) -> std::optional<StatusError> {
      seen_validation_ = ctx.field_validation;
      seen_status_write_ = ctx.status_write;
      seen_old_ = old != nullptr;
      if (obj["spec"].contains("extra")) {
        obj["spec"].erase("extra");
        ctx.warnings.push_back("unknown field \"spec.extra\"");
      }
      if (obj["spec"].value("replicas", 1) == 0) {
        return invalidError("TrainingJob", "ringmaster.dev", "x",
                            {{"FieldValueInvalid", "Invalid value: 0: bad", "spec.replicas"}});
      }
      return std::nullopt;
    };
    store_.registerType(t);
    store_.registerType(testing::pods());
    store_.registerType(testing::configMaps());
  }
  ObjectStore store_;
  FieldValidation seen_validation_ = FieldValidation::kIgnore;
  bool seen_status_write_ = false;
  bool seen_old_ = false;
};

TEST_F(WriteOptionsTest, DryRunCreateAnswersTheObjectButStoresNothing) {
  const uint64_t rv = store_.resourceVersion();
  WriteOptions wo;
  wo.dry_run = true;
  auto r = store_.create(kTj, "default", tj("a"), wo);
  ASSERT_TRUE(r.ok()) << r.error().bodyText();
  EXPECT_EQ((*r)->object["metadata"]["name"], "a");
  EXPECT_TRUE((*r)->object["metadata"].contains("uid"));
  EXPECT_FALSE((*r)->object["metadata"].contains("resourceVersion"));
  EXPECT_EQ(store_.resourceVersion(), rv);
  EXPECT_EQ(store_.get(kTj, "default", "a").error().code(), 404);
}

TEST_F(WriteOptionsTest, DryRunStillValidates) {
  WriteOptions wo;
  wo.dry_run = true;
  auto r = store_.create(kTj, "default", tj("a", 0), wo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 422);
}

TEST_F(WriteOptionsTest, DryRunUpdateAndPatchLeaveTheStoredObjectAlone) {
  ASSERT_TRUE(store_.create(kTj, "default", tj("a")).ok());
  const uint64_t rv = store_.resourceVersion();
  WriteOptions wo;
  wo.dry_run = true;
  auto patched = store_.patch(kTj, "default", "a", PatchType::kMerge, R"({"spec":{"replicas":7}})",
                              Subresource::kMain, wo);
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ((*patched)->object["spec"]["replicas"], 7);
  EXPECT_EQ((*patched)->object["metadata"]["generation"], 2);
  auto updated = store_.update(kTj, "default", "a", tj("a", 9), Subresource::kMain, wo);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ(store_.resourceVersion(), rv);
  EXPECT_EQ((*store_.get(kTj, "default", "a"))->object["spec"]["replicas"], 1);
}

TEST_F(WriteOptionsTest, AdmitSeesFieldValidationStatusWritesAndReturnsWarnings) {
  std::vector<std::string> warnings;
  WriteOptions wo;
  wo.field_validation = FieldValidation::kStrict;
  wo.warnings = &warnings;
  json obj = tj("a");
  obj["spec"]["extra"] = 1;
  auto r = store_.create(kTj, "default", obj, wo);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(seen_validation_, FieldValidation::kStrict);
  EXPECT_FALSE(seen_old_);
  EXPECT_FALSE((*r)->object["spec"].contains("extra"));
  EXPECT_EQ(warnings, std::vector<std::string>{"unknown field \"spec.extra\""});
  ASSERT_TRUE(store_
                  .patch(kTj, "default", "a", PatchType::kMerge, R"({"status":{"phase":"x"}})",
                         Subresource::kStatus)
                  .ok());
  EXPECT_TRUE(seen_status_write_);
  EXPECT_TRUE(seen_old_);
  EXPECT_EQ(seen_validation_, FieldValidation::kWarn);  // the default
}

TEST_F(WriteOptionsTest, MutateWritesSpecAndStatusTogether) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}, {"namespace", "default"}}},
              {"spec", {{"containers", json::array()}}}};
  ASSERT_TRUE(store_.create(kPods, "default", pod).ok());
  auto r = store_.mutate(kPods, "default", "p", [](json& obj) -> std::optional<StatusError> {
    obj["spec"]["nodeName"] = "n";
    obj["status"]["phase"] = "Running";
    return std::nullopt;
  });
  ASSERT_TRUE(r.ok());
  auto got = store_.get(kPods, "default", "p");
  EXPECT_EQ((*got)->object["spec"]["nodeName"], "n");
  EXPECT_EQ((*got)->object["status"]["phase"], "Running");
  auto refused = store_.mutate(kPods, "default", "p", [](json&) -> std::optional<StatusError> {
    return badRequestError("no");
  });
  EXPECT_EQ(refused.error().code(), 400);
  EXPECT_EQ(store_
                .mutate(kPods, "default", "nope",
                        [](json&) -> std::optional<StatusError> { return std::nullopt; })
                .error()
                .code(),
            404);
}

}  // namespace
}  // namespace ringmaster::local
