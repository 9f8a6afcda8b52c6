// A pbt member of a program of the user's own, between its runs: what each run is told, the
// objective it wrote, and the meeting of two members over a real directory (the bottom one's
// working checkpoint becomes a copy of the top one's, and its next run gets the top one's
// values, explored); the last summary carries the lineage. Bad RINGMASTER_PBT is refused
// naming the field.

#include "launcher/pbt_rounds.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "ringmaster/contract/rank_environment.h"

namespace ringmaster::launcher {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class PbtRoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pbt-rounds-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  json member(const std::string& name) const {
    return {{"directory", dir_.string()},
            {"member", name},
            {"population", {"m0", "m1"}},
            {"parameters",
             {{{"path", "env.LEARNING_RATE"}, {"min", 0.001}, {"max", 1.0}, {"scale", "log"}},
              {{"path", "env.OPTIMIZER"}, {"choices", {"sgd", "adam"}}}}},
            {"seed", 4},
            {"quantile", 0.5},
            {"resampleProbability", 0.0},
            {"waitSeconds", 30},
            {"intervals", 3}};
  }
  static PbtRounds::Lookup env(std::map<std::string, std::string> vars) {
    auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
    return [held](const char* name) -> const char* {
      auto it = held->find(name);
      return it == held->end() ? nullptr : it->second.c_str();
    };
  }

  // Each member's first run left "<name>'s weights" in its checkpoint directory; m0 (0.85) and
  // m1 (0.70) then meet in round 1, at once.
  static void meetRoundOne(PbtRounds& m0, PbtRounds& m1) {
    for (const auto& [rounds, weights] :
         {std::pair{&m0, "m0's weights"}, std::pair{&m1, "m1's weights"}}) {
      fs::create_directories(rounds->checkpointDir());
      std::ofstream(rounds->checkpointDir() + "/model.pt") << weights;
    }
    core::Status s0, s1;
    std::thread t0([&] { s0 = m0.meet(1, 0.85, nullptr); });
    std::thread t1([&] { s1 = m1.meet(1, 0.70, nullptr); });
    t0.join();
    t1.join();
    ASSERT_TRUE(s0.ok()) << s0.toString();
    ASSERT_TRUE(s1.ok()) << s1.toString();
  }

  fs::path dir_;
};

TEST_F(PbtRoundsTest, EachRunIsToldItsValuesIntervalAndCheckpointDirectory) {
  auto rounds = PbtRounds::create(member("m1").dump(),
                                  env({{"LEARNING_RATE", "0.05"}, {"OPTIMIZER", "sgd"}}));
  ASSERT_TRUE(rounds.ok()) << rounds.status().toString();
  EXPECT_EQ((*rounds)->intervals(), 3);
  const std::map<std::string, std::string> run = (*rounds)->runEnvironment(2);
  EXPECT_EQ(run.at("LEARNING_RATE"), "0.05");
  EXPECT_EQ(run.at("OPTIMIZER"), "sgd");
  EXPECT_EQ(run.at(contract::rank_env::kPbtInterval), "2");
  EXPECT_EQ(run.at(contract::rank_env::kPbtIntervals), "3");
  EXPECT_EQ(run.at(contract::rank_env::kCheckpointDir), (dir_ / "work" / "m1").string());

  EXPECT_DOUBLE_EQ(*(*rounds)->objectiveOf(1, R"({"testAccuracy": 0.81, "epochs": 1})"), 0.81);
  for (const char* bad : {"", "[1]", R"({"finalTrainLoss": 0.3})", R"({"testAccuracy": "high"})"}) {
    core::Result<double> objective = (*rounds)->objectiveOf(2, bad);
    ASSERT_FALSE(objective.ok()) << bad;
    EXPECT_NE(objective.status().message().find("pbt interval 2"), std::string::npos)
        << objective.status().message();
    EXPECT_NE(objective.status().message().find(contract::rank_env::kSummaryFile),
              std::string::npos);
  }
}

TEST_F(PbtRoundsTest, BadSettingsAreRefusedNamingTheField) {
  struct Case {
    const char* name;
    std::function<void(json&)> change;
    std::map<std::string, std::string> vars;
    std::string says;
  };
  const std::map<std::string, std::string> both = {{"LEARNING_RATE", "0.05"}, {"OPTIMIZER", "sgd"}};
  const Case cases[] = {
      {"no intervals", [](json& j) { j.erase("intervals"); }, both, "pbt.intervals"},
      {"a trainer field", [](json& j) { j["parameters"][0]["path"] = "optimizer.learningRate"; },
       both, "env.NAME"},
      {"the first value missing", [](json&) {}, {{"OPTIMIZER", "sgd"}}, "LEARNING_RATE"},
      {"a member not in the population", [](json& j) { j["member"] = "m7"; }, both, "pbt.member"},
  };
  for (const Case& c : cases) {
    json j = member("m0");
    c.change(j);
    auto rounds = PbtRounds::create(j.dump(), env(c.vars));
    ASSERT_FALSE(rounds.ok()) << c.name;
    EXPECT_NE(rounds.status().message().find("RINGMASTER_PBT"), std::string::npos)
        << rounds.status().message();
    EXPECT_NE(rounds.status().message().find(c.says), std::string::npos)
        << c.name << ": " << rounds.status().message();
  }
  EXPECT_FALSE(PbtRounds::create("{not json", env(both)).ok());
}

TEST_F(PbtRoundsTest, TheBottomMemberContinuesFromACopyOfTheTopMembersCheckpoint) {
  auto m0 = PbtRounds::create(member("m0").dump(),
                              env({{"LEARNING_RATE", "0.2"}, {"OPTIMIZER", "adam"}}));
  auto m1 = PbtRounds::create(member("m1").dump(),
                              env({{"LEARNING_RATE", "0.01"}, {"OPTIMIZER", "sgd"}}));
  ASSERT_TRUE(m0.ok() && m1.ok());
  ASSERT_NO_FATAL_FAILURE(meetRoundOne(**m0, **m1));

  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read((*m0)->checkpointDir() + "/model.pt"), "m0's weights") << "the top one is kept";
  EXPECT_EQ(read((*m1)->checkpointDir() + "/model.pt"), "m0's weights")
      << "the bottom one continues from the top one's checkpoint";
  EXPECT_TRUE(fs::exists(dir_ / "checkpoints" / "m1" / "round-1" / "model.pt"))
      << "each member's checkpoint of the round is there for the others";
  const std::map<std::string, std::string> next = (*m1)->runEnvironment(2);
  const double rate = std::stod(next.at("LEARNING_RATE"));
  EXPECT_TRUE(std::abs(rate - 0.16) < 1e-9 || std::abs(rate - 0.24) < 1e-9)
      << "m0's rate perturbed by 0.8 or 1.2: " << rate;
  EXPECT_EQ((*m0)->runEnvironment(2).at("LEARNING_RATE"), "0.2") << "the top one runs on";

  const json last = json::parse(*(*m1)->finalSummary(R"({"testAccuracy": 0.87})"));
  EXPECT_DOUBLE_EQ(last["testAccuracy"].get<double>(), 0.87);
  EXPECT_EQ(last["pbt"]["member"], "m1");
  ASSERT_EQ(last["pbt"]["lineage"].size(), 1u) << last.dump(2);
  EXPECT_EQ(last["pbt"]["lineage"][0]["source"], "m0");
  EXPECT_EQ(last["pbt"]["lineage"][0]["round"], 1);
  EXPECT_DOUBLE_EQ(last["pbt"]["lineage"][0]["objective"].get<double>(), 0.70);
  EXPECT_EQ(json::parse(*(*m0)->finalSummary("{}"))["pbt"]["lineage"].size(), 0u);
}

// A member's pod replaced after a round (a node lost): the new launcher replays the rounds it
// met in from the population's directory, restores the checkpoint the next run starts from, and
// runs on from the next interval with the same values and lineage; a first start runs interval 1.
TEST_F(PbtRoundsTest, AReplacedMemberResumesAfterItsLastRound) {
  const std::map<std::string, std::string> m0_env = {{"LEARNING_RATE", "0.2"},
                                                     {"OPTIMIZER", "adam"}};
  const std::map<std::string, std::string> m1_env = {{"LEARNING_RATE", "0.01"},
                                                     {"OPTIMIZER", "sgd"}};
  auto m0 = PbtRounds::create(member("m0").dump(), env(m0_env));
  auto m1 = PbtRounds::create(member("m1").dump(), env(m1_env));
  ASSERT_TRUE(m0.ok() && m1.ok());
  EXPECT_EQ(*(*m1)->resume(nullptr), 1) << "nothing met yet: the first interval";
  ASSERT_NO_FATAL_FAILURE(meetRoundOne(**m0, **m1));
  const std::string explored = (*m1)->runEnvironment(2).at("LEARNING_RATE");
  // Interval 2 had begun on both when their pods were lost: half-written checkpoints.
  std::ofstream((*m0)->checkpointDir() + "/model.pt") << "half of m0's interval 2";
  std::ofstream((*m1)->checkpointDir() + "/model.pt") << "half of m1's interval 2";

  auto again1 = PbtRounds::create(member("m1").dump(), env(m1_env));
  auto again0 = PbtRounds::create(member("m0").dump(), env(m0_env));
  ASSERT_TRUE(again1.ok() && again0.ok());
  core::Result<int32_t> next1 = (*again1)->resume(nullptr);
  core::Result<int32_t> next0 = (*again0)->resume(nullptr);
  ASSERT_TRUE(next1.ok()) << next1.status().toString();
  ASSERT_TRUE(next0.ok()) << next0.status().toString();
  EXPECT_EQ(*next1, 2);
  EXPECT_EQ(*next0, 2);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read((*again1)->checkpointDir() + "/model.pt"), "m0's weights")
      << "the exploit's checkpoint again, not the lost run's";
  EXPECT_EQ(read((*again0)->checkpointDir() + "/model.pt"), "m0's weights")
      << "its own round-1 checkpoint";
  EXPECT_EQ((*again1)->runEnvironment(2).at("LEARNING_RATE"), explored)
      << "the same decision from the same reports";
  const json last = json::parse(*(*again1)->finalSummary(R"({"testAccuracy": 0.86})"));
  ASSERT_EQ(last["pbt"]["lineage"].size(), 1u) << last.dump(2);
  EXPECT_EQ(last["pbt"]["lineage"][0]["source"], "m0");
}

}  // namespace
}  // namespace ringmaster::launcher
