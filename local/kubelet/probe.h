#pragma once
// Readiness probes: httpGet (to the pod IP unless probe.host is set; 200..399 passes), tcpSocket
// (connect succeeds) and exec (exit 0, run like the container: same env, mounts, working dir).
// A Prober thread runs one container's probe: initialDelaySeconds, then every periodSeconds
// (default 10) with timeoutSeconds (default 1); ready flips to true after successThreshold
// (default 1) consecutive passes and to false after failureThreshold (default 3) failures.
//
// Ownership: Prober owns its thread; the destructor stops and joins it. `changed(ready, why)`
// runs on the prober thread when readiness flips and after each failed probe while not ready
// (for Unhealthy events); it must not block. Thread-safety: ready() from any thread. Failure:
// probeOnce returns the failure text (Kubernetes' "Readiness probe failed: ..." message body); an
// empty string is a pass.

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "local/kubelet/process_launcher.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

struct ProbeTarget {
  std::string pod_ip;
  std::vector<kube::ContainerPort> ports;  // for named ports
  LaunchSpec exec_base;                    // env, mounts and working dir for exec probes
};

std::string probeOnce(const kube::Probe& probe, const ProbeTarget& target,
                      std::chrono::milliseconds timeout);

class Prober {
 public:
  using Changed = std::function<void(bool ready, const std::string& failure)>;
  Prober(kube::Probe probe, ProbeTarget target, Changed changed);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;
  bool ready() const { return ready_.load(); }

 private:
  void run(std::stop_token stop);

  kube::Probe probe_;
  ProbeTarget target_;
  Changed changed_;
  std::atomic<bool> ready_{false};
  std::jthread thread_;
};

}  // namespace ringmaster::local::kubelet
