#pragma once
// The node's containers' CPU and memory, served as a kubelet serves cAdvisor's at
// /metrics/cadvisor: container_cpu_usage_seconds_total and container_memory_working_set_bytes
// with the namespace, pod, container and image labels, so that a dashboard written for a real
// cluster's kubelets reads a local node's too. A local container is a session (session.h), not a
// cgroup: the figures are its processes' CPU time and resident sets, measured when scraped; a
// container in its image is read from its cgroup, as cAdvisor reads it.
//
// Ownership: the kubelet owns it and serves it through a metrics::Exposer. Thread-safety:
// setContainers() from the sync thread, Collect() from the exposer's; both lock. Failure: none
// (a process that ends mid-scan is not counted).

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "local/kubelet/session.h"

namespace ringmaster::local::kubelet {

// A running container of the node, as the sync thread knows it.
struct RunningContainer {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::string image;
  pid_t session = 0;
  // In an image (image_runtime.h): where podman's conmon writes its pid; the container's figures
  // then come from its cgroup (cgroup_usage.h), not from the session (podman's own process).
  std::string conmon_pidfile;
  bool operator==(const RunningContainer&) const = default;
};

// The exposition of `containers` given each session's usage: one series of each family per
// container with a live process; `cpu_floor` raises a container's CPU counter to what it read
// before (keyed by session), so that a reaped orphan never turns the counter back.
std::vector<prometheus::MetricFamily> usageFamilies(const std::vector<RunningContainer>& containers,
                                                    const std::map<pid_t, SessionUsage>& usage,
                                                    std::map<pid_t, double>& cpu_floor);

class UsageMetrics : public prometheus::Collectable {
 public:
  void setContainers(std::vector<RunningContainer> containers);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mu_;
  std::vector<RunningContainer> containers_;   // guarded by mu_
  mutable std::map<pid_t, double> cpu_floor_;  // guarded by mu_
};

}  // namespace ringmaster::local::kubelet
