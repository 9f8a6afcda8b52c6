// The name rules, in kube-apiserver's words.
#include "ringmaster/kube/names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::kube {
namespace {

const std::string kLabelError =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const std::string kSubdomainError =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const std::string kDns1035Error =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const std::string kTooLong63 = "must be no more than 63 characters";

using Rule = std::vector<std::string> (*)(std::string_view);

struct Case {
  const char* rule_name;
  Rule rule;
  std::string name;
  std::vector<std::string> problems;
};

TEST(Names, ProblemsInKubeApiserversWords) {
  const Case cases[] = {
      {"label", dns1123LabelProblems, "data", {}},
      {"label", dns1123LabelProblems, "0-data-1", {}},
      {"label", dns1123LabelProblems, std::string(63, 'a'), {}},
      {"label", dns1123LabelProblems, std::string(64, 'a'), {kTooLong63}},
      {"label", dns1123LabelProblems, "a.b", {kLabelError}},
      {"label", dns1123LabelProblems, "..", {kLabelError}},
      {"label", dns1123LabelProblems, "../x", {kLabelError}},
      {"label", dns1123LabelProblems, "a/b", {kLabelError}},
      {"label", dns1123LabelProblems, "Data", {kLabelError}},
      {"label", dns1123LabelProblems, "-data", {kLabelError}},
      {"label", dns1123LabelProblems, "data-", {kLabelError}},
      {"label", dns1123LabelProblems, "a b", {kLabelError}},
      {"label", dns1123LabelProblems, "", {kLabelError}},
      {"label", dns1123LabelProblems, std::string(64, '.'), {kTooLong63, kLabelError}},
      {"subdomain", dns1123SubdomainProblems, "job.worker-0.a1", {}},
      {"subdomain", dns1123SubdomainProblems, std::string(253, 'a'), {}},
      {"subdomain",
       dns1123SubdomainProblems,
       std::string(254, 'a'),
       {"must be no more than 253 characters"}},
      {"subdomain", dns1123SubdomainProblems, "a..b", {kSubdomainError}},
      {"subdomain", dns1123SubdomainProblems, "../../tmp/x", {kSubdomainError}},
      {"subdomain", dns1123SubdomainProblems, "a b;c", {kSubdomainError}},
      {"dns1035", dns1035LabelProblems, "fmnist", {}},
      {"dns1035", dns1035LabelProblems, "a-1", {}},
      {"dns1035", dns1035LabelProblems, "1abc", {kDns1035Error}},
      {"dns1035", dns1035LabelProblems, "abc-", {kDns1035Error}},
      {"dns1035", dns1035LabelProblems, "", {kDns1035Error}},
      {"dns1035", dns1035LabelProblems, std::string(64, 'a'), {kTooLong63}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.rule(c.name), c.problems) << c.rule_name << " \"" << c.name << "\"";
  }
}

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

}  // namespace
}  // namespace ringmaster::kube
