// The operator's metrics: what it registers and serves (its probe endpoint is
// ringmaster/http/probe_server.h, tested in lib/http).

#include <gtest/gtest.h>

#include "operator/operator_metrics.h"

namespace ringmaster::op {
namespace {

TEST(OperatorMetrics, RegistersItsMetricsUnderOurNamingRules) {
  metrics::Registry registry;
  auto m = OperatorMetrics::create(registry);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  (*m)->jobCreated("team-a");
  (*m)->jobRestarted("team-a");
  (*m)->jobFailed("team-b");
  (*m)->reconciled(std::chrono::milliseconds(3), false);
  (*m)->apiRequest("POST", 201);
  (*m)->apiRequest("GET", 0);
  (*m)->workqueueDepth(7);
  (*m)->watchStarted();
  (*m)->leader(true);
  const std::string text = registry.serialize();
  for (const char* name :
       {// A namespace's first job starts all four of its series.
        "ringmaster_operator_jobs_created_total{namespace=\"team-a\"} 1",
        "ringmaster_operator_jobs_succeeded_total{namespace=\"team-a\"} 0",
        "ringmaster_operator_jobs_failed_total{namespace=\"team-a\"} 0",
        "ringmaster_operator_jobs_restarted_total{namespace=\"team-a\"} 1",
        "ringmaster_operator_jobs_created_total{namespace=\"team-b\"} 0",
        "ringmaster_operator_jobs_failed_total{namespace=\"team-b\"} 1",
        "ringmaster_operator_reconcile_seconds_count 1",
        "ringmaster_operator_reconcile_errors_total 1", "ringmaster_operator_workqueue_depth 7",
        "ringmaster_operator_api_requests_total{code=\"201\",verb=\"POST\"} 1",
        "ringmaster_operator_api_requests_total{code=\"error\",verb=\"GET\"} 1",
        "ringmaster_operator_watch_restarts_total 1", "ringmaster_operator_leader 1"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name << " missing in\n" << text;
  }
}

// Every managed job has its phase, world size and restarts, whatever its pods run; a new phase
// replaces the old one's series and a deleted job leaves none.
TEST(OperatorMetrics, EachJobsPhaseWorldAndRestartsFollowItsStatus) {
  metrics::Registry registry;
  auto m = OperatorMetrics::create(registry);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  kube::TrainingJobStatus status;
  (*m)->jobObserved("team-a/ddp", status);
  std::string text = registry.serialize();
  EXPECT_NE(
      text.find(
          R"(ringmaster_operator_job_phase{namespace="team-a",phase="Pending",trainingjob="ddp"} 1)"),
      std::string::npos)
      << "no phase yet reads as Pending\n"
      << text;
  status.phase = "Running";
  status.world_size = 4;
  status.restarts = 2;
  (*m)->jobObserved("team-a/ddp", status);
  (*m)->jobObserved("team-b/own", status);
  text = registry.serialize();
  for (
      const char* line :
      {R"(ringmaster_operator_job_phase{namespace="team-a",phase="Running",trainingjob="ddp"} 1)",
       R"(ringmaster_operator_job_world_size{namespace="team-a",trainingjob="ddp"} 4)",
       R"(ringmaster_operator_job_restarts{namespace="team-a",trainingjob="ddp"} 2)",
       R"(ringmaster_operator_job_phase{namespace="team-b",phase="Running",trainingjob="own"} 1)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " missing in\n" << text;
  }
  EXPECT_EQ(text.find("phase=\"Pending\""), std::string::npos) << "the old phase stays\n" << text;
  (*m)->jobForgotten("team-a/ddp");
  (*m)->jobForgotten("team-a/never-seen");
  text = registry.serialize();
  EXPECT_EQ(text.find("trainingjob=\"ddp\""), std::string::npos) << text;
  EXPECT_NE(text.find("trainingjob=\"own\""), std::string::npos) << text;
}

// Each search's trials by state and its best objective follow its status; the best appears with
// the first finished trial, moves with a better one, and a deleted Experiment leaves no series.
TEST(OperatorMetrics, EachSearchsTrialsAndBestObjectiveFollowItsStatus) {
  metrics::Registry registry;
  auto m = OperatorMetrics::create(registry);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  kube::ExperimentStatus status;
  status.trials = 8;
  status.trials_created = 4;
  status.trials_running = 4;
  (*m)->experimentObserved("team-a/lr", status, "testAccuracy");
  std::string text = registry.serialize();
  for (
      const char* line :
      {R"(ringmaster_operator_experiment_trials{experiment="lr",namespace="team-a",state="planned"} 8)",
       R"(ringmaster_operator_experiment_trials{experiment="lr",namespace="team-a",state="created"} 4)",
       R"(ringmaster_operator_experiment_trials{experiment="lr",namespace="team-a",state="running"} 4)",
       R"(ringmaster_operator_experiment_trials{experiment="lr",namespace="team-a",state="succeeded"} 0)",
       R"(ringmaster_operator_experiment_trials{experiment="lr",namespace="team-a",state="failed"} 0)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " missing in\n" << text;
  }
  EXPECT_EQ(text.find("ringmaster_operator_experiment_best_objective{"), std::string::npos)
      << "no trial finished, yet a best objective\n"
      << text;
  status.trials_running = 3;
  status.trials_succeeded = 1;
  status.best_trial.emplace();
  status.best_trial->objective = 0.8125;
  (*m)->experimentObserved("team-a/lr", status, "testAccuracy");
  status.best_trial->objective = 0.85;
  (*m)->experimentObserved("team-a/lr", status, "testAccuracy");
  (*m)->experimentObserved("team-b/pbt", status, "loss");
  text = registry.serialize();
  for (
      const char* line :
      {R"(ringmaster_operator_experiment_trials{experiment="lr",namespace="team-a",state="succeeded"} 1)",
       R"(ringmaster_operator_experiment_best_objective{experiment="lr",metric="testAccuracy",namespace="team-a"} 0.85)",
       R"(ringmaster_operator_experiment_best_objective{experiment="pbt",metric="loss",namespace="team-b"} 0.85)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " missing in\n" << text;
  }
  EXPECT_EQ(text.find("0.8125"), std::string::npos) << "the old best stays\n" << text;
  (*m)->experimentForgotten("team-a/lr");
  (*m)->experimentForgotten("team-a/never-seen");
  text = registry.serialize();
  EXPECT_EQ(text.find("experiment=\"lr\""), std::string::npos) << text;
  EXPECT_NE(text.find("experiment=\"pbt\""), std::string::npos) << text;
}

}  // namespace
}  // namespace ringmaster::op
