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

}  // namespace
}  // namespace ringmaster::kube
