#include "local/kubelet/usage_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace ringmaster::local::kubelet {
namespace {

const prometheus::ClientMetric* find(const prometheus::MetricFamily& family,
                                     const std::string& container) {
  for (const auto& m : family.metric)
    for (const auto& l : m.label)
      if (l.name == "container" && l.value == container) return &m;
  return nullptr;
}

TEST(UsageFamilies, OneSeriesPerLiveContainerWithCadvisorsNamesAndLabels) {
  const std::vector<RunningContainer> containers = {
      {"ns", "job-worker-0", "worker", "img", 10, ""},
      {"ns", "job-worker-0", "sidecar", "s", 11, ""},
      {"ns", "job-worker-1", "worker", "img", 12, ""}};
  std::map<pid_t, SessionUsage> usage = {{10, {2.5, 1000}}, {12, {1.0, 64}}};
  std::map<pid_t, double> floor;
  auto families = usageFamilies(containers, usage, floor);
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "container_cpu_usage_seconds_total");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Counter);
  EXPECT_EQ(families[1].name, "container_memory_working_set_bytes");
  EXPECT_EQ(families[1].type, prometheus::MetricType::Gauge);
  ASSERT_EQ(families[0].metric.size(), 2u) << "the sidecar's session has no live process";
  const std::vector<prometheus::ClientMetric::Label> labels = {
      {"container", "worker"}, {"image", "img"}, {"namespace", "ns"}, {"pod", "job-worker-0"}};
  EXPECT_EQ(families[0].metric[0].label, labels);
  EXPECT_DOUBLE_EQ(families[0].metric[0].counter.value, 2.5);
  EXPECT_DOUBLE_EQ(families[1].metric[0].gauge.value, 1000);
}

TEST(UsageFamilies, TheCpuCounterNeverFallsWithinASessionAndForgetsEndedOnes) {
  const std::vector<RunningContainer> containers = {{"ns", "p", "c", "i", 10, ""}};
  std::map<pid_t, double> floor;
  usageFamilies(containers, {{10, {5.0, 1}}}, floor);
  // An orphan the session did not reap took its time with it: the counter holds at 5.
  auto families = usageFamilies(containers, {{10, {4.0, 1}}}, floor);
  EXPECT_DOUBLE_EQ(find(families[0], "c")->counter.value, 5.0);
  families = usageFamilies(containers, {{10, {6.0, 1}}}, floor);
  EXPECT_DOUBLE_EQ(find(families[0], "c")->counter.value, 6.0);
  // A restarted container is a new session, whose counter starts from its own figure.
  families = usageFamilies({{"ns", "p", "c", "i", 20, ""}}, {{20, {0.5, 1}}}, floor);
  EXPECT_DOUBLE_EQ(find(families[0], "c")->counter.value, 0.5);
  EXPECT_EQ(floor.count(10), 0u);
}

// A real session burning CPU: Collect() reads its time and memory from /proc.
TEST(UsageMetrics, CollectMeasuresALiveSessionFromProc) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setsid();
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;
  }
  UsageMetrics metrics;
  metrics.setContainers({{"default", "burner", "main", "busybox", child, ""}});
  double cpu = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::vector<prometheus::MetricFamily> families;
  while (cpu < 0.2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    families = metrics.Collect();
    if (const auto* m = find(families[0], "main")) cpu = m->counter.value;
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GE(cpu, 0.2) << prometheus::TextSerializer().Serialize(families);
  ASSERT_NE(find(families[1], "main"), nullptr);
  EXPECT_GT(find(families[1], "main")->gauge.value, 0) << "a live process has a resident set";
  EXPECT_TRUE(metrics.Collect()[0].metric.empty()) << "the session ended";
}

}  // namespace
}  // namespace ringmaster::local::kubelet
