#include "local/apiserver/cel.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

json spec() {
  return json::parse(R"({"replicas": 3, "procsPerReplica": 2, "launcher": "native",
                         "name": "job", "tags": ["a", "b"], "env": [{"name": "X"}],
                         "limits": {"cpu": "1"}, "ratio": 0.5})");
}

bool truthy(const std::string& expr, const json* old = nullptr) {
  CelResult r = evaluateCel(expr, spec(), old);
  EXPECT_EQ(r.kind, CelResult::kOk) << expr << ": " << r.message;
  EXPECT_TRUE(r.value.is_boolean()) << expr << " gave " << r.value.dump();
  return r.kind == CelResult::kOk && r.value.is_boolean() && r.value.get<bool>();
}

TEST(Cel, ComparesAndCombinesWithBooleanOperators) {
  EXPECT_TRUE(truthy("self.replicas * self.procsPerReplica <= 4096"));
  EXPECT_FALSE(truthy("self.replicas * self.procsPerReplica > 6"));
  EXPECT_TRUE(truthy("self.replicas == 3 && self.launcher != 'mpi'"));
  EXPECT_TRUE(truthy("self.replicas > 10 || self.name == \"job\""));
  EXPECT_TRUE(truthy("!(self.replicas < 1)"));
  EXPECT_TRUE(truthy("self.replicas >= 3 ? true : false"));
  EXPECT_TRUE(truthy("self.ratio < 1.0"));
  EXPECT_TRUE(truthy("self.replicas % 2 == 1 && self.replicas / 2 == 1 && -self.replicas == -3"));
}

TEST(Cel, HasSizeInAndStringFunctions) {
  EXPECT_TRUE(truthy("has(self.launcher) && !has(self.missing)"));
  EXPECT_TRUE(truthy("size(self.tags) == 2 && self.name.size() == 3"));
  EXPECT_TRUE(truthy("'a' in self.tags && 'cpu' in self.limits && !('z' in self.tags)"));
  EXPECT_TRUE(truthy("self.name + '-x' == 'job-x'"));
  EXPECT_TRUE(truthy("self.name.startsWith('jo') && self.name.endsWith('ob')"));
  EXPECT_TRUE(truthy("self.name.contains('o') && self.name.matches('^j[a-z]+$')"));
  EXPECT_TRUE(truthy("self.limits['cpu'] == '1' && self.tags[1] == 'b'"));
  EXPECT_TRUE(truthy("string(self.replicas) == '3' && int('7') == 7"));
}

TEST(Cel, MacrosIterateListsAndMaps) {
  EXPECT_TRUE(truthy("self.env.all(e, e.name != '')"));
  EXPECT_TRUE(truthy("self.tags.exists(t, t == 'b')"));
  EXPECT_TRUE(truthy("self.tags.exists_one(t, t == 'a')"));
  EXPECT_TRUE(truthy("self.tags.filter(t, t != 'a') == ['b']"));
  EXPECT_TRUE(truthy("self.tags.map(t, t + t) == ['aa', 'bb']"));
  EXPECT_TRUE(truthy("self.limits.all(k, k == 'cpu')"));
}

TEST(Cel, OldSelfIsBoundForTransitionRules) {
  json old = json::parse(R"({"replicas": 2})");
  EXPECT_TRUE(truthy("self.replicas >= oldSelf.replicas", &old));
  EXPECT_TRUE(celUsesOldSelf("self == oldSelf"));
  EXPECT_FALSE(celUsesOldSelf("self.x == 1"));
}

TEST(Cel, RuntimeErrorsAreReportedNotThrown) {
  CelResult missing = evaluateCel("self.missing == 1", spec());
  EXPECT_EQ(missing.kind, CelResult::kError);
  EXPECT_EQ(missing.message, "no such key: missing");
  EXPECT_EQ(evaluateCel("self.replicas / 0 == 1", spec()).kind, CelResult::kError);
  EXPECT_EQ(evaluateCel("9223372036854775807 + 1 > 0", spec()).kind, CelResult::kError);
  // An error on one side of || is absorbed when the other side decides.
  EXPECT_TRUE(truthy("self.missing == 1 || true"));
  // A macro body that is not a bool is an error, and the macro's variable goes out of scope
  // exactly once (the fuzzer's input: an outer variable used after the inner macro failed).
  CelResult not_bool = evaluateCel("self.tags.exists(x, 2)", spec());
  EXPECT_EQ(not_bool.kind, CelResult::kError);
  EXPECT_EQ(not_bool.message, "no such overload: exists(int)");
  CelResult nested = evaluateCel(
      "self.tags.all(n, size(n) > 0) && self.tags.exists(x, size(x) * 2) == [n, 6]", spec());
  EXPECT_EQ(nested.kind, CelResult::kError) << nested.message;
}

TEST(Cel, UnsupportedExpressionsAreFlaggedNotCrashed) {
  for (const char* expr : {"duration('1s') > duration('0s')", "self.x.?y", "self ~ 1",
                           "unknownVar == 1", "self.replicas ==", "'unterminated",
                           "quantity(self.limits.cpu).isGreaterThan(quantity('0'))"}) {
    CelResult r = evaluateCel(expr, spec());
    EXPECT_EQ(r.kind, CelResult::kUnsupported) << expr;
  }
}

TEST(Cel, RegexSearchSpeaksRe2) {
  EXPECT_EQ(regexSearch("^\\d+$", "123"), true);
  EXPECT_EQ(regexSearch("^\\d+$", "12a"), false);
  EXPECT_EQ(regexSearch("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "my-job"), true);
  EXPECT_EQ(regexSearch("(", "x"), std::nullopt);
  // RE2's syntax, as Kubernetes reads it: flags and Unicode classes work, backreferences do not.
  EXPECT_EQ(regexSearch("(?i)^JOB-[0-9]+$", "job-12"), true);
  EXPECT_EQ(regexSearch("^\\p{L}+$", "z\xc3\xbcrich"), true);
  EXPECT_EQ(regexSearch("^(a)\\1$", "aa"), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::local
