// The operator's HTTP endpoints: the health server's routes and the metrics it serves.

#include <gtest/gtest.h>

#include <atomic>

#include "operator/health_server.h"
#include "operator/operator_metrics.h"
#include "ringmaster/http/get.h"

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
  auto status = [port](const std::string& path) {
    core::Result<http::Response> r = http::get(http::url("127.0.0.1", port, path));
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return r.ok() ? r->status : 0L;
  };
  core::Result<http::Response> healthz = http::get(http::url("127.0.0.1", port, "/healthz"));
  ASSERT_TRUE(healthz.ok()) << healthz.status().toString();
  EXPECT_EQ(healthz->status, 200);
  EXPECT_EQ(healthz->body, "ok\n");
  EXPECT_EQ(status("/readyz"), 503);
  ready = true;
  EXPECT_EQ(status("/readyz?verbose"), 200);
  EXPECT_EQ(status("/nope"), 404);
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
