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

}  // namespace
}  // namespace ringmaster::op
