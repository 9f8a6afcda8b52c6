// The operator's HTTP endpoints: the health server's routes and the metrics it serves.

#include <gtest/gtest.h>

#include <atomic>

#include "operator/health_server.h"
#include "operator/operator_metrics.h"
#include "operator/progress.h"

namespace ringmaster::op {
namespace {

TEST(HealthServer, AnswersItsRoutesAnd404Otherwise) {
  std::atomic<bool> ready{false};
  std::map<std::string, HealthServer::Handler> routes;
  routes["/healthz"] = [] { return HttpAnswer{200, "ok\n"}; };
  routes["/readyz"] = [&ready] {
    return ready ? HttpAnswer{200, "ok\n"} : HttpAnswer{503, "not synced\n"};
  };
  auto server = HealthServer::start("127.0.0.1", 0, routes);
  ASSERT_TRUE(server.ok()) << server.status().toString();
  const int port = (*server)->port();
  const auto timeout = std::chrono::seconds(5);
  core::Result<std::string> healthz = httpGet("127.0.0.1", port, "/healthz", timeout);
  ASSERT_TRUE(healthz.ok()) << healthz.status().toString();
  EXPECT_EQ(*healthz, "ok\n");
  core::Result<std::string> readyz = httpGet("127.0.0.1", port, "/readyz", timeout);
  ASSERT_FALSE(readyz.ok());
  EXPECT_NE(readyz.status().message().find("HTTP 503"), std::string::npos);
  ready = true;
  EXPECT_TRUE(httpGet("127.0.0.1", port, "/readyz?verbose", timeout).ok());
  core::Result<std::string> missing = httpGet("127.0.0.1", port, "/nope", timeout);
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos);
  (*server)->stop();
}

TEST(OperatorMetrics, RegistersTheIssuesMetricsUnderOurNamingRules) {
  metrics::Registry registry;
  auto m = OperatorMetrics::create(registry);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  (*m)->jobCreated();
  (*m)->jobRestarted();
  (*m)->reconciled(std::chrono::milliseconds(3), false);
  (*m)->apiRequest("POST", 201);
  (*m)->apiRequest("GET", 0);
  (*m)->workqueueDepth(7);
  (*m)->watchStarted();
  (*m)->leader(true);
  const std::string text = registry.serialize();
  for (const char* name :
       {"ringmaster_operator_jobs_created_total 1", "ringmaster_operator_jobs_succeeded_total 0",
        "ringmaster_operator_jobs_failed_total 0", "ringmaster_operator_jobs_restarted_total 1",
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
