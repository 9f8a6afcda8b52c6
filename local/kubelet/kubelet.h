#pragma once
// Kubelet: the local cluster's node agent and scheduler for its own node, an ordinary API client
// (more kubelets of one host make more nodes). One sync
// thread owns all state; a Reflector thread watches every pod and marks
// keys dirty; prober threads mark their pod dirty when readiness flips.
//
//   node       registers Node <node_name> (capacity = allocatable: cpu, memory, pods,
//              nvidia.com/gpu; Ready; InternalIP 127.0.0.1; annotation
//              local.ringmaster.dev/kubelet-root = root dir) and renews its Ready heartbeat and
//              its Lease in kube-node-lease (when that namespace exists) every heartbeat period.
//   schedule   pending pods without nodeName whose schedulerName is "" or default-scheduler are
//              bound (POST pods/NAME/binding) when their requests fit next to the non-terminal
//              pods of the node; otherwise PodScheduled=False/Unschedulable + a FailedScheduling
//              event, retried when capacity frees.
//   network    each pod's address (and network namespace) from the pod network (pod_network.h):
//              CNI's bridge when the host allows it, loopback addresses otherwise.
//   run        pods bound to the node: per container a process group (process_launcher.h), or a
//              container in its image through podman (image_runtime.h), with
//              the pod's env (pod_env.h), volumes (volumes.h), log file, restart policy with
//              back-off, readiness probes; status patched only when it changed; a deleted pod's
//              processes get SIGTERM, SIGKILL after the grace period, then the pod is deleted
//              with gracePeriodSeconds=0. Stopping, it stops every pod's processes; with a
//              shutdown grace period it shuts the node down as a real one does (NotReady, pods
//              Failed/Terminated).
//   simulate   no processes: bound pods are marked Running/Ready with a pod IP; deletion
//              completes at once.
//   metrics    with a metrics port: every running container's CPU and memory, as cAdvisor's.
// Files under the root dir R: R/pods/<ns>/<pod>_<uid>/ (logs, work/, volumes/, <container>.pid),
// R/volumes/<ns>/<claim>/, R/hosts (see README.md).
//
// Ownership: borrows the ApiClient, which must outlive the Kubelet. Thread-safety: run() is
// called once, from one thread. Failure: start-up errors (root dir, node registration) are
// returned by run(); later API errors are logged and retried.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "local/https/local_network.h"
#include "local/kubelet/image_runtime.h"
#include "local/kubelet/pod_network.h"
#include "local/kubelet/restart_backoff.h"
#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/kube/api_client.h"

namespace ringmaster::local::kubelet {

inline constexpr const char* kRootAnnotation = "local.ringmaster.dev/kubelet-root";
// The port of the node's container metrics (usage_metrics.h), when it serves them.
inline constexpr const char* kMetricsPortAnnotation = "local.ringmaster.dev/metrics-port";

// Holds back the containers of pods whose name matches the shell pattern `pod_name` (fnmatch)
// for `delay` after they are assigned to this node: tests use it to fix a start order.
struct StartDelay {
  std::string pod_name;  // e.g. "job-worker-0", "job-worker-*"
  std::chrono::milliseconds delay{0};
};

// Parses --start-delay's "PATTERN=SECONDS[,PATTERN=SECONDS...]".
core::Result<std::vector<StartDelay>> parseStartDelays(const std::string& text);

struct KubeletOptions {
  std::string node_name = "local";
  std::filesystem::path root_dir;  // made absolute
  // Where persistentVolumeClaims' directories live ("": <root_dir>/volumes). The kubelets of one
  // host given the same one share claims, as nodes mounting one network filesystem do.
  std::filesystem::path claims_dir;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t gpus = 0;
  int64_t max_pods = 110;
  bool simulate = false;
  BackoffPolicy backoff;
  std::chrono::milliseconds heartbeat{10'000};
  std::string self_dir;             // first on containers' PATH
  std::string nss_wrapper_library;  // "" disables name resolution through R/hosts
  std::vector<StartDelay> start_delays;
  // Serve container logs to a kube-apiserver (log_server.h) on this port; 0 any free one, -1
  // none (the embedded API server reads the files itself).
  int log_port = -1;
  // Serve the containers' CPU and memory as cAdvisor's series (usage_metrics.h) over HTTP at
  // 127.0.0.1:<port>/metrics/cadvisor, advertised in the Node's kMetricsPortAnnotation; 0 any
  // free port, -1 none.
  int metrics_port = -1;
  // How containers run (image_runtime.h): host processes, or each in its image through podman
  // (`podman` its path, `containers_conf` the CONTAINERS_CONF podman gets, "" none).
  ContainerEngine engine = ContainerEngine::kHost;
  std::string podman;
  std::string containers_conf;
  // How pods get their addresses (pod_network.h); a simulating kubelet uses loopback ones.
  PodNetworkMode pod_network = PodNetworkMode::kLoopback;
  std::string pod_cidr = kDefaultPodCidr;  // the cni network's addresses
  // The API server's URL as the kubelet reaches it; pods get it as KUBERNETES_SERVICE_HOST and
  // _PORT (pod_env.h: apiServerEnv).
  std::string api_server_url;
  // Graceful node shutdown (a real kubelet's shutdownGracePeriod; 0: off, as there): when the
  // kubelet is told to stop, its Node turns NotReady ("node is shutting down"), its pods' processes
  // get SIGTERM and at most this long before SIGKILL, and every pod ends Failed with reason
  // Terminated. Off, the pods are left as the API server has them, for the next kubelet.
  std::chrono::milliseconds shutdown_grace{0};
  // The node's resolver (a kubelet's --resolv-conf), the base of each pod's resolv.conf
  // (resolv_conf.h).
  std::filesystem::path resolv_conf = "/etc/resolv.conf";
};

class Kubelet {
 public:
  Kubelet(kube::ApiClient& client, KubeletOptions options);
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  // Runs until `stop`, then stops every pod's processes (SIGTERM, SIGKILL after their grace
  // period) and returns.
  core::Status run(const core::StopSource& stop);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// libnss_wrapper.so's path on this machine ("" when not installed).
std::string findNssWrapper();

}  // namespace ringmaster::local::kubelet
