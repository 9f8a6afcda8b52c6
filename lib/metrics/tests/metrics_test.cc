#include "ringmaster/metrics/metrics.h"

#include <gtest/gtest.h>

#include "ringmaster/http/get.h"

namespace ringmaster::metrics {
namespace {

TEST(CheckName, EnforcesPrefixUnitsAndTotal) {
  EXPECT_TRUE(checkName("ringmaster_trainer_steps_total", true).ok());
  EXPECT_TRUE(checkName("ringmaster_trainer_step_seconds", false).ok());
  EXPECT_FALSE(checkName("trainer_steps_total", true).ok());
  EXPECT_FALSE(checkName("ringmaster_trainer_steps", true).ok());
  EXPECT_FALSE(checkName("ringmaster_trainer_loss_total", false).ok());
  EXPECT_FALSE(checkName("ringmaster_step_milliseconds", false).ok());
  EXPECT_FALSE(checkName("ringmaster_Step", false).ok());
}

TEST(Registry, RejectsBadNameWithTheName) {
  Registry r;
  auto bad = r.counter("ringmaster_steps", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ringmaster_steps"), std::string::npos);
}

TEST(Exposer, ServesRegisteredMetricsWithConstantLabelsOnAnyPort) {
  Registry r({{"trainingjob", "fmnist"}, {"rank", "0"}});
  auto steps = r.counter("ringmaster_trainer_steps_total", "Optimizer steps");
  ASSERT_TRUE(steps.ok());
  (*steps)->Add({}).Increment(3);
  auto exposer = Exposer::start("127.0.0.1", 0, r);
  ASSERT_TRUE(exposer.ok()) << exposer.status().message();
  ASSERT_GT((*exposer)->port(), 0);
  auto answer = http::get(http::url("127.0.0.1", (*exposer)->port(), "/metrics"));
  ASSERT_TRUE(answer.ok()) << answer.status().toString();
  EXPECT_EQ(answer->status, 200);
  const std::string& body = answer->body;
  EXPECT_NE(body.find("ringmaster_trainer_steps_total{rank=\"0\",trainingjob=\"fmnist\"} 3"),
            std::string::npos)
      << body;
}

// The kubelet's usage page: a collectable of its own at a path of its own, held weakly.
TEST(Exposer, ServesACollectableAtItsPathUntilItIsGone) {
  Registry r;
  auto up = r.gauge("ringmaster_up", "1 while serving");
  ASSERT_TRUE(up.ok());
  (*up)->Add({}).Set(1);
  std::shared_ptr<prometheus::Collectable> source = r.prometheusRegistry();
  auto exposer = Exposer::start("127.0.0.1", 0, source, "/metrics/cadvisor");
  ASSERT_TRUE(exposer.ok()) << exposer.status().message();
  const int port = (*exposer)->port();
  auto served = http::get(http::url("127.0.0.1", port, "/metrics/cadvisor"));
  ASSERT_TRUE(served.ok()) << served.status().toString();
  EXPECT_EQ(served->status, 200);
  EXPECT_NE(served->body.find("ringmaster_up 1"), std::string::npos) << served->body;
  auto elsewhere = http::get(http::url("127.0.0.1", port, "/metrics"));
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(elsewhere->status, 404);
  source.reset();
  r = Registry();  // the last owner of the old registry
  auto gone = http::get(http::url("127.0.0.1", port, "/metrics/cadvisor"));
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->status, 503);
}

TEST(Exposer, BusyPortIsAnErrorNamingTheAddress) {
  Registry r;
  auto first = Exposer::start("127.0.0.1", 0, r);
  ASSERT_TRUE(first.ok());
  auto second = Exposer::start("127.0.0.1", (*first)->port(), r);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string((*first)->port())),
            std::string::npos);
}

}  // namespace
}  // namespace ringmaster::metrics
