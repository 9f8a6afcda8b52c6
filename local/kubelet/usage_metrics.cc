#include "local/kubelet/usage_metrics.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "local/kubelet/cgroup_usage.h"

namespace ringmaster::local::kubelet {

std::vector<prometheus::MetricFamily> usageFamilies(const std::vector<RunningContainer>& containers,
                                                    const std::map<pid_t, SessionUsage>& usage,
                                                    std::map<pid_t, double>& cpu_floor) {
  prometheus::MetricFamily cpu{"container_cpu_usage_seconds_total",
                               "Cumulative cpu time consumed in seconds.",
                               prometheus::MetricType::Counter,
                               {}};
  prometheus::MetricFamily memory{"container_memory_working_set_bytes",
                                  "Current working set in bytes.",
                                  prometheus::MetricType::Gauge,
                                  {}};
  std::map<pid_t, double> floor_now;
  for (const RunningContainer& c : containers) {
    auto found = usage.find(c.session);
    if (found == usage.end()) continue;
    // The labels in name order, as cAdvisor writes them.
    const std::vector<prometheus::ClientMetric::Label> labels = {{"container", c.container},
                                                                 {"image", c.image},
                                                                 {"namespace", c.namespace_name},
                                                                 {"pod", c.pod}};
    const double seconds = std::max(found->second.cpu_seconds, cpu_floor[c.session]);
    floor_now[c.session] = seconds;
    prometheus::ClientMetric m;
    m.label = labels;
    m.counter.value = seconds;
    cpu.metric.push_back(m);
    prometheus::ClientMetric g;
    g.label = labels;
    g.gauge.value = static_cast<double>(found->second.memory_bytes);
    memory.metric.push_back(g);
  }
  cpu_floor = std::move(floor_now);  // sessions that ended are forgotten
  return {cpu, memory};
}

void UsageMetrics::setContainers(std::vector<RunningContainer> containers) {
  std::lock_guard lock(mu_);
  containers_ = std::move(containers);
}

std::vector<prometheus::MetricFamily> UsageMetrics::Collect() const {
  std::vector<RunningContainer> containers;
  {
    std::lock_guard lock(mu_);
    containers = containers_;
  }
  std::set<pid_t> sessions;
  for (const auto& c : containers) sessions.insert(c.session);
  auto usage = sessionUsage(liveProcesses(), sessions, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  for (const auto& c : containers) {
    if (c.conmon_pidfile.empty()) continue;
    // A container without a readable cgroup (starting, or just ended) has no series rather than
    // podman's own figures.
    if (auto in_cgroup = conmonContainerUsage(c.conmon_pidfile)) {
      usage[c.session] = *in_cgroup;
    } else {
      usage.erase(c.session);
    }
  }
  std::lock_guard lock(mu_);
  return usageFamilies(containers, usage, cpu_floor_);
}

}  // namespace ringmaster::local::kubelet
