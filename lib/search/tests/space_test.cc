// The search space: which spaces are refused (naming the field), the grid's values and order,
// random draws (in range, on their scale, the same for the same seed and trial), and a trial's
// values written into spec.trainer.

#include "ringmaster/search/space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ringmaster::search {
namespace {

using nlohmann::json;

Parameter range(const std::string& path, double lo, double hi, Scale scale = Scale::kLinear,
                bool integer = false, int32_t points = 0) {
  Parameter p;
  p.path = path;
  p.min = lo;
  p.max = hi;
  p.scale = scale;
  p.integer = integer;
  p.grid_points = points;
  return p;
}

Parameter choices(const std::string& path, std::vector<json> values) {
  Parameter p;
  p.path = path;
  p.choices = std::move(values);
  return p;
}

struct InvalidCase {
  std::string name;
  std::vector<Parameter> space;
  bool grid;
  std::string field;    // the first error's
  std::string message;  // a part of it
};

TEST(ValidateSpace, RefusesWhatCannotBeSearchedNamingTheField) {
  Parameter no_max = range("optimizer.momentum", 0, 1);
  no_max.max.reset();
  Parameter both = range("batchSize", 32, 256);
  both.choices = {64};
  const std::vector<InvalidCase> cases = {
      {"empty", {}, false, "spec.parameters", "at least one parameter"},
      {"log_through_zero",
       {range("optimizer.learningRate", 0, 0.1, Scale::kLog)},
       false,
       "spec.parameters[0].min",
       "above 0 on a log scale"},
      {"log_below_zero",
       {range("optimizer.learningRate", -1, 0.1, Scale::kLog)},
       false,
       "spec.parameters[0].min",
       "above 0"},
      {"min_not_below_max",
       {range("optimizer.momentum", 0.9, 0.9)},
       false,
       "spec.parameters[0].max",
       "must be above min (0.9)"},
      {"half_a_range", {no_max}, false, "spec.parameters[0].max", "required"},
      {"range_and_choices", {both}, false, "spec.parameters[0]", "both a range"},
      {"nothing",
       {[] {
         Parameter p;
         p.path = "seed";
         return p;
       }()},
       false,
       "spec.parameters[0]",
       "needs a range"},
      {"no_path", {range("", 0, 1)}, false, "spec.parameters[0].path", "a field of spec.trainer"},
      {"bad_path",
       {range("optimizer..momentum", 0, 1)},
       false,
       "spec.parameters[0].path",
       "a field of spec.trainer"},
      {"twice",
       {range("optimizer.momentum", 0, 0.5), range("optimizer.momentum", 0.5, 0.9)},
       false,
       "spec.parameters[1].path",
       "searched twice"},
      {"no_whole_number",
       {range("batchSize", 1.2, 1.8, Scale::kLinear, true)},
       false,
       "spec.parameters[0]",
       "whole number"},
      {"grid_without_points",
       {range("optimizer.momentum", 0, 0.9)},
       true,
       "spec.parameters[0].gridPoints",
       "at least 2"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto errors = validateSpace(c.space, "spec.parameters", c.grid);
    ASSERT_FALSE(errors.empty());
    EXPECT_EQ(errors[0].field, c.field) << contract::describe(errors);
    EXPECT_NE(errors[0].message.find(c.message), std::string::npos) << contract::describe(errors);
  }
}

TEST(ValidateSpace, AcceptsRangesAndChoices) {
  const std::vector<Parameter> space = {
      range("optimizer.learningRate", 1e-4, 1e-1, Scale::kLog, false, 4),
      range("batchSize", 32, 256, Scale::kLog, true, 4), choices("optimizer.type", {"sgd", "adam"}),
      choices("model.hidden", {json::array({128}), json::array({512, 512})})};
  EXPECT_TRUE(validateSpace(space, "spec.parameters", true).empty());
  EXPECT_TRUE(validateSpace({range("optimizer.momentum", 0, 0.99)}, "p", false).empty());
}

TEST(Grid, ValuesOnTheirScaleFirstParameterSlowest) {
  const std::vector<Parameter> space = {
      range("optimizer.learningRate", 0.001, 0.1, Scale::kLog, false, 3),
      choices("optimizer.type", {"sgd", "adam"})};
  ASSERT_EQ(gridSize(space), 6);
  const std::vector<Assignment> grid = gridOf(space);
  ASSERT_EQ(grid.size(), 6u);
  const double lr[] = {0.001, 0.01, 0.1};
  for (size_t i = 0; i < grid.size(); ++i) {
    SCOPED_TRACE(describe(grid[i]));
    EXPECT_EQ(grid[i][0].first, "optimizer.learningRate");
    EXPECT_NEAR(grid[i][0].second.get<double>(), lr[i / 2], 1e-12);
    EXPECT_EQ(grid[i][1].second, i % 2 == 0 ? "sgd" : "adam");
  }
}

TEST(Grid, AtIndexIsTheGridsOwnPoint) {
  const std::vector<Parameter> space = {
      range("optimizer.learningRate", 0.001, 0.1, Scale::kLog, false, 3),
      range("batchSize", 32, 128, Scale::kLog, true, 3),
      choices("optimizer.type", {"sgd", "adam"})};
  const std::vector<Assignment> grid = gridOf(space);
  ASSERT_EQ(grid.size(), 18u);
  for (size_t i = 0; i < grid.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(gridAt(space, static_cast<int64_t>(i)), grid[i]);
  }
}

TEST(Grid, IntegerRangesRoundAndDropRepeats) {
  // 4 points over [1, 3]: 1, 1.67, 2.33, 3 -> 1, 2, 2, 3 -> 1, 2, 3.
  const std::vector<Assignment> grid = gridOf({range("tensor", 1, 3, Scale::kLinear, true, 4)});
  ASSERT_EQ(grid.size(), 3u);
  EXPECT_EQ(grid[0][0].second, 1);
  EXPECT_EQ(grid[1][0].second, 2);
  EXPECT_EQ(grid[2][0].second, 3);
}

TEST(Sample, InRangeOnItsScaleAndTheSameForTheSameSeedAndTrial) {
  const std::vector<Parameter> space = {range("optimizer.learningRate", 1e-4, 1, Scale::kLog),
                                        range("batchSize", 16, 19, Scale::kLinear, true),
                                        choices("optimizer.type", {"sgd", "adam", "sgd-nesterov"})};
  int below_1e2 = 0;
  std::vector<int> sizes(4, 0);
  for (int64_t trial = 0; trial < 2000; ++trial) {
    const Assignment a = sampleOf(space, 7, trial);
    ASSERT_EQ(a, sampleOf(space, 7, trial)) << "trial " << trial;
    const double lr = a[0].second.get<double>();
    ASSERT_GE(lr, 1e-4);
    ASSERT_LE(lr, 1.0);
    below_1e2 += lr < 1e-2;
    const int64_t batch = a[1].second.get<int64_t>();
    ASSERT_GE(batch, 16);
    ASSERT_LE(batch, 19);
    ++sizes[static_cast<size_t>(batch - 16)];
  }
  // Log-uniform over 4 decades: half the draws lie in the lower two.
  EXPECT_NEAR(below_1e2 / 2000.0, 0.5, 0.05);
  for (int n : sizes) EXPECT_NEAR(n / 2000.0, 0.25, 0.05);
  EXPECT_NE(sampleOf(space, 7, 0), sampleOf(space, 8, 0));
}

TEST(Apply, WritesEachPathIntoSpecTrainer) {
  json trainer = json::parse(R"({"optimizer": {"type": "sgd", "momentum": 0.9}, "epochs": 3})");
  const Assignment a = {{"optimizer.learningRate", 0.01},
                        {"batchSize", 64},
                        {"model.hidden", json::array({128, 64})}};
  ASSERT_TRUE(applyAssignment(a, trainer).ok());
  EXPECT_EQ(trainer, json::parse(R"({"optimizer": {"type": "sgd", "momentum": 0.9,
      "learningRate": 0.01}, "epochs": 3, "batchSize": 64, "model": {"hidden": [128, 64]}})"));
  EXPECT_EQ(describe(a), "optimizer.learningRate=0.01, batchSize=64, model.hidden=[128,64]");

  json flat = json::parse(R"({"epochs": 3})");
  const core::Status through = applyAssignment({{"epochs.count", 1}}, flat);
  EXPECT_EQ(through.code(), core::Code::kInvalidArgument);
  EXPECT_NE(through.message().find("spec.trainer.epochs.count: epochs is not an object"),
            std::string::npos)
      << through.toString();
}

}  // namespace
}  // namespace ringmaster::search
