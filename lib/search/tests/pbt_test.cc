// Population-based training's round: who exploits whom (the bottom quantile takes from the top),
// what sits out, and the explore step (perturbed by 0.8/1.2 within the range, neighbouring
// choices, fresh draws), all the same for the same seed and round.

#include "ringmaster/search/pbt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace ringmaster::search {
namespace {

using nlohmann::json;

std::vector<Parameter> lrSpace() {
  Parameter lr;
  lr.path = "optimizer.learningRate";
  lr.min = 1e-4;
  lr.max = 1.0;
  lr.scale = Scale::kLog;
  return {lr};
}

PbtMember member(const std::string& name, std::optional<double> objective, double lr) {
  return {name, objective, {{"optimizer.learningRate", lr}}};
}

struct RoundCase {
  std::string name;
  std::vector<PbtMember> members;
  double quantile;
  bool maximize;
  std::set<std::string> losers;   // who exploits
  std::set<std::string> sources;  // whom they may take from (the top quantile)
};

TEST(PbtRound, TheBottomQuantileTakesFromTheTop) {
  const std::vector<RoundCase> cases = {
      {"eight_quarter",
       {member("a", 0.80, 0.1), member("b", 0.85, 0.1), member("c", 0.70, 0.1),
        member("d", 0.90, 0.1), member("e", 0.60, 0.1), member("f", 0.88, 0.1),
        member("g", 0.75, 0.1), member("h", 0.82, 0.1)},
       0.25,
       true,
       {"e", "c"},
       {"d", "f"}},
      // A loss: lower is better.
      {"minimize",
       {member("a", 0.5, 0.1), member("b", 0.2, 0.1), member("c", 0.9, 0.1), member("d", 0.4, 0.1)},
       0.25,
       false,
       {"c"},
       {"b"}},
      // Unmeasured members sit out; two measured, a quarter of two is none.
      {"unmeasured_sit_out",
       {member("a", std::nullopt, 0.1), member("b", 0.5, 0.1), member("c", 0.6, 0.1)},
       0.25,
       true,
       {},
       {}},
      {"half_of_two", {member("a", 0.5, 0.1), member("b", 0.6, 0.1)}, 0.5, true, {"a"}, {"b"}},
      {"alone", {member("a", 0.5, 0.1)}, 0.5, true, {}, {}},
      // Ties rank by name: b before c.
      {"ties_by_name",
       {member("c", 0.5, 0.1), member("b", 0.5, 0.1), member("a", 0.9, 0.1), member("d", 0.1, 0.1)},
       0.25,
       true,
       {"d"},
       {"a"}},
  };
  for (const RoundCase& c : cases) {
    SCOPED_TRACE(c.name);
    PbtOptions options;
    options.quantile = c.quantile;
    options.maximize = c.maximize;
    const std::vector<Exploit> round = pbtRound(c.members, lrSpace(), options, 42, 3);
    std::set<std::string> losers;
    for (const Exploit& e : round) {
      losers.insert(e.member);
      EXPECT_TRUE(c.sources.contains(e.source)) << e.member << " took from " << e.source;
      ASSERT_EQ(e.params.size(), 1u);
    }
    EXPECT_EQ(losers, c.losers);
    // The order of the population changes nothing.
    std::vector<PbtMember> reversed(c.members.rbegin(), c.members.rend());
    EXPECT_EQ(pbtRound(reversed, lrSpace(), options, 42, 3), round);
  }
}

TEST(Explore, PerturbsByTheFactorsWithinTheRangeOrDrawsAfresh) {
  PbtOptions options;
  options.resample_probability = 0;
  int up = 0, down = 0;
  for (int64_t round = 0; round < 200; ++round) {
    const Assignment a =
        explore({{"optimizer.learningRate", 0.01}}, lrSpace(), options, 1, round, 5);
    const double v = a[0].second.get<double>();
    if (std::abs(v - 0.012) < 1e-12)
      ++up;
    else if (std::abs(v - 0.008) < 1e-12)
      ++down;
    else
      ADD_FAILURE() << "0.01 explored to " << v;
  }
  EXPECT_GT(up, 60);
  EXPECT_GT(down, 60);
  // Clamped at the range's end.
  const Assignment top = explore({{"optimizer.learningRate", 0.95}}, lrSpace(), options, 1, 2, 5);
  EXPECT_LE(top[0].second.get<double>(), 1.0);

  options.resample_probability = 1;
  const Assignment fresh = explore({{"optimizer.learningRate", 0.01}}, lrSpace(), options, 1, 0, 5);
  EXPECT_NE(fresh[0].second.get<double>(), 0.01);
  EXPECT_GE(fresh[0].second.get<double>(), 1e-4);
  EXPECT_EQ(fresh, explore({{"optimizer.learningRate", 0.01}}, lrSpace(), options, 1, 0, 5));
}

TEST(Explore, ChoicesMoveToANeighbourAndIntegersByAtLeastOne) {
  Parameter batch;
  batch.path = "batchSize";
  batch.min = 1;
  batch.max = 4;
  batch.integer = true;
  Parameter kind;
  kind.path = "optimizer.type";
  kind.choices = {"sgd", "adam"};
  PbtOptions options;
  options.resample_probability = 0;
  for (int64_t round = 0; round < 50; ++round) {
    const Assignment a =
        explore({{"batchSize", 2}, {"optimizer.type", "sgd"}}, {batch, kind}, options, 9, round, 1);
    const int64_t b = a[0].second.get<int64_t>();
    EXPECT_TRUE(b == 1 || b == 3) << "2 explored to " << b;
    EXPECT_TRUE(a[1].second == "sgd" || a[1].second == "adam") << a[1].second;
  }
}

}  // namespace
}  // namespace ringmaster::search
