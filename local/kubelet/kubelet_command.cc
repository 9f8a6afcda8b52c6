#include "local/kubelet/kubelet_command.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "local/kubelet/image_runtime.h"
#include "local/kubelet/kubelet.h"
#include "local/kubelet/pod_env.h"
#include "local/kubelet/resources.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/kube/client_factory.h"
#include "ringmaster/kube/kubeconfig.h"
#include "ringmaster/kube/quantity.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

int64_t physicalMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return int64_t{8} << 30;
}

// The GPUs this machine's driver exposes (0 without one).
int64_t machineGpus() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    names.push_back(entry.path().filename().string());
  }
  return gpuDeviceCount(names);
}

std::string selfDir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : self.parent_path().string();
}

// Whether podman works on this machine: "" when `podman info` succeeds, else its words (its
// storage, its runtime and its settings are read then; a host that cannot run runc fails here).
std::string probePodman(const KubeletOptions& options, const std::string& root_dir) {
  std::error_code ec;
  fs::create_directories(root_dir, ec);
  if (ec) return "cannot create " + root_dir + ": " + ec.message();
  core::Result<std::string> info = runPodman(
      options.podman, options.containers_conf, {"info", "--format", "{{.Host.OCIRuntime.Path}}"},
      root_dir + "/podman-info.log", std::chrono::seconds(30));
  return info.ok() ? "" : info.status().message();
}

std::string defaultRootDir() {
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.ringmaster/local/kubelet";
}

}  // namespace

core::Status runKubeletCommand(const std::vector<std::string>& args) {
  std::string kubeconfig, node_name = "local", root_dir = defaultRootDir(), memory, start_delay;
  std::string claims_dir, resolv_conf = "/etc/resolv.conf";
  std::string pod_network = "auto", pod_cidr = kDefaultPodCidr, container_runtime = "host";
  int64_t cpu = std::max(1u, std::thread::hardware_concurrency());
  int64_t gpus = machineGpus(), max_pods = 110, log_port = -1, metrics_port = -1;
  double max_backoff = 10, heartbeat = 10, shutdown_grace = 0;
  bool simulate = false;
  core::FlagSet flags("ringmaster local kubelet",
                      "Runs the local kubelet: registers a Node, schedules pending pods onto it "
                      "and runs them as local processes (or simulates them).");
  flags.addString("kubeconfig", &kubeconfig, "kubeconfig of the API server (required)",
                  "KUBECONFIG");
  flags.addString("node-name", &node_name, "name of the Node to register");
  flags.addString("root-dir", &root_dir,
                  "directory for pod logs, working dirs, volumes and the hosts file");
  flags.addString("claims-dir", &claims_dir,
                  "directory of persistentVolumeClaims' volumes (default: ROOT-DIR/volumes); "
                  "kubelets of one host given the same one share claims, as nodes sharing a "
                  "network filesystem");
  flags.addInt("cpu", &cpu, "CPUs to advertise (default: this machine's)");
  flags.addString("memory", &memory,
                  "memory to advertise, a quantity such as 16Gi (default: "
                  "this machine's)");
  flags.addInt("gpus", &gpus,
               "nvidia.com/gpu count to advertise (default: this machine's /dev/nvidiaN devices)");
  flags.addInt("max-pods", &max_pods,
               "pods the node accepts (default 110, 100000 with --simulate)");
  flags.addBool("simulate", &simulate,
                "mark bound pods Running/Ready without starting processes (scale tests)");
  flags.addInt("log-port", &log_port,
               "serve container logs to a kube-apiserver on 127.0.0.1 at this port, advertised in "
               "the Node (0: any free port; -1: none, for the embedded API server, which reads "
               "the files itself)");
  flags.addInt("metrics-port", &metrics_port,
               "serve the containers' CPU and memory as a kubelet's cAdvisor series "
               "(container_cpu_usage_seconds_total, container_memory_working_set_bytes) at "
               "http://127.0.0.1:PORT/metrics/cadvisor, advertised in the Node's annotation "
               "local.ringmaster.dev/metrics-port (0: any free port; -1: none)");
  flags.addString("container-runtime", &container_runtime,
                  "how containers run: host (a process on the host, in the pod's network "
                  "namespace, whatever the image), podman (each in its image, through podman "
                  "and runc, with the pod's network, hostname, /etc/hosts, resolv.conf, volumes "
                  "and securityContext; images must be in podman's storage: none is pulled; "
                  "podman reads $CONTAINERS_CONF) or auto (podman where `podman info` works "
                  "here, else host)");
  flags.addString("resolv-conf", &resolv_conf,
                  "the node's resolver file, the base of each pod's /etc/resolv.conf (there is no "
                  "cluster DNS: cluster names are in the pod's /etc/hosts)");
  flags.addString("pod-network", &pod_network,
                  "how pods get addresses: cni (a network namespace per pod on a host bridge, "
                  "through the CNI plugins in /usr/lib/cni; needs root), loopback (127.1.x.y in "
                  "the host's network) or auto (cni where this host allows it)");
  flags.addString("pod-cidr", &pod_cidr, "the cni pod network's addresses");
  flags.addDouble("max-backoff-seconds", &max_backoff, "cap of the crash-loop restart back-off");
  flags.addDouble("heartbeat-seconds", &heartbeat, "Node status and Lease renewal period");
  flags.addDouble("shutdown-grace-period", &shutdown_grace,
                  "seconds: on SIGTERM, shut the node down gracefully: NotReady, pods stopped "
                  "within this time and marked Failed (reason Terminated) (0: off; the pods are "
                  "left for the next kubelet)");
  flags.addString("start-delay", &start_delay,
                  "PATTERN=SECONDS[,...]: start the containers of pods whose name matches the "
                  "shell pattern PATTERN "
                  "that long after they are assigned (tests: a fixed start order)");
  std::vector<const char*> argv{"ringmaster-local-kubelet"};
  for (const auto& a : args) argv.push_back(a.c_str());
  bool help = false;
  RM_RETURN_IF_ERROR(flags.parse(static_cast<int>(argv.size()), argv.data(), &help));
  if (help) {
    std::cout << flags.help();
    return core::Status::Ok();
  }
  if (kubeconfig.empty()) return core::usageError("--kubeconfig is required");
  if (node_name.empty()) return core::usageError("--node-name must not be empty");
  if (log_port < -1 || log_port > 65535) return core::usageError("--log-port must be -1..65535");
  if (metrics_port < -1 || metrics_port > 65535) {
    return core::usageError("--metrics-port must be -1..65535");
  }
  if (cpu < 0 || gpus < 0 || max_pods < 0) {
    return core::usageError("--cpu, --gpus and --max-pods must not be negative");
  }
  if (max_backoff <= 0 || heartbeat <= 0) {
    return core::usageError("--max-backoff-seconds and --heartbeat-seconds must be positive");
  }
  if (shutdown_grace < 0 || shutdown_grace > 3600) {
    return core::usageError("--shutdown-grace-period must be 0..3600 seconds");
  }
  if (simulate && !flags.wasSet("max-pods")) max_pods = 100'000;

  core::log::initFromEnv();
  KubeletOptions options;
  options.node_name = node_name;
  options.root_dir = root_dir;
  options.claims_dir = claims_dir;
  options.cpu_milli = cpu * 1000;
  if (memory.empty()) {
    options.memory_bytes = physicalMemory();
  } else {
    core::Result<kube::Quantity> q = kube::Quantity::parse(memory);
    if (!q.ok()) return core::usageError("--memory: " + q.status().message());
    options.memory_bytes = q->value();
  }
  options.gpus = gpus;
  options.max_pods = max_pods;
  options.simulate = simulate;
  RM_ASSIGN_OR_RETURN(options.pod_network, parsePodNetworkMode(pod_network));
  options.pod_cidr = pod_cidr;
  options.resolv_conf = resolv_conf;
  RM_ASSIGN_OR_RETURN(const ContainerEngine requested, parseContainerEngine(container_runtime));
  std::string probe_error;
  if (requested != ContainerEngine::kHost && !simulate) {
    const char* path = getenv("PATH");
    options.podman = resolveExecutable("podman", path ? path : "");
    if (const char* conf = getenv("CONTAINERS_CONF")) options.containers_conf = conf;
    if (!options.podman.empty()) probe_error = probePodman(options, root_dir);
  }
  RM_ASSIGN_OR_RETURN(const EngineChoice engine,
                      chooseContainerEngine(requested, simulate, options.podman, probe_error));
  options.engine = engine.engine;
  if (options.engine != ContainerEngine::kPodman) options.podman.clear();
  options.log_port = static_cast<int>(log_port);
  options.metrics_port = static_cast<int>(metrics_port);
  options.backoff.max = std::chrono::milliseconds(static_cast<int64_t>(max_backoff * 1000));
  options.backoff.initial = std::min(options.backoff.initial, options.backoff.max);
  options.heartbeat = std::chrono::milliseconds(static_cast<int64_t>(heartbeat * 1000));
  options.shutdown_grace = std::chrono::milliseconds(static_cast<int64_t>(shutdown_grace * 1000));
  options.self_dir = selfDir();
  options.nss_wrapper_library = findNssWrapper();
  RM_ASSIGN_OR_RETURN(options.start_delays, parseStartDelays(start_delay));

  auto& stop = core::installSignalStop();
  RM_ASSIGN_OR_RETURN(kube::KubeConfig config, kube::loadKubeConfigFile(kubeconfig));
  options.api_server_url = config.server;
  RM_ASSIGN_OR_RETURN(auto client, kube::makeApiClient(config));
  RM_LOG(INFO, LOCAL) << "kubelet for node " << node_name << " against " << config.server
                      << ", root " << fs::absolute(root_dir).string()
                      << (simulate ? ", simulated pods" : "") << ", containers as "
                      << (options.engine == ContainerEngine::kPodman ? "podman containers"
                                                                     : "host processes")
                      << " (" << engine.reason << ")";
  Kubelet kubelet(*client, options);
  return kubelet.run(stop);
}

}  // namespace ringmaster::local::kubelet
