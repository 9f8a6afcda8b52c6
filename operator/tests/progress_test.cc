#include "operator/progress.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

TEST(Progress, ParsesTheTrainerMetrics) {
  const std::string text = R"(# HELP ringmaster_trainer_epoch Current epoch (1-based)
# TYPE ringmaster_trainer_epoch gauge
ringmaster_trainer_epoch{rank="0",trainingjob="fmnist"} 3
ringmaster_trainer_steps_total{rank="0",trainingjob="fmnist"} 1406
ringmaster_trainer_loss{rank="0",trainingjob="fmnist"} 0.317749
ringmaster_trainer_samples_per_second{rank="0",trainingjob="fmnist"} 41234.5
ringmaster_trainer_test_accuracy_ratio{rank="0",trainingjob="fmnist"} 0.88714
ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second{backend="gloo",rank="0",trainingjob="fmnist"} 1.1e+09
ringmaster_trainer_step_seconds_bucket{le="0.001"} 5
)";
  core::Result<kube::TrainingProgress> p = parsePrometheusText(text);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->epoch, 3);
  EXPECT_EQ(p->step, 1406);
  // Rounded for people: 4 significant digits, whole samples per second.
  EXPECT_DOUBLE_EQ(*p->loss, 0.3177);
  EXPECT_DOUBLE_EQ(*p->samples_per_second, 41235);
  EXPECT_DOUBLE_EQ(*p->test_accuracy, 0.8871);
  EXPECT_DOUBLE_EQ(*p->allreduce_bus_bandwidth, 1.1e9);
}

TEST(Progress, NoTrainerMetricsIsNotFound) {
  EXPECT_EQ(parsePrometheusText("# nothing\nother_metric 1\n").status().code(),
            core::Code::kNotFound);
}

TEST(Progress, AbsentMetricsStayUnset) {
  core::Result<kube::TrainingProgress> p = parsePrometheusText("ringmaster_trainer_loss 0.5\n");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->epoch.has_value());
  EXPECT_DOUBLE_EQ(*p->loss, 0.5);
}

TEST(Progress, GaugesTheTrainerHasNotSetYetStayUnset) {
  // What rank 0 serves before its first epoch ended: no loss of 0, no 0 samples/s.
  core::Result<kube::TrainingProgress> p = parsePrometheusText(
      "ringmaster_trainer_epoch 0\nringmaster_trainer_steps_total 0\n"
      "ringmaster_trainer_loss 0\nringmaster_trainer_samples_per_second 0\n"
      "ringmaster_trainer_test_accuracy_ratio 0\n"
      "ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second{backend=\"gloo\"} 0\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (kube::TrainingProgress{std::nullopt,
                                        0,
                                        std::nullopt,
                                        std::nullopt,
                                        std::nullopt,
                                        std::nullopt,
                                        std::nullopt,
                                        std::nullopt,
                                        {}}));
}

// What the trainer writes with --summary-json (pretty) and the launcher leaves compacted.
const char* kSummary =
    R"({"allreduce":{"busBandwidthBytesPerSecond":812345678.9,"bytes":1,"calls":2,)"
    R"("exposedSeconds":0.1,"hiddenSeconds":0.2,"overlapRatio":0.5,"seconds":0.3},)"
    R"("backend":"shm","device":"cpu","epochs":5,"finalTrainLoss":0.31234567,)"
    R"("model":"mlp","precision":"fp32","resumedFromStep":-1,"samplesPerSecond":54572.71,)"
    R"("steadySamplesPerSecond":55000.0,"steps":1175,"testAccuracy":0.88623,"testLoss":0.33,)"
    R"("trainSeconds":5.5,"worldSize":2})";

TEST(TrainerSummary, FoldsIntoProgressRoundedAsTheScrape) {
  core::Result<kube::TrainingProgress> p = parseTrainerSummary(kSummary);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->epoch, 5);
  EXPECT_EQ(p->step, 1175);
  EXPECT_DOUBLE_EQ(*p->loss, 0.3123);
  EXPECT_DOUBLE_EQ(*p->samples_per_second, 54573);
  EXPECT_DOUBLE_EQ(*p->test_accuracy, 0.8862);
  EXPECT_DOUBLE_EQ(*p->allreduce_bus_bandwidth, 812345679);
}

TEST(TrainerSummary, ARunFromScratchHasNoResumedStep) {
  core::Result<kube::TrainingProgress> p = parseTrainerSummary(kSummary);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_FALSE(p->resumed_from_step.has_value()) << "-1 is not a step";
}

TEST(TrainerSummary, ARunThatResumedAtTheEndHasNoTrainingFigures) {
  // What a trainer writes when its checkpoint was already the end of training.
  core::Result<kube::TrainingProgress> p = parseTrainerSummary(
      R"({"epochs":5,"steps":1175,"resumedFromStep":1175,"testAccuracy":0.8852,)"
      R"("testLoss":0.32,"worldSize":2,"backend":"shm","device":"cpu"})");
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->epoch, 5);
  EXPECT_EQ(p->step, 1175);
  EXPECT_EQ(p->resumed_from_step, 1175);
  EXPECT_DOUBLE_EQ(p->test_accuracy.value_or(0), 0.8852);
  EXPECT_FALSE(p->loss.has_value());
  EXPECT_FALSE(p->samples_per_second.has_value());

  // Over a scrape that saw nothing trained: nothing invented.
  kube::TrainingProgress scraped;
  scraped.epoch = 5;
  scraped.step = 0;
  kube::TrainingProgress merged = mergeProgress(scraped, *p);
  EXPECT_EQ(merged.step, 1175);
  EXPECT_EQ(merged.resumed_from_step, 1175);
  EXPECT_FALSE(merged.loss.has_value());
  EXPECT_FALSE(merged.samples_per_second.has_value());
}

TEST(TrainerSummary, APbtMembersLineageFoldsIntoProgressAndMerges) {
  auto p = parseTrainerSummary(R"({"epochs": 4, "testAccuracy": 0.8437,
      "pbt": {"member": "exp-trial-3", "parameters": {"optimizer.learningRate": 0.002},
              "roundSeconds": 0.12,
              "lineage": [{"round": 1, "step": 469, "source": "exp-trial-2",
                           "sourceObjective": 0.81, "objective": 0.75,
                           "parameters": {"optimizer.learningRate": 0.0032}}]}})");
  ASSERT_TRUE(p.ok()) << p.status().toString();
  ASSERT_TRUE(p->pbt.has_value());
  EXPECT_EQ(p->pbt->member, "exp-trial-3");
  EXPECT_EQ(p->pbt->round_seconds, 0.12);
  ASSERT_EQ(p->pbt->lineage.size(), 1u);
  EXPECT_EQ(p->pbt->lineage[0].source, "exp-trial-2");
  EXPECT_EQ(p->pbt->lineage[0].step, 469);
  EXPECT_EQ(mergeProgress(kube::TrainingProgress{}, *p).pbt, p->pbt);
  // A pbt object of the wrong shape is named, not guessed at.
  auto bad = parseTrainerSummary(R"({"epochs": 4, "pbt": {"lineage": 3}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pbt"), std::string::npos) << bad.status().message();
}

TEST(TrainerSummary, BadMessagesAreErrorsNotCrashes) {
  struct Case {
    std::string text;
    core::Code code;
  };
  const Case cases[] = {
      {"", core::Code::kInvalidArgument},
      {"rank 0 exited with code 1: E CORE [j rank 0/1] boom", core::Code::kInvalidArgument},
      {"[1,2,3]", core::Code::kInvalidArgument},
      {R"({"epochs": "five"})", core::Code::kInvalidArgument},
      {R"({"epochs": 5, "testAccuracy": null})", core::Code::kInvalidArgument},
      {R"({"unrelated": true})", core::Code::kNotFound},
      {"{\"epochs\": 5, \"pad\": \"" + std::string(5000, 'x') + "\"}",
       core::Code::kInvalidArgument},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(parseTrainerSummary(c.text).status().code(), c.code) << c.text.substr(0, 80);
  }
  core::Result<kube::TrainingProgress> bad = parseTrainerSummary(R"({"steps": [1]})");
  EXPECT_NE(bad.status().message().find("steps"), std::string::npos);
}

TEST(TrainerSummary, MergeReplacesWhatTheSummaryHas) {
  kube::TrainingProgress scraped{4, 940, 0.35, 50000, 1e9, 0.8731, std::nullopt, std::nullopt, {}};
  kube::TrainingProgress final_figures{5,      1175,         0.3123,       54573, std::nullopt,
                                       0.8862, std::nullopt, std::nullopt, {}};
  EXPECT_EQ(mergeProgress(scraped, final_figures),
            (kube::TrainingProgress{
                5, 1175, 0.3123, 54573, 1e9, 0.8862, std::nullopt, std::nullopt, {}}));
  EXPECT_EQ(mergeProgress(std::nullopt, final_figures), final_figures);
}

TEST(Progress, UnreachableTrainerIsUnavailableNamingTheAddress) {
  HttpProgressSource source(std::chrono::milliseconds(500));
  // Port 1 on loopback: nothing listens there in a test environment.
  core::Result<kube::TrainingProgress> p = source.read("127.0.0.1", 1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("127.0.0.1:1"), std::string::npos) << p.status().toString();
}

}  // namespace
}  // namespace ringmaster::op
