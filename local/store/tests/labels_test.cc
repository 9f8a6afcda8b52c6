#include "local/store/labels.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

TEST(Labels, CausesNameEveryBadKeyAndValueOnMetadataLabels) {
  const nlohmann::json meta = {{"labels", {{"ok", "fine"}, {"tier", "back end"}, {"a b", "x"}}}};
  const auto causes = labelCauses(meta);
  ASSERT_EQ(causes.size(), 2u);
  for (const auto& c : causes) {
    EXPECT_EQ(c.field, "metadata.labels");
    EXPECT_EQ(c.reason, "FieldValueInvalid");
  }
  EXPECT_EQ(causes[0].message.rfind("Invalid value: \"a b\": name part", 0), 0u);
  EXPECT_EQ(causes[1].message.rfind("Invalid value: \"back end\": a valid label", 0), 0u);
  EXPECT_TRUE(labelCauses({{"name", "x"}}).empty());
}

}  // namespace
}  // namespace ringmaster::local
