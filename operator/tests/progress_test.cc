#include "operator/progress.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

TEST(Progress, ParsesTheTrainerMetrics) {
  const std::string text = R"(# HELP ringmaster_trainer_epoch Current epoch (1-based)
# TYPE ringmaster_trainer_epoch gauge
ringmaster_trainer_epoch{job="fmnist",rank="0"} 3
ringmaster_trainer_steps_total{job="fmnist",rank="0"} 1406
ringmaster_trainer_loss{job="fmnist",rank="0"} 0.317749
ringmaster_trainer_samples_per_second{job="fmnist",rank="0"} 41234.5
ringmaster_trainer_test_accuracy_ratio{job="fmnist",rank="0"} 0.88714
ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second{backend="gloo",job="fmnist",rank="0"} 1.1e+09
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

TEST(Progress, UnreachableTrainerIsUnavailableNamingTheAddress) {
  HttpProgressSource source(std::chrono::milliseconds(500));
  // Port 1 on loopback: nothing listens there in a test environment.
  core::Result<kube::TrainingProgress> p = source.read("127.0.0.1", 1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("127.0.0.1:1"), std::string::npos) << p.status().toString();
}

}  // namespace
}  // namespace ringmaster::op
