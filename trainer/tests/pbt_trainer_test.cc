// Population-based training inside runs: the training loop meets the population after every
// epoch but the last and, when its member is in the bottom quantile, hands the engine the top
// member's checkpoint and the explored values; four real CPU trainers as one population each
// exploit in place, keep their lineage in the summary, and finish their epochs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "trainer/tests/rank_threads.h"
#include "trainer/tests/synthetic_data.h"
#include "trainer/training_loop.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

namespace fs = std::filesystem;

class PbtRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm-pbt-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  contract::TrainerSettings::Pbt population(const std::string& member, int members,
                                            double quantile) const {
    contract::TrainerSettings::Pbt p;
    p.directory = (dir_ / "pbt").string();
    p.member = member;
    for (int i = 0; i < members; ++i) p.population.push_back("m" + std::to_string(i));
    search::Parameter lr;
    lr.path = "optimizer.learningRate";
    lr.min = 0.001;
    lr.max = 0.5;
    lr.scale = search::Scale::kLog;
    p.space = {lr};
    p.seed = 5;
    p.quantile = quantile;
    p.resample_probability = 0;
    p.wait_seconds = 60;
    return p;
  }

  fs::path dir_;
};

// An engine that trains nothing: it evaluates to `hits` of 10 and records the member calls.
class MemberEngine final : public StepEngine {
 public:
  explicit MemberEngine(float hits) : hits_(hits) {}
  int64_t batchesPerEpoch() const override { return 4; }
  core::Status beginEpoch(int64_t, int64_t) override { return core::Status::Ok(); }
  core::Result<int> step(int64_t, int64_t, int64_t) override { return 10; }
  core::Result<EpochMeasures> endEpoch(int64_t, int64_t) override { return EpochMeasures{}; }
  core::Result<EpochTotals> evaluate(double, int64_t steps, const std::string&) override {
    return EpochTotals(hits_, 1, 10, 1, static_cast<double>(steps));
  }
  core::Status saveCheckpoint(const Position&) override { return core::Status::Ok(); }
  core::Result<std::string> writeMemberCheckpoint(const std::string& dir,
                                                  const Position& at) override {
    calls.push_back("write " + dir + " at " + std::to_string(at.step));
    return dir + "/step-" + std::to_string(at.step);
  }
  core::Status exploit(const std::string& file,
                       const contract::TrainerSettings::Optimizer& optimizer) override {
    calls.push_back("exploit " + file);
    learning_rate = optimizer.learning_rate;
    return core::Status::Ok();
  }
  uint64_t allreduceCalls() const override { return 0; }
  uint64_t allreduceBytes() const override { return 0; }
  core::Status finish(const TrainSummary&, double) override { return core::Status::Ok(); }

  std::vector<std::string> calls;
  double learning_rate = 0;

 private:
  float hits_;
};

TEST_F(PbtRun, TheLoopMeetsAfterEveryEpochButTheLastAndHandsOverTheTopCheckpoint) {
  contract::TrainerSettings settings;
  settings.epochs = 3;
  settings.optimizer.learning_rate = 0.1;
  MemberEngine top(9), bottom(5);
  std::vector<core::Status> results(2);
  std::thread threads[2];
  MemberEngine* engines[2] = {&top, &bottom};
  for (int i = 0; i < 2; ++i) {
    threads[i] = std::thread([&, i] {
      contract::TrainerSettings s = settings;
      s.pbt = population("m" + std::to_string(i), 2, 0.5);
      pbt::Member member(s.pbt, s.optimizer);
      LoopContext context = LoopContext::dataParallel(0, 1, nullptr, nullptr);
      context.pbt = &member;
      TrainSummary summary;
      results[i] = runTrainingLoop(s, context, *engines[i], Position{}, &summary);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0].toString();
  ASSERT_TRUE(results[1].ok()) << results[1].toString();
  const std::string top_dir = (dir_ / "pbt" / "checkpoints" / "m0").string();
  const std::string bottom_dir = (dir_ / "pbt" / "checkpoints" / "m1").string();
  EXPECT_EQ(top.calls,
            (std::vector<std::string>{"write " + top_dir + " at 4", "write " + top_dir + " at 8"}));
  EXPECT_EQ(bottom.calls, (std::vector<std::string>{
                              "write " + bottom_dir + " at 4", "exploit " + top_dir + "/step-4",
                              "write " + bottom_dir + " at 8", "exploit " + top_dir + "/step-8"}));
  EXPECT_TRUE(std::abs(bottom.learning_rate - 0.08) < 1e-12 ||
              std::abs(bottom.learning_rate - 0.12) < 1e-12)
      << "the top member's 0.1 explored: " << bottom.learning_rate;
}

TEST_F(PbtRun, FourTrainersExploitInPlaceAndKeepTheirLineage) {
  const data::Dataset train = testing::syntheticSet(1024, 1), test = testing::syntheticSet(256, 2);
  const double rates[] = {0.2, 0.05, 0.01, 0.002};
  std::vector<core::Result<TrainSummary>> results(4, core::internalError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      contract::TrainerSettings s = defaultTrainerSettings();
      s.model.hidden = {32};
      s.epochs = 3;
      s.batch_size = 64;
      s.optimizer.learning_rate = rates[i];
      s.pbt = population("m" + std::to_string(i), 4, 0.25);
      results[i] = testing::runRanks(s, 1, train, test);
    });
  }
  for (auto& t : threads) t.join();
  int exploits = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i].ok()) << "m" << i << ": " << results[i].status().toString();
    const TrainSummary& s = *results[i];
    EXPECT_EQ(s.epochs, 3);
    EXPECT_EQ(s.pbt_member, "m" + std::to_string(i));
    ASSERT_EQ(s.pbt_parameters.size(), 1u);
    for (const pbt::LineageEntry& e : s.pbt_lineage) {
      ++exploits;
      EXPECT_NE(e.source, s.pbt_member);
      EXPECT_GE(e.source_objective, e.own_objective) << "exploits take a better member's weights";
      EXPECT_TRUE(e.round == 1 || e.round == 2) << e.round;
    }
    if (!s.pbt_lineage.empty()) {
      EXPECT_EQ(s.pbt_parameters, s.pbt_lineage.back().parameters) << "it ends on its last values";
    }
    EXPECT_LT(s.pbt_round_seconds, 2 * 10.0) << "two rounds, each well under the wait";
  }
  EXPECT_EQ(exploits, 2) << "one member of four exploits each of the two rounds";

  // The summary carries the lineage, as the launcher hands it to the operator.
  const std::string path = (dir_ / "summary.json").string();
  for (int i = 0; i < 4; ++i) {
    if (results[i]->pbt_lineage.empty()) continue;
    ASSERT_TRUE(writeSummaryJson(*results[i], path).ok());
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["pbt"]["member"], "m" + std::to_string(i));
    EXPECT_EQ(j["pbt"]["lineage"].size(), results[i]->pbt_lineage.size());
    EXPECT_EQ(j["pbt"]["lineage"][0]["source"], results[i]->pbt_lineage[0].source);
    EXPECT_TRUE(j["pbt"]["lineage"][0]["parameters"].contains("optimizer.learningRate"));
    break;
  }
}

}  // namespace
}  // namespace ringmaster::trainer
