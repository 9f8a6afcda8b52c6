#include "local/store/labels.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

TEST(Labels, KeysAreQualifiedNames) {
  struct Row {
    std::string key;
    std::string problem;  // "" = valid; else the start of the first problem
  };
  const Row rows[] = {
      {"app", ""},
      {"ringmaster.dev/job-name", ""},
      {"A_b.c-9", ""},
      {"a b", "name part must consist of alphanumeric characters"},
      {"-app", "name part must consist"},
      {std::string(64, 'a'), "name part must be no more than 63 characters"},
      {"Example.com/app", "prefix part a lowercase RFC 1123 subdomain"},
      {"/app", "prefix part must be non-empty"},
      {"example.com/", "name part must be non-empty"},
      {"a/b/c", "a qualified name must consist of"},
  };
  for (const Row& row : rows) {
    const auto problems = labelKeyProblems(row.key);
    if (row.problem.empty()) {
      EXPECT_TRUE(problems.empty()) << row.key << ": " << problems.front();
    } else {
      ASSERT_FALSE(problems.empty()) << row.key;
      EXPECT_EQ(problems.front().rfind(row.problem, 0), 0u) << row.key << ": " << problems.front();
    }
  }
}

TEST(Labels, ValuesAreEmptyOrNameParts) {
  EXPECT_TRUE(labelValueProblems("").empty());
  EXPECT_TRUE(labelValueProblems("back-end_1.0").empty());
  EXPECT_EQ(labelValueProblems("back end").size(), 1u);
  EXPECT_EQ(labelValueProblems(std::string(64, 'v')).front(), "must be no more than 63 characters");
}

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
