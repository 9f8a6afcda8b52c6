#include "local/run/experiment_progress.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

kube::TrainingJob trial(int index, const std::string& phase, std::optional<double> accuracy) {
  kube::TrainingJob t;
  t.metadata.name = "lr-trial-" + std::to_string(index);
  t.metadata.labels[kube::kTrialIndexLabel] = std::to_string(index);
  t.metadata.annotations[kube::kTrialParametersAnnotation] =
      "{\"optimizer.learningRate\":0.0" + std::to_string(index + 1) + "}";
  t.status.phase = phase;
  if (phase == "Succeeded" || phase == "Failed") {
    kube::Condition c;
    c.type = phase;
    c.status = "True";
    t.status.conditions.push_back(c);
  }
  if (accuracy) {
    t.status.progress.emplace();
    t.status.progress->test_accuracy = *accuracy;
  }
  return t;
}

kube::Experiment running() {
  kube::Experiment e;
  e.metadata.name = "lr";
  e.status.phase = "Running";
  e.status.progress = "3/8";
  e.status.trials_running = 4;
  e.status.trials_failed = 1;
  e.status.best_trial.emplace();
  e.status.best_trial->name = "lr-trial-2";
  e.status.best_trial->objective = 0.84123;
  return e;
}

TEST(SearchProgress, OneLinePerChange) {
  EXPECT_EQ(formatSearchProgress(running()),
            "Running  trials 3/8 finished, 4 running, 1 failed  best testAccuracy 0.8412 "
            "(lr-trial-2)");
  SearchReporter reporter;
  EXPECT_TRUE(reporter.observe(running()).has_value());
  EXPECT_FALSE(reporter.observe(running()).has_value()) << "nothing changed";
  kube::Experiment later = running();
  later.status.progress = "4/8";
  EXPECT_TRUE(reporter.observe(later).has_value());
  EXPECT_EQ(finishedSearch(later), "");
}

TEST(SearchProgress, TrialsBestFirstThenTheRestByIndex) {
  const std::string table =
      trialTable(running(), {trial(0, "Succeeded", 0.80), trial(1, "Failed", {}),
                             trial(2, "Succeeded", 0.84), trial(3, "Running", {})});
  const size_t two = table.find("* lr-trial-2"), zero = table.find("lr-trial-0"),
               one = table.find("lr-trial-1"), three = table.find("lr-trial-3");
  ASSERT_NE(two, std::string::npos) << table;
  EXPECT_LT(two, zero) << table;
  EXPECT_LT(zero, one) << table;
  EXPECT_LT(one, three) << table;
  EXPECT_NE(table.find("0.8400"), std::string::npos) << table;
  EXPECT_NE(table.find("{\"optimizer.learningRate\":0.03}"), std::string::npos) << table;
  // A pbt member shows the values it ended on and its exploits.
  kube::TrainingJob member = trial(0, "Succeeded", 0.85);
  member.status.progress->pbt.emplace();
  member.status.progress->pbt->parameters = {{"optimizer.learningRate", 0.002}};
  member.status.progress->pbt->lineage.emplace_back();
  const std::string pbt_table = trialTable(running(), {member});
  EXPECT_NE(pbt_table.find("{\"optimizer.learningRate\":0.002} (1 exploit)"), std::string::npos)
      << pbt_table;
  // A loss is minimized: the lowest first.
  kube::Experiment loss = running();
  loss.spec.objective.emplace();
  loss.spec.objective->metric = "loss";
  kube::TrainingJob a = trial(0, "Succeeded", {}), b = trial(1, "Succeeded", {});
  a.status.progress.emplace();
  a.status.progress->loss = 0.5;
  b.status.progress.emplace();
  b.status.progress->loss = 0.3;
  const std::string by_loss = trialTable(loss, {a, b});
  EXPECT_LT(by_loss.find("lr-trial-1"), by_loss.find("lr-trial-0")) << by_loss;
}

}  // namespace
}  // namespace ringmaster::local
