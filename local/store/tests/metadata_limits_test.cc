// Annotations are capped at 256 KiB per object (keys and values together), on create and on
// every later write, with kube-apiserver's 422.
#include "local/store/metadata_limits.h"

#include <gtest/gtest.h>

#include "local/store/object_store.h"
#include "local/store/tests/test_types.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;
using testing::kCm;

json annotated(size_t value_bytes) {
  return {{"annotations", {{"k", std::string(value_bytes, 'x')}}}};
}

TEST(MetadataLimits, AnnotationsUpTo256KiBIncludingKeys) {
  struct Case {
    const char* what;
    json metadata;
    bool too_long;
  };
  const Case cases[] = {
      {"none", json::object(), false},
      {"not an object", json("x"), false},
      {"exactly the limit (1-byte key)", annotated(kMaxAnnotationsBytes - 1), false},
      {"one byte over", annotated(kMaxAnnotationsBytes), true},
      {"2 MB", annotated(2 << 20), true},
      {"many small ones over the limit",
       [] {
         json a = json::object();
         for (int i = 0; i < 300; ++i) a["key-" + std::to_string(i)] = std::string(1000, 'v');
         return json{{"annotations", a}};
       }(),
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto causes = metadataLimitCauses(c.metadata);
    if (!c.too_long) {
      EXPECT_TRUE(causes.empty());
      continue;
    }
    ASSERT_EQ(causes.size(), 1u);
    EXPECT_EQ(causes[0].reason, "FieldValueTooLong");
    EXPECT_EQ(causes[0].field, "metadata.annotations");
    EXPECT_EQ(causes[0].message, "Too long: must have at most 262144 bytes");
  }
}

TEST(MetadataLimits, StoreRefusesOversizedAnnotationsOnCreateAndUpdate) {
  ObjectStore store;
  store.registerType(testing::configMaps());
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "a"}}}};
  json big = cm;
  big["metadata"]["annotations"] = {{"note", std::string(2 << 20, 'x')}};
  auto refused = store.create(kCm, "default", big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), 422);
  EXPECT_NE(refused.error().message().find("metadata.annotations: Too long"), std::string::npos)
      << refused.error().message();
  ASSERT_TRUE(store.create(kCm, "default", cm).ok());
  auto grown = store.update(kCm, "default", "a", big);
  ASSERT_FALSE(grown.ok());
  EXPECT_EQ(grown.error().code(), 422);
  auto patched = store.patch(kCm, "default", "a", PatchType::kMerge,
                             json{{"metadata", big["metadata"]}}.dump());
  ASSERT_FALSE(patched.ok());
  EXPECT_EQ(patched.error().code(), 422);
}

}  // namespace
}  // namespace ringmaster::local
