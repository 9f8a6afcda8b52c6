// A population's round as its members take it, each in a thread over one temporary directory:
// every member reaches the same decision, only the bottom quantile exploits, it takes a top
// member's checkpoint with that member's values perturbed, and its lineage says so; a member the
// others leave alone trains on; a report that does not parse is skipped.

#include "trainer/pbt/member.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace ringmaster::trainer::pbt {
namespace {

namespace fs = std::filesystem;

class PbtMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pbt-member-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  contract::TrainerSettings::Pbt settings(const std::string& member, int members = 4) const {
    contract::TrainerSettings::Pbt s;
    s.directory = dir_.string();
    s.member = member;
    for (int i = 0; i < members; ++i) s.population.push_back("m" + std::to_string(i));
    search::Parameter lr;
    lr.path = "optimizer.learningRate";
    lr.min = 0.001;
    lr.max = 1.0;
    lr.scale = search::Scale::kLog;
    search::Parameter momentum;
    momentum.path = "optimizer.momentum";
    momentum.choices = {0.0, 0.5, 0.9};
    s.space = {lr, momentum};
    s.seed = 11;
    s.quantile = 0.25;
    s.resample_probability = 0;
    s.maximize = true;
    s.wait_seconds = 30;
    return s;
  }

  static contract::TrainerSettings::Optimizer optimizer(double lr, double momentum) {
    contract::TrainerSettings::Optimizer o;
    o.learning_rate = lr;
    o.momentum = momentum;
    return o;
  }

  fs::path dir_;
};

TEST_F(PbtMemberTest, TheBottomMemberTakesTheTopMembersCheckpointAndPerturbedValues) {
  const double objectives[] = {0.9, 0.8, 0.7, 0.6};
  const double rates[] = {0.05, 0.1, 0.2, 0.4};
  std::vector<std::optional<Decision>> decisions(4);
  std::vector<std::unique_ptr<Member>> members;
  for (int i = 0; i < 4; ++i) {
    members.push_back(
        std::make_unique<Member>(settings("m" + std::to_string(i)), optimizer(rates[i], 0.9)));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto d = members[i]->interval(1, 469, objectives[i], "/ckpt/m" + std::to_string(i), nullptr);
      ASSERT_TRUE(d.ok()) << d.status().toString();
      decisions[i] = *d;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(decisions[i].has_value()) << i;
  ASSERT_TRUE(decisions[3].has_value());
  const Decision& d = *decisions[3];
  EXPECT_EQ(d.checkpoint, "/ckpt/m0");
  EXPECT_EQ(d.entry.source, "m0");
  EXPECT_EQ(d.entry.round, 1);
  EXPECT_EQ(d.entry.step, 469);
  EXPECT_DOUBLE_EQ(d.entry.source_objective, 0.9);
  EXPECT_DOUBLE_EQ(d.entry.own_objective, 0.6);
  // m0's learning rate times 0.8 or 1.2; a choice moved to a neighbour or kept.
  const double lr = d.optimizer.learning_rate;
  EXPECT_TRUE(std::abs(lr - 0.04) < 1e-12 || std::abs(lr - 0.06) < 1e-12) << lr;
  EXPECT_TRUE(d.optimizer.momentum == 0.5 || d.optimizer.momentum == 0.9) << d.optimizer.momentum;
  EXPECT_EQ(members[3]->parameters(), d.entry.parameters) << "it trains on them from now on";
  ASSERT_EQ(members[3]->lineage().size(), 1u);
  EXPECT_EQ(members[3]->lineage()[0], d.entry);
  EXPECT_TRUE(members[0]->lineage().empty());

  // The next round starts from the exploited values, and the reports say so.
  PopulationDirectory directory(dir_.string(), {"m0", "m1", "m2", "m3"});
  const std::vector<MemberReport> round1 =
      directory.gather(1, std::chrono::milliseconds(0), nullptr);
  ASSERT_EQ(round1.size(), 4u);
  EXPECT_EQ(round1[3].parameters[0].second, 0.4) << "a report holds the values it trained with";
}

// A member whose process was replaced replays its rounds from its own reports: the same
// decision, values and lineage, and the checkpoint to continue from; one that met in none has
// nothing to replay.
TEST_F(PbtMemberTest, AReplacedMemberReplaysItsRoundsToTheSameDecision) {
  const double objectives[] = {0.9, 0.8, 0.7, 0.6};
  const double rates[] = {0.05, 0.1, 0.2, 0.4};
  std::vector<std::unique_ptr<Member>> members;
  for (int i = 0; i < 4; ++i) {
    members.push_back(
        std::make_unique<Member>(settings("m" + std::to_string(i)), optimizer(rates[i], 0.9)));
  }
  Member fresh(settings("m3"), optimizer(0.4, 0.9));
  auto none = fresh.replay(nullptr);
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_FALSE(none->has_value());
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(
          members[i]->interval(1, 469, objectives[i], "/ckpt/m" + std::to_string(i), nullptr).ok());
    });
  }
  for (auto& t : threads) t.join();

  Member bottom(settings("m3"), optimizer(0.4, 0.9));
  auto replay = bottom.replay(nullptr);
  ASSERT_TRUE(replay.ok()) << replay.status().toString();
  ASSERT_TRUE(replay->has_value());
  EXPECT_EQ((*replay)->round, 1);
  EXPECT_EQ((*replay)->step, 469);
  EXPECT_EQ((*replay)->checkpoint, "/ckpt/m0") << "the exploit's source";
  EXPECT_EQ(bottom.parameters(), members[3]->parameters());
  EXPECT_EQ(bottom.lineage(), members[3]->lineage());
  Member top(settings("m0"), optimizer(0.05, 0.9));
  auto kept = top.replay(nullptr);
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->checkpoint, "/ckpt/m0") << "its own";
  EXPECT_TRUE(top.lineage().empty());
}

TEST_F(PbtMemberTest, AMemberLeftAloneTrainsOn) {
  contract::TrainerSettings::Pbt s = settings("m0", 3);
  s.wait_seconds = 1;
  Member alone(s, optimizer(0.1, 0.9));
  const auto start = std::chrono::steady_clock::now();
  auto d = alone.interval(1, 100, 0.5, "/ckpt/m0", nullptr);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_FALSE(d->has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900))
      << "it waited for the others";
}

TEST_F(PbtMemberTest, AReportThatDoesNotParseIsLeftOut) {
  PopulationDirectory directory(dir_.string(), {"m0", "m1"});
  ASSERT_TRUE(directory.publish({"m0", 2, 10, 0.7, {{"optimizer.learningRate", 0.1}}, "/c"}).ok());
  fs::create_directories(dir_ / "round-2");
  std::ofstream(dir_ / "round-2" / "m1.json") << "{not json";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<MemberReport> got = directory.gather(2, std::chrono::seconds(30), nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
      << "nobody waits for a report that is there but unreadable";
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (MemberReport{"m0", 2, 10, 0.7, {{"optimizer.learningRate", 0.1}}, "/c"}));
}

TEST(PbtValues, OptimizerFieldsByPath) {
  contract::TrainerSettings::Optimizer o;
  o.learning_rate = 0.1;
  o.momentum = 0.9;
  const contract::TrainerSettings::Optimizer changed =
      withValues(o, {{"optimizer.learningRate", 0.02}, {"optimizer.weightDecay", 1e-4}});
  EXPECT_EQ(changed.learning_rate, 0.02);
  EXPECT_EQ(changed.weight_decay, 1e-4);
  EXPECT_EQ(changed.momentum, 0.9);
  EXPECT_EQ(optimizerValue(changed, "optimizer.learningRate"), 0.02);
  EXPECT_EQ(optimizerValue(changed, "optimizer.momentum"), 0.9);
}

}  // namespace
}  // namespace ringmaster::trainer::pbt
