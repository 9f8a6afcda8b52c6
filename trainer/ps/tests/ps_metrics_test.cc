// The parameter-server metrics as a scrape shows them: a server's requests, bytes, updates and
// the staleness of what it applied, per consistency model and order of pushes (a table); a
// worker's step figures.

#include "trainer/ps/ps_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace ringmaster::trainer::ps {
namespace {

using Floats = std::vector<float>;

// The value of the series `name` whose labels include every one of `labels` (`k="v"` each) in
// the exposition `text`; -1 when there is none.
double sample(const std::string& text, const std::string& name,
              const std::vector<std::string>& labels = {}) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    bool all = true;
    for (const std::string& label : labels) all = all && line.find(label) != std::string::npos;
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

struct Push {
  WorkerId worker;
  int64_t step;
};

struct ServerCase {
  std::string name;
  Consistency consistency;
  std::vector<Push> pushes;  // each pulled first, in this order, from one thread
  double updates;
  std::map<int, double> staleness_at_most;  // bucket upper bound -> cumulative pushes
  double staleness_sum;
};

std::ostream& operator<<(std::ostream& os, const ServerCase& c) { return os << c.name; }

class ServerMetricsTest : public ::testing::TestWithParam<ServerCase> {};

TEST_P(ServerMetricsTest, AScrapeCountsEveryRequestByteUpdateAndStaleness) {
  const ServerCase& c = GetParam();
  metrics::Registry registry({{"trainingjob", "ps"}, {"rank", "0"}});
  auto observer = PsServerMetrics::create(registry, 3);
  ASSERT_TRUE(observer.ok()) << observer.status().toString();
  ServerOptions options;
  options.consistency = c.consistency;
  options.optimizer.learning_rate = 1;
  options.wait_timeout = std::chrono::seconds(10);
  options.observer = observer->get();
  auto server = ParameterServer::create(3, {Piece{0, 0, 4, 0}}, Floats{1, 2, 3, 4}, 2, options);
  ASSERT_TRUE(server.ok()) << server.status().toString();
  Floats values(4);
  const Floats grads = {1, 1, 1, 1};
  for (const Push& p : c.pushes) {
    ASSERT_TRUE((*server)->pull(p.worker, p.step, values).ok());
    ASSERT_TRUE((*server)->push(p.worker, p.step, grads).ok());
  }

  const std::string text = registry.serialize();
  const auto n = static_cast<double>(c.pushes.size());
  const std::string server_label = "server=\"3\"";
  EXPECT_EQ(sample(text, "ringmaster_ps_server_requests_total", {server_label, "request=\"pull\""}),
            n);
  EXPECT_EQ(sample(text, "ringmaster_ps_server_requests_total", {server_label, "request=\"push\""}),
            n);
  EXPECT_EQ(sample(text, "ringmaster_ps_server_bytes_total", {server_label, "direction=\"in\""}),
            n * 16);
  EXPECT_EQ(sample(text, "ringmaster_ps_server_bytes_total", {server_label, "direction=\"out\""}),
            n * 16);
  EXPECT_EQ(sample(text, "ringmaster_ps_server_wait_seconds_count", {"request=\"pull\""}), n);
  EXPECT_EQ(sample(text, "ringmaster_ps_server_updates_total", {server_label}), c.updates);
  EXPECT_EQ(sample(text, "ringmaster_ps_staleness_steps_count", {server_label}), n);
  EXPECT_EQ(sample(text, "ringmaster_ps_staleness_steps_sum", {server_label}), c.staleness_sum);
  for (const auto& [bound, pushes] : c.staleness_at_most) {
    EXPECT_EQ(sample(text, "ringmaster_ps_staleness_steps_bucket",
                     {server_label, "le=\"" + std::to_string(bound) + "\""}),
              pushes)
        << "le " << bound;
  }
  // The registry's constant labels are on the server's series.
  EXPECT_EQ(sample(text, "ringmaster_ps_server_updates_total",
                   {server_label, "rank=\"0\"", "trainingjob=\"ps\""}),
            c.updates)
      << text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ServerMetricsTest,
    ::testing::Values(
        // Both workers step together: one update per step, nothing stale.
        ServerCase{
            "sync_in_step", Consistency::sync(), {{0, 0}, {1, 0}, {0, 1}, {1, 1}}, 2, {{0, 4}}, 0},
        // Worker 0 runs three steps while worker 1 waits: 0, 1 and 2 steps ahead of it.
        ServerCase{"async_one_runs_ahead",
                   Consistency::async(),
                   {{0, 0}, {0, 1}, {0, 2}, {1, 0}},
                   4,
                   {{0, 2}, {1, 3}, {2, 4}},
                   3},
        // Bound 1: worker 0 is let one step ahead, then worker 1 catches up.
        ServerCase{"bounded_one",
                   Consistency::bounded(1),
                   {{0, 0}, {0, 1}, {1, 0}, {1, 1}},
                   4,
                   {{0, 3}, {1, 4}},
                   1}),
    [](const ::testing::TestParamInfo<ServerCase>& info) { return info.param.name; });

TEST(WorkerMetrics, ObserveAddsAStepsRoundTripsAndBytes) {
  metrics::Registry registry({{"trainingjob", "ps"}, {"rank", "2"}});
  auto m = PsWorkerMetrics::create(registry);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  m->observe({.pull_seconds = 0.25,
              .compute_seconds = 1,
              .push_seconds = 0.5,
              .bytes_pulled = 400,
              .bytes_pushed = 400});
  m->observe({.pull_seconds = 0.25,
              .compute_seconds = 1,
              .push_seconds = 0.5,
              .bytes_pulled = 100,
              .bytes_pushed = 200});
  const std::string text = registry.serialize();
  EXPECT_EQ(sample(text, "ringmaster_ps_worker_pull_seconds_count"), 2);
  EXPECT_EQ(sample(text, "ringmaster_ps_worker_pull_seconds_sum"), 0.5);
  EXPECT_EQ(sample(text, "ringmaster_ps_worker_push_seconds_sum"), 1.0);
  EXPECT_EQ(sample(text, "ringmaster_ps_worker_bytes_total", {"direction=\"pulled\""}), 500);
  EXPECT_EQ(sample(text, "ringmaster_ps_worker_bytes_total", {"direction=\"pushed\""}), 600);
}

}  // namespace
}  // namespace ringmaster::trainer::ps
