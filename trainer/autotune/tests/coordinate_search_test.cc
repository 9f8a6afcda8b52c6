// Autotune's coordinate search against step-time models with a known best setting: the
// optimum found in few samples, the defaults kept when nothing beats them by more than the
// noise, the sample budget never exceeded, and no setting measured twice.

#include "trainer/autotune/coordinate_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace ringmaster::trainer::autotune {
namespace {

Knob knob(const std::string& name, size_t count, size_t default_index) {
  Knob k{name, {}, default_index};
  for (size_t i = 0; i < count; ++i) k.values.push_back(std::pow(2.0, static_cast<double>(i)));
  return k;
}

using Model = std::function<double(const Setting&)>;

// Runs the search to its end against `model`.
CoordinateSearch searchOn(std::vector<Knob> knobs, SearchOptions options, const Model& model) {
  CoordinateSearch search(std::move(knobs), options);
  for (int guard = 0; guard < 1000 && search.next(); ++guard) {
    const Setting s = *search.next();
    search.report(s, model(s));
  }
  return search;
}

struct Case {
  std::string name;
  std::vector<Knob> knobs;
  SearchOptions options;
  Model model;
  Setting best;    // expected; empty: check the gap to `optimum` instead
  double optimum;  // the model's least value
  size_t max_samples_used;
};

double sq(double x) { return x * x; }

TEST(CoordinateSearch, FindsTheBestSettingInFewSamples) {
  const std::vector<Case> cases = {
      {"bowl_away_from_the_defaults",
       {knob("bucketCapMB", 8, 3), knob("firstBucketCapMB", 6, 2)},
       {},
       [](const Setting& s) { return 1 + 0.1 * sq(s[0] - 6.0) + 0.05 * sq(s[1] - 0.0); },
       {6, 0},
       1,
       10},
      {"defaults_are_best",
       {knob("bucketCapMB", 8, 3), knob("firstBucketCapMB", 6, 2)},
       {},
       [](const Setting& s) { return 1 + 0.1 * sq(s[0] - 3.0) + 0.1 * sq(s[1] - 2.0); },
       {3, 2},
       1,
       5},
      // 2% faster is within the 3% noise: the defaults stay.
      {"better_only_by_noise",
       {knob("bucketCapMB", 8, 3)},
       {},
       [](const Setting& s) { return s[0] == 4 ? 0.98 : 1.0; },
       {3},
       0.98,
       3},
      {"optimum_at_the_top_end",
       {knob("bucketCapMB", 10, 0)},
       {},
       [](const Setting& s) { return 10.0 - static_cast<double>(s[0]); },
       {9},
       1,
       10},
      // A gentle valley along the diagonal: one knob's best depends on the other's, so it
      // takes passes; near the optimum within the budget.
      {"coupled_knobs",
       {knob("a", 8, 0), knob("b", 8, 0)},
       {.max_samples = 30, .noise = 0.03},
       [](const Setting& s) { return 1 + 0.03 * sq(s[0] - s[1] * 1.0) + 0.05 * sq(s[0] - 5.0); },
       {},
       1,
       30},
      {"one_value_knob",
       {knob("microBatches", 1, 0)},
       {},
       [](const Setting&) { return 1.0; },
       {0},
       1,
       1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CoordinateSearch search = searchOn(c.knobs, c.options, c.model);
    EXPECT_TRUE(search.done());
    EXPECT_LE(search.samples().size(), c.max_samples_used);
    EXPECT_LE(search.samples().size(), static_cast<size_t>(c.options.max_samples));
    std::set<Setting> seen;
    for (const Sample& s : search.samples())
      EXPECT_TRUE(seen.insert(s.setting).second) << "a setting measured twice";
    if (!c.best.empty()) {
      EXPECT_EQ(search.best(), c.best);
    } else {
      EXPECT_LE(search.bestSeconds(), c.optimum * 1.1) << search.samples().size() << " samples";
    }
    EXPECT_EQ(search.bestSeconds(), c.model(search.best()));
  }
}

TEST(CoordinateSearch, StopsAtItsBudgetWithTheBestMeasured) {
  const Model model = [](const Setting& s) { return 10.0 - static_cast<double>(s[0]); };
  const CoordinateSearch search = searchOn({knob("bucketCapMB", 10, 0)}, {.max_samples = 3}, model);
  ASSERT_EQ(search.samples().size(), 3u);
  EXPECT_EQ(search.best(), Setting{2});
  EXPECT_TRUE(searchOn({knob("bucketCapMB", 10, 0)}, {.max_samples = 0}, model).samples().empty());
}

TEST(CoordinateSearch, IgnoresAReportForAnotherSetting) {
  CoordinateSearch search({knob("bucketCapMB", 4, 1)}, {});
  ASSERT_EQ(search.next(), Setting{1});
  search.report({3}, 0.1);  // not what it asked for
  EXPECT_TRUE(search.samples().empty());
  EXPECT_EQ(search.next(), Setting{1});
}

}  // namespace
}  // namespace ringmaster::trainer::autotune
