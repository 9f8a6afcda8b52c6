#include "local/kubelet/kubelet.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "local/kubelet/hosts_file.h"
#include "local/kubelet/log_server.h"
#include "local/kubelet/placement.h"
#include "local/kubelet/pod_env.h"
#include "local/kubelet/pod_network.h"
#include "local/kubelet/pod_paths.h"
#include "local/kubelet/pod_status.h"
#include "local/kubelet/probe.h"
#include "local/kubelet/process_launcher.h"
#include "local/kubelet/resolv_conf.h"
#include "local/kubelet/resources.h"
#include "local/kubelet/session.h"
#include "local/kubelet/termination_message.h"
#include "local/kubelet/usage_metrics.h"
#include "local/kubelet/volumes.h"
#include "ringmaster/core/log.h"
#include "ringmaster/kube/binding.h"
#include "ringmaster/kube/clock.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/event_recorder.h"
#include "ringmaster/kube/lease.h"
#include "ringmaster/kube/node.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/reflector.h"
#include "ringmaster/kube/secret.h"
#include "ringmaster/metrics/metrics.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const kube::ResourceType kPods{"", "v1", "pods", true};
const kube::ResourceType kNodes{"", "v1", "nodes", false};
const kube::ResourceType kConfigMaps{"", "v1", "configmaps", true};
const kube::ResourceType kSecrets{"", "v1", "secrets", true};
const kube::ResourceType kLeases{"coordination.k8s.io", "v1", "leases", true};
constexpr const char* kHostIp = "127.0.0.1";
constexpr const char* kScheduler = "default-scheduler";

kube::Time wallNow() { return kube::Time(std::chrono::system_clock::now()); }

std::string podRef(const kube::Pod& pod) {
  return pod.metadata.namespace_name + "/" + pod.metadata.name;
}

bool isTerminalPhase(const std::string& phase) { return phase == "Succeeded" || phase == "Failed"; }

// data, with stringData merged over it as the API server should have done on write (ours keeps
// stringData as sent; kube-apiserver never returns it).
std::map<std::string, std::string> secretData(const kube::Secret& secret) {
  std::map<std::string, std::string> data = secret.data;
  for (const auto& [k, v] : secret.string_data) data[k] = v;
  return data;
}

struct ContainerRuntime {
  kube::Container spec;
  bool init = false;
  pid_t pid = -1;
  kube::ContainerState state;
  std::optional<kube::ContainerStateTerminated> last_terminated;
  int32_t restart_count = 0;
  RestartBackoff backoff;
  Clock::time_point next_start{};
  Clock::time_point started_mono{};
  bool done = false;  // terminated and not restarting
  std::unique_ptr<Prober> prober;
  std::string container_id;
};

struct PodRuntime {
  std::string key;
  std::shared_ptr<const kube::Pod> pod;  // the latest seen
  fs::path dir;
  std::string ip;
  std::string netns;  // the pod network's namespace its containers join ("" -> the host's)
  // The pod's own /etc/hosts (with mount namespaces; "" before the pod has an IP) and what it
  // holds now.
  fs::path etc_hosts;
  std::string etc_hosts_text;
  std::optional<kube::Time> start_time;
  std::vector<ContainerRuntime> containers;  // init containers first
  bool prepared = false;
  std::map<std::string, VolumeDir> volume_dirs;
  Clock::time_point retry_prepare{};
  Clock::time_point start_after{};  // --start-delay
  std::string prepare_error;
  bool node_shutdown = false;  // ended by a graceful node shutdown: Failed, reason Terminated
  // Why the kubelet refuses to run the pod (a path it would derive leaves its directory); the
  // pod ends Failed and nothing is created for it. dir is then empty.
  std::string refused;
  bool terminating = false;
  Clock::time_point kill_deadline{};
  bool sigkilled = false;
  bool gone = false;  // the API object no longer exists
  std::optional<kube::PodStatus> written;
  Resources requests;
  bool terminal = false;
};

// How the pod's names resolve: its IP, namespace, name, hostname and subdomain.
HostsEntry hostsEntryOf(const PodRuntime& rt) {
  const auto& m = rt.pod->metadata;
  return {rt.ip, m.namespace_name, m.name, rt.pod->spec.hostname, rt.pod->spec.subdomain};
}

}  // namespace

class Kubelet::Impl {
 public:
  Impl(kube::ApiClient& client, KubeletOptions options)
      : client_(client),
        options_(std::move(options)),
        scheduler_events_(client, clock_, {kScheduler, "", "", 4096, kube::kEventQueueLength}),
        kubelet_events_(
            client, clock_,
            {"kubelet", options_.node_name, options_.node_name, 4096, kube::kEventQueueLength}) {}

  core::Status run(const core::StopSource& stop);

 private:
  // --- start-up and node ---
  core::Status prepareRoot();
  core::Status choosePodNetwork();
  void killLeftovers();
  kube::Node desiredNode() const;
  core::Status registerNode();
  void heartbeat();
  // --- the sync loop ---
  void markDirty(const std::string& key);
  // The node watch saw `node`: flags a scheduling pass when what placement reads changed.
  void noteNode(const kube::Node& node);
  void syncKey(const std::string& key);
  void schedule();
  void reportPodScheduledFalse(const kube::Pod& pod, const std::string& reason,
                               const std::string& message, bool event);
  void stepPod(PodRuntime& rt);
  void stepSimulated(PodRuntime& rt);
  bool prepare(PodRuntime& rt);
  void startContainer(PodRuntime& rt, ContainerRuntime& c);
  void onExit(PodRuntime& rt, ContainerRuntime& c, const ExitInfo& exit);
  void beginTermination(PodRuntime& rt, const std::string& why);
  bool finishTermination(PodRuntime& rt);  // true when the runtime can go
  void writeStatus(PodRuntime& rt);
  void writeHosts();
  // The names of every pod of the cluster with an IP, this node's and the others'.
  std::vector<HostsEntry> clusterHosts() const;
  // The resolv.conf `pod`'s containers get: the node's resolver under the pod's DNS settings.
  std::string podResolvConfText(const kube::Pod& pod) const;
  // Writes `rt`'s own /etc/hosts when what it should hold changed.
  core::Status writePodHosts(PodRuntime& rt, const std::vector<HostsEntry>& cluster);
  // Keeps remote_hosts_ up to date with `pod` (nullptr: gone), a pod of another node.
  void noteRemotePod(const std::string& key, const kube::Pod* pod);
  void restoreFromStatus(PodRuntime& rt);
  PodView viewOf(const PodRuntime& rt) const;
  bool hasLiveProcess(const PodRuntime& rt) const;
  // Hands the running containers to the metrics endpoint when they changed.
  void publishRunningContainers();
  // Whether containers run in their images (through podman).
  bool inImages() const { return options_.engine == ContainerEngine::kPodman; }
  // Removes `c`'s container from podman (its `podman run` was killed, so nothing else will).
  void removeImageContainer(const PodRuntime& rt, const ContainerRuntime& c);
  // The LaunchSpec that runs `c` in its image; `host` is what a host process would run,
  // `volume_mounts` its volumes alone.
  core::Result<LaunchSpec> imageLaunchSpec(PodRuntime& rt, ContainerRuntime& c,
                                           const LaunchSpec& host,
                                           const std::vector<Mount>& volume_mounts,
                                           const std::string& message_path);
  void release(PodRuntime& rt);
  void stopAll();
  // A configMap's or secret's data; nullopt when it does not exist.
  core::Result<std::optional<std::map<std::string, std::string>>> sourceData(
      const std::string& ns, bool secret, const std::string& name);
  // A token of the pod's ServiceAccount bound to the pod, from the API server (TokenRequest).
  core::Result<std::string> serviceAccountToken(const kube::Pod& pod,
                                                const kube::ServiceAccountTokenProjection& t);
  core::Result<std::optional<std::string>> lookupKey(const std::string& ns, bool secret,
                                                     const std::string& name,
                                                     const std::string& key);
  void event(const kube::Pod& pod, std::string_view type, const std::string& reason,
             const std::string& message);

  kube::ApiClient& client_;
  KubeletOptions options_;
  kube::RealClock clock_;
  kube::EventRecorder scheduler_events_;
  kube::EventRecorder kubelet_events_;
  std::unique_ptr<kube::Reflector<kube::Pod>> reflector_;
  // Its own Node: an update to what placement reads re-runs the scheduler at once.
  std::unique_ptr<kube::Reflector<kube::Node>> node_reflector_;
  std::optional<kube::Node> watched_node_;  // owned by the node watch's thread
  std::shared_ptr<const kube::Store<kube::Pod>> store_;
  std::shared_ptr<const kube::Store<kube::RawObject>> undecodable_;  // pods that do not decode
  std::unique_ptr<LogServer> log_server_;
  std::shared_ptr<UsageMetrics> usage_metrics_;
  std::unique_ptr<metrics::Exposer> metrics_exposer_;  // serves usage_metrics_
  std::vector<RunningContainer> published_;            // what usage_metrics_ was last given
  EnvList base_env_;
  bool use_mounts_ = true;

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> dirty_;  // guarded by mu_
  bool all_dirty_ = false;       // guarded by mu_
  bool node_changed_ = false;    // guarded by mu_

  // Owned by the sync thread.
  std::map<std::string, PodRuntime> pods_;
  std::set<std::string> unscheduled_;
  std::set<std::string> todo_;                // runtimes to step (simulate mode steps only these)
  std::map<std::string, Resources> assumed_;  // bound by us, runtime not seen yet
  bool schedule_due_ = false;
  Clock::time_point next_schedule_retry_{};
  std::unique_ptr<PodNetwork> network_;  // set by run()
  std::string hosts_text_;
  bool hosts_dirty_ = true;
  bool shutting_down_ = false;  // graceful node shutdown: the Node says NotReady
  // The addresses of other nodes' pods, by key: their names resolve here too, as cluster DNS
  // resolves every pod of the cluster.
  std::map<std::string, HostsEntry> remote_hosts_;
  Clock::time_point next_heartbeat_{};
  bool lease_disabled_ = false;
};

// ---------------------------------------------------------------------------------------------
// Start-up and the node.

core::Status Kubelet::Impl::prepareRoot() {
  std::error_code ec;
  options_.root_dir = fs::absolute(options_.root_dir, ec);
  options_.claims_dir = options_.claims_dir.empty() ? options_.root_dir / "volumes"
                                                    : fs::absolute(options_.claims_dir, ec);
  for (const fs::path& dir : {options_.root_dir / "pods", options_.claims_dir}) {
    fs::create_directories(dir, ec);
    if (ec) return core::internalError("create " + dir.string() + ": " + ec.message());
  }
  return writeFileAtomically(options_.root_dir / "hosts", renderHosts({}));
}

// Processes a previous kubelet started and could not stop (it was killed): their containers'
// sessions are recorded in <container>.pid files.
core::Status Kubelet::Impl::choosePodNetwork() {
  if (options_.pod_network != PodNetworkMode::kLoopback && !options_.simulate) {
    CniOptions cni;
    cni.subnet = options_.pod_cidr;
    cni.state_dir = options_.root_dir / "network";
    core::Result<std::unique_ptr<PodNetwork>> made = makeCniNetwork(std::move(cni));
    if (made.ok()) {
      network_ = std::move(made).value();
    } else if (options_.pod_network == PodNetworkMode::kCni) {
      return made.status().withContext("pod network (--pod-network=cni)");
    } else {
      RM_LOG(WARN, LOCAL) << "pod network: cni is not available here (" << made.status().message()
                          << "); loopback addresses instead";
    }
  }
  if (!network_) network_ = makeLoopbackNetwork();
  RM_LOG(INFO, LOCAL) << "pod network: " << network_->describe();
  return core::Status::Ok();
}

void Kubelet::Impl::killLeftovers() {
  if (inImages()) {
    // Containers a killed kubelet of this root left running: conmon keeps them out of any
    // session the .pid files below name.
    const std::string out = (options_.root_dir / "podman.out").string();
    auto left =
        runPodman(options_.podman, options_.containers_conf,
                  {"ps", "-aq", "--filter",
                   std::string("label=") + kKubeletRootLabel + "=" + options_.root_dir.string()},
                  out);
    if (left.ok() && !left->empty()) {
      std::vector<std::string> args = {"rm", "-f", "--time", "0"};
      std::istringstream ids(*left);
      for (std::string id; ids >> id;) args.push_back(id);
      auto removed = runPodman(options_.podman, options_.containers_conf, args, out);
      RM_LOG(WARN, LOCAL) << "removed " << args.size() - 4
                          << " container(s) left over from a previous kubelet"
                          << (removed.ok() ? "" : ": " + removed.status().message());
    } else if (!left.ok()) {
      RM_LOG(WARN, LOCAL) << "listing leftover containers: " << left.status().message();
    }
  }
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(options_.root_dir / "pods", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".pid" || it.depth() != 2) continue;
    std::ifstream in(it->path());
    long pid = 0;
    if (in >> pid && pid > 1) {
      if (const int killed = killSession(static_cast<pid_t>(pid)); killed > 0) {
        RM_LOG(WARN, LOCAL) << "killed " << killed << " process(es) of session " << pid
                            << " left over from a previous kubelet (" << it->path().string() << ")";
      }
    }
    std::error_code rm;
    fs::remove(it->path(), rm);
  }
}

kube::Node Kubelet::Impl::desiredNode() const {
  kube::Node node;
  node.metadata.name = options_.node_name;
  node.metadata.labels = {{"kubernetes.io/hostname", options_.node_name},
                          {"kubernetes.io/os", "linux"},
                          {"kubernetes.io/arch", "amd64"},
                          {"node.kubernetes.io/instance-type", "ringmaster-local"}};
  node.metadata.annotations[kRootAnnotation] = options_.root_dir.string();
  if (metrics_exposer_)
    node.metadata.annotations[kMetricsPortAnnotation] = std::to_string(metrics_exposer_->port());
  auto& st = node.status;
  st.capacity = {{"cpu", kube::Quantity::fromMilli(options_.cpu_milli)},
                 {"memory", kube::Quantity(options_.memory_bytes)},
                 {"pods", kube::Quantity(options_.max_pods)},
                 {"ephemeral-storage", kube::Quantity(int64_t{100} << 30)},
                 {kGpuResource, kube::Quantity(options_.gpus)}};
  st.allocatable = st.capacity;
  const kube::Time now = wallNow();
  auto cond = [&](const char* type, const char* status, const char* reason, const char* message) {
    kube::Condition c;
    c.type = type;
    c.status = status;
    c.reason = reason;
    c.message = message;
    c.last_heartbeat_time = now;
    c.last_transition_time = now;
    return c;
  };
  st.conditions = {
      cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
           "kubelet has sufficient memory available"),
      cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      cond("PIDPressure", "False", "KubeletHasSufficientPID",
           "kubelet has sufficient PID available"),
      shutting_down_ ? cond("Ready", "False", "KubeletNotReady", "node is shutting down")
                     : cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")};
  if (log_server_) {
    // A kube-apiserver dials the first address of its preferred type (Hostname first): the node
    // name resolves nowhere, so only the IP is given, with the port of the log endpoint.
    st.addresses = {{"InternalIP", kHostIp, {}}};
    st.extra["daemonEndpoints"] = {{"kubeletEndpoint", {{"Port", log_server_->port()}}}};
  } else {
    st.addresses = {{"InternalIP", kHostIp, {}}, {"Hostname", options_.node_name, {}}};
  }
  st.extra["nodeInfo"] = {
      {"architecture", "amd64"},
      {"operatingSystem", "linux"},
      {"osImage", "ringmaster local"},
      {"kernelVersion", ""},
      {"kubeletVersion", "v1.32.0-ringmaster"},
      {"kubeProxyVersion", ""},
      {"containerRuntimeVersion", options_.simulate ? "simulated://0.1" : "local-process://0.1"},
      {"machineID", ""},
      {"systemUUID", ""},
      {"bootID", ""}};
  return node;
}

core::Status Kubelet::Impl::registerNode() {
  kube::ResourceClient<kube::Node> nodes(client_, kNodes);
  kube::Node want = desiredNode();
  kube::ApiResult<kube::Node> created = nodes.create(want);
  if (!created.ok() && !created.error().isAlreadyExists()) {
    return created.status().withContext("register node " + options_.node_name);
  }
  if (!created.ok()) {  // re-registration: labels, annotation and status follow our flags
    nlohmann::json meta = {
        {"metadata",
         {{"labels", want.metadata.labels}, {"annotations", want.metadata.annotations}}}};
    auto patched = nodes.patch(options_.node_name, kube::PatchType::kMerge, meta);
    if (!patched.ok()) return patched.status().withContext("update node " + options_.node_name);
  }
  auto status = nodes.patch(options_.node_name, kube::PatchType::kMerge,
                            {{"status", kube::encode(want.status)}}, "status");
  if (!status.ok()) return status.status().withContext("node status " + options_.node_name);
  RM_LOG(INFO, LOCAL) << "node " << options_.node_name << " registered: cpu " << options_.cpu_milli
                      << "m, memory " << options_.memory_bytes << " bytes, " << options_.gpus
                      << " nvidia.com/gpu, " << options_.max_pods << " pods"
                      << (options_.simulate ? " (simulated)" : "");
  next_heartbeat_ = Clock::now() + options_.heartbeat;
  return core::Status::Ok();
}

void Kubelet::Impl::heartbeat() {
  kube::ResourceClient<kube::Node> nodes(client_, kNodes);
  kube::Node want = desiredNode();
  // Keep the first transition time: merge patch replaces the list, so send it with the old times.
  if (auto current = nodes.get(options_.node_name); current.ok()) {
    for (auto& c : want.status.conditions) {
      for (const auto& old : current->status.conditions) {
        if (old.type == c.type && old.status == c.status && old.last_transition_time) {
          c.last_transition_time = old.last_transition_time;
        }
      }
    }
  }
  auto patched = nodes.patch(
      options_.node_name, kube::PatchType::kMerge,
      {{"status", {{"conditions", kube::encode(want.status).at("conditions")}}}}, "status");
  if (!patched.ok()) {
    if (patched.error().isNotFound()) {
      RM_LOG(WARN, LOCAL) << "node " << options_.node_name << " disappeared; registering again";
      if (auto s = registerNode(); !s.ok()) RM_LOG(WARN, LOCAL) << s.toString();
    } else {
      RM_LOG(WARN, LOCAL) << "node heartbeat: " << patched.status().toString();
    }
  }
  if (lease_disabled_) return;
  kube::ResourceClient<kube::Lease> leases(client_, kLeases, "kube-node-lease");
  kube::Lease lease;
  lease.metadata.name = options_.node_name;
  lease.metadata.namespace_name = "kube-node-lease";
  lease.spec.holder_identity = options_.node_name;
  lease.spec.lease_duration_seconds = 40;
  lease.spec.renew_time = kube::MicroTime(std::chrono::system_clock::now());
  auto renewed = leases.patch(options_.node_name, kube::PatchType::kMerge,
                              {{"spec", kube::encode(lease.spec)}});
  if (renewed.ok()) return;
  if (renewed.error().isNotFound()) {
    auto created = leases.create(lease);
    if (created.ok() || created.error().isAlreadyExists()) return;
    if (created.error().isNotFound()) {
      RM_LOG(INFO, LOCAL) << "namespace kube-node-lease does not exist; node Lease disabled";
      lease_disabled_ = true;
      return;
    }
    renewed = created.error();
  }
  RM_LOG(WARN, LOCAL) << "node lease: " << renewed.status().toString();
}

// ---------------------------------------------------------------------------------------------
// The sync loop.

void Kubelet::Impl::noteNode(const kube::Node& node) {
  const bool changed = !watched_node_ || placementInputsChanged(*watched_node_, node);
  watched_node_ = node;
  if (!changed) return;
  std::lock_guard lock(mu_);
  node_changed_ = true;
  cv_.notify_all();
}

void Kubelet::Impl::markDirty(const std::string& key) {
  std::lock_guard lock(mu_);
  dirty_.insert(key);
  cv_.notify_all();
}

void Kubelet::Impl::event(const kube::Pod& pod, std::string_view type, const std::string& reason,
                          const std::string& message) {
  core::Status s = kubelet_events_.record(pod, type, reason, message);
  if (!s.ok()) RM_LOG(DEBUG, LOCAL) << "event " << reason << ": " << s.toString();
}

core::Status Kubelet::Impl::run(const core::StopSource& stop) {
  RM_RETURN_IF_ERROR(prepareRoot());
  // The previous kubelet's processes go before its pod network does.
  if (!options_.simulate) killLeftovers();
  RM_RETURN_IF_ERROR(choosePodNetwork());
  if (!options_.simulate) {
    use_mounts_ = mountNamespacesAvailable();
    if (!use_mounts_) {
      RM_LOG(WARN, LOCAL)
          << "mount namespaces are not permitted here: pods with volumeMounts "
             "will not start (condition message says so); see local/kubelet/README.md";
    }
    if (!use_mounts_ && options_.nss_wrapper_library.empty()) {
      RM_LOG(WARN, LOCAL) << "libnss_wrapper.so not found: pods cannot resolve each other by name";
    }
    BaseEnvOptions base;
    base.self_dir = options_.self_dir;
    const char* home = getenv("HOME");
    base.home = home ? home : "/root";
    for (const auto& name : passthroughNames()) {
      if (const char* v = getenv(name.c_str())) base.passthrough.emplace_back(name, v);
    }
    // With mount namespaces every pod has its own /etc/hosts; the preload is the fallback.
    if (!use_mounts_) base.nss_wrapper_library = options_.nss_wrapper_library;
    base.hosts_file = (options_.root_dir / "hosts").string();
    base_env_ = baseEnv(base);
  }
  kube::Reflector<kube::Pod>::Options watch_options;
  watch_options.poll = milliseconds(200);
  watch_options.max_backoff = milliseconds(5'000);
  kube::Reflector<kube::Pod>::Handler notify;
  notify.relisted = [this](std::vector<kube::Pod>, std::vector<kube::RawObject>) {
    std::lock_guard lock(mu_);
    all_dirty_ = true;
    cv_.notify_all();
  };
  notify.event = [this](const kube::WatchEvent<kube::Pod>& e) {
    markDirty(kube::objectKey(e.object));
  };
  reflector_ = std::make_unique<kube::Reflector<kube::Pod>>(
      kube::ResourceClient<kube::Pod>(client_, kPods), watch_options, std::move(notify));
  store_ = reflector_->store();
  undecodable_ = reflector_->undecodable();
  // Pending pods are retried every 10 s; a taint removed or a label added places them at once,
  // as kube-scheduler requeues unschedulable pods on Node updates.
  kube::Reflector<kube::Node>::Options node_watch_options;
  node_watch_options.max_backoff = watch_options.max_backoff;
  node_watch_options.field_selector = "metadata.name=" + options_.node_name;
  kube::Reflector<kube::Node>::Handler node_notify;
  node_notify.relisted = [this](std::vector<kube::Node> nodes, std::vector<kube::RawObject>) {
    if (!nodes.empty()) noteNode(nodes.front());
  };
  node_notify.event = [this](const kube::WatchEvent<kube::Node>& e) {
    if (e.type != kube::WatchEventType::kDeleted) noteNode(e.object);
  };
  node_reflector_ = std::make_unique<kube::Reflector<kube::Node>>(
      kube::ResourceClient<kube::Node>(client_, kNodes), node_watch_options,
      std::move(node_notify));
  if (options_.log_port >= 0) {
    auto pods = store_;
    RM_ASSIGN_OR_RETURN(log_server_,
                        LogServer::start(options_.log_port, options_.root_dir,
                                         [pods](const std::string& ns, const std::string& name) {
                                           return pods->get(ns, name);
                                         }));
  }
  if (options_.metrics_port >= 0 && !options_.simulate) {
    usage_metrics_ = std::make_shared<UsageMetrics>();
    RM_ASSIGN_OR_RETURN(metrics_exposer_,
                        metrics::Exposer::start("127.0.0.1", options_.metrics_port, usage_metrics_,
                                                "/metrics/cadvisor"));
    RM_LOG(INFO, LOCAL) << "kubelet metrics port " << metrics_exposer_->port()
                        << ": containers' CPU and memory at /metrics/cadvisor";
  }
  // An API server that is down (restarting, or killed a moment after `local up`) is waited for,
  // as a real kubelet does: the kubelet is the one process that must outlive it.
  for (milliseconds wait{200};; wait = std::min(wait * 2, milliseconds(5'000))) {
    core::Status registered = registerNode();
    if (registered.ok()) break;
    if (registered.code() != core::Code::kUnavailable) return registered;
    RM_LOG(WARN, LOCAL) << registered.message() << "; retrying in " << wait.count() << " ms";
    if (stop.waitFor(wait)) return core::cancelled("stopped before the node was registered");
  }

  std::jthread watch_thread([this](std::stop_token st) { reflector_->run(st); });
  std::jthread node_watch_thread([this](std::stop_token st) { node_reflector_->run(st); });
  // The loop below sleeps on cv_ for up to a second; a stop wakes it at once.
  core::StopCallback wake_on_stop(stop, [this] {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  });

  while (!stop.stopRequested()) {
    std::set<std::string> keys;
    bool all = false;
    {
      std::lock_guard lock(mu_);
      keys.swap(dirty_);
      std::swap(all, all_dirty_);
      schedule_due_ = schedule_due_ || node_changed_;
      node_changed_ = false;
    }
    if (all) {
      for (const auto& k : store_->keys()) keys.insert(k);
      for (const auto& [k, rt] : pods_) keys.insert(k);
      schedule_due_ = true;
    }
    for (const auto& key : keys) syncKey(key);
    if (!unscheduled_.empty() && (schedule_due_ || Clock::now() >= next_schedule_retry_)) {
      schedule();
    }
    // Simulated pods settle after one status write: only those touched since are stepped.
    std::vector<std::string> step_keys;
    if (options_.simulate) {
      step_keys.assign(todo_.begin(), todo_.end());
    } else {
      for (const auto& [key, rt] : pods_) step_keys.push_back(key);
    }
    bool busy = false;
    for (const auto& key : step_keys) {
      auto it = pods_.find(key);
      if (it == pods_.end()) {
        todo_.erase(key);
        continue;
      }
      PodRuntime& rt = it->second;
      if (options_.simulate) {
        stepSimulated(rt);
      } else {
        stepPod(rt);
      }
      if (rt.gone && !hasLiveProcess(rt) && (rt.terminating || options_.simulate)) {
        release(rt);
        pods_.erase(it);
        todo_.erase(key);
        schedule_due_ = true;
        if (store_->get(key)) markDirty(key);  // a new pod of the same name waits for this one
        continue;
      }
      if (options_.simulate && (rt.terminal || (rt.written && !rt.terminating))) todo_.erase(key);
      busy = busy || hasLiveProcess(rt) || (!rt.terminal && !options_.simulate);
    }
    if (hosts_dirty_) writeHosts();
    if (usage_metrics_) publishRunningContainers();
    if (Clock::now() >= next_heartbeat_) {
      heartbeat();
      next_heartbeat_ = Clock::now() + options_.heartbeat;
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, busy ? milliseconds(100) : milliseconds(1'000), [&] {
      return !dirty_.empty() || all_dirty_ || node_changed_ || stop.stopRequested();
    });
  }
  RM_LOG(INFO, LOCAL) << "kubelet stopping (" << stop.reason() << "): stopping " << pods_.size()
                      << " pods' processes";
  watch_thread.request_stop();
  node_watch_thread.request_stop();
  watch_thread.join();
  node_watch_thread.join();
  if (log_server_) log_server_->stop();
  stopAll();
  return core::Status::Ok();
}

void Kubelet::Impl::syncKey(const std::string& key) {
  std::shared_ptr<const kube::Pod> pod = store_->get(key);
  // Still on the server but unreadable here (the watcher logged why): what runs is left alone.
  if (!pod && undecodable_->get(key)) return;
  if (pods_.count(key)) todo_.insert(key);
  auto rt_it = pods_.find(key);
  if (!pod || (rt_it != pods_.end() && rt_it->second.pod &&
               rt_it->second.pod->metadata.uid != pod->metadata.uid)) {
    // Gone (or replaced by a new pod of the same name): stop what runs for the old one.
    unscheduled_.erase(key);
    assumed_.erase(key);
    noteRemotePod(key, nullptr);
    if (rt_it != pods_.end()) {
      rt_it->second.gone = true;
      if (!rt_it->second.terminating) beginTermination(rt_it->second, "the pod was deleted");
    }
    if (!pod) return;
    if (rt_it != pods_.end()) return;  // the new pod waits until the old one's processes ended
  }
  const std::string& node = pod->spec.node_name;
  if (node.empty()) {
    const std::string& sched = pod->spec.scheduler_name;
    if ((sched.empty() || sched == kScheduler) && !pod->metadata.deletion_timestamp &&
        !isTerminalPhase(pod->status.phase)) {
      // A change may make it schedulable now (a gate removed, a toleration added).
      unscheduled_.insert(key);
      schedule_due_ = true;
    }
    return;
  }
  unscheduled_.erase(key);
  assumed_.erase(key);
  if (node != options_.node_name) return noteRemotePod(key, pod.get());
  if (rt_it == pods_.end()) {
    PodRuntime rt;
    rt.key = key;
    rt.pod = pod;
    if (core::Status paths = checkPodPaths(*pod, options_.root_dir, options_.claims_dir);
        paths.ok()) {
      rt.dir = podDir(options_.root_dir, pod->metadata);
    } else {
      rt.refused = paths.message();
      RM_LOG(WARN, LOCAL) << "pod " << key << " refused: " << rt.refused;
    }
    rt.requests = podRequests(pod->spec);
    auto add = [&](const kube::Container& spec, bool init) {
      ContainerRuntime c;
      c.spec = spec;
      c.init = init;
      c.backoff = RestartBackoff(options_.backoff);
      c.state.waiting = kube::ContainerStateWaiting{};
      c.state.waiting->reason = init ? "PodInitializing" : "ContainerCreating";
      rt.containers.push_back(std::move(c));
    };
    for (const auto& c : pod->spec.init_containers) add(c, true);
    for (const auto& c : pod->spec.containers) {
      add(c, false);
      if (!pod->spec.init_containers.empty()) {
        rt.containers.back().state.waiting->reason = "PodInitializing";
      }
    }
    restoreFromStatus(rt);
    for (const StartDelay& d : options_.start_delays) {
      if (fnmatch(d.pod_name.c_str(), pod->metadata.name.c_str(), 0) != 0) continue;
      rt.start_after = Clock::now() + d.delay;
      RM_LOG(INFO, LOCAL) << "pod " << key << ": containers start in " << d.delay.count() / 1000.0
                          << " s (--start-delay " << d.pod_name << ")";
      break;
    }
    RM_LOG(INFO, LOCAL) << "pod " << key << " (uid " << pod->metadata.uid << ") assigned to this "
                        << "node" << (rt.terminal ? ", already finished" : "");
    rt_it = pods_.emplace(key, std::move(rt)).first;
    todo_.insert(key);
    hosts_dirty_ = true;
    return;
  }
  rt_it->second.pod = pod;
}

// A pod this node ran before a kubelet restart: keep its restart counts, IP and start time; a
// container that was running has lost its process (the previous kubelet killed it on exit, or
// killLeftovers() did): it counts as exited with 137 and restarts per the restart policy.
void Kubelet::Impl::restoreFromStatus(PodRuntime& rt) {
  const kube::PodStatus& st = rt.pod->status;
  if (st.container_statuses.empty() && st.init_container_statuses.empty()) return;
  rt.start_time = st.start_time;
  rt.terminal = isTerminalPhase(st.phase);
  if (rt.terminal) {
    rt.ip = st.pod_ip;
  } else if (!st.pod_ip.empty()) {
    if (std::optional<PodAddress> kept = network_->reclaim(rt.pod->metadata.uid, st.pod_ip)) {
      rt.ip = kept->ip;
      rt.netns = kept->netns;
    }
  }
  const std::string& policy = rt.pod->spec.restart_policy;
  for (auto& c : rt.containers) {
    const auto& list = c.init ? st.init_container_statuses : st.container_statuses;
    auto s = std::find_if(list.begin(), list.end(),
                          [&](const kube::ContainerStatus& x) { return x.name == c.spec.name; });
    if (s == list.end() || !s->state) continue;
    c.restart_count = s->restart_count.value_or(0);
    if (s->last_state && s->last_state->terminated) c.last_terminated = s->last_state->terminated;
    if (s->container_id) c.container_id = *s->container_id;
    if (rt.terminal) {
      c.state = *s->state;
      c.done = true;
      continue;
    }
    std::optional<kube::ContainerStateTerminated> ended = s->state->terminated;
    if (s->state->running) {
      ended.emplace();
      ended->exit_code = 128 + SIGKILL;
      ended->signal = SIGKILL;
      ended->reason = "Error";
      ended->message = "the process was lost when the kubelet restarted";
      ended->started_at = s->state->running->started_at;
      ended->finished_at = wallNow();
    }
    if (!ended) continue;
    const bool restart = c.init ? ended->exit_code != 0 && policy != "Never"
                                : shouldRestart(policy, ended->exit_code);
    c.state = {};
    if (restart) {
      c.last_terminated = ended;
      if (s->state->running) ++c.restart_count;
      c.state.waiting = kube::ContainerStateWaiting{};
      c.state.waiting->reason = "ContainerCreating";
    } else {
      c.state.terminated = ended;
      c.done = true;
    }
  }
}

// PodScheduled=False with `reason`, and a FailedScheduling event when `event`, once per
// distinct message.
void Kubelet::Impl::reportPodScheduledFalse(const kube::Pod& pod, const std::string& reason,
                                            const std::string& message, bool event) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "PodScheduled" && c.status == "False" && c.message == message) return;
  }
  const std::string key = kube::objectKey(pod);
  kube::Condition cond;
  cond.type = "PodScheduled";
  cond.status = "False";
  cond.reason = reason;
  cond.message = message;
  cond.last_probe_time = kube::Time();
  cond.last_transition_time = wallNow();
  kube::ResourceClient<kube::Pod> pods(client_, kPods, pod.metadata.namespace_name);
  auto patched = pods.patch(
      pod.metadata.name, kube::PatchType::kMerge,
      {{"status", {{"conditions", nlohmann::json::array({kube::encode(cond)})}}}}, "status");
  if (!patched.ok()) RM_LOG(WARN, LOCAL) << "pod " << key << ": " << patched.status().toString();
  RM_LOG(INFO, LOCAL) << "pod " << key << " not scheduled (" << reason << "): " << message;
  if (!event) return;
  core::Status s = scheduler_events_.record(pod, kube::kEventWarning, "FailedScheduling", message);
  if (!s.ok()) RM_LOG(DEBUG, LOCAL) << "event FailedScheduling: " << s.toString();
}

void Kubelet::Impl::schedule() {
  schedule_due_ = false;
  next_schedule_retry_ = Clock::now() + seconds(10);
  Resources used;
  for (const auto& [key, rt] : pods_) {
    if (!rt.terminal && !rt.gone) used += rt.requests;
  }
  for (const auto& [key, r] : assumed_) used += r;
  // Oldest first, as kube-scheduler's queue orders pods of equal priority.
  std::vector<std::shared_ptr<const kube::Pod>> queue;
  for (auto it = unscheduled_.begin(); it != unscheduled_.end();) {
    auto pod = store_->get(*it);
    if (!pod || !pod->spec.node_name.empty() || pod->metadata.deletion_timestamp) {
      it = unscheduled_.erase(it);
      continue;
    }
    queue.push_back(pod);
    ++it;
  }
  std::stable_sort(queue.begin(), queue.end(), [](const auto& a, const auto& b) {
    return a->metadata.creation_timestamp.value_or(kube::Time()) <
           b->metadata.creation_timestamp.value_or(kube::Time());
  });
  if (queue.empty()) return;
  // The Node as the API server has it now: an admin's `kubectl taint` or `kubectl label` counts.
  kube::Node node = desiredNode();
  if (auto live = kube::ResourceClient<kube::Node>(client_, kNodes).get(options_.node_name);
      live.ok()) {
    node = std::move(*live);
  } else {
    RM_LOG(DEBUG, LOCAL) << "node " << options_.node_name << ": " << live.status().toString()
                         << "; scheduling against the node this kubelet registers";
  }
  const Resources allocatable = allocatableOf(node.status);
  for (const auto& pod : queue) {
    const std::string key = kube::objectKey(*pod);
    if (!pod->spec.scheduling_gates.empty()) {
      reportPodScheduledFalse(*pod, "SchedulingGated", kSchedulingGatedMessage, false);
      continue;
    }
    if (auto problem = placementProblem(pod->spec, node)) {
      reportPodScheduledFalse(*pod, "Unschedulable", unschedulableNodeMessage(*problem), true);
      continue;
    }
    const Resources request = podRequests(pod->spec);
    std::vector<std::string> missing = insufficient(used, request, allocatable);
    if (!missing.empty()) {
      reportPodScheduledFalse(*pod, "Unschedulable", unschedulableMessage(missing), true);
      continue;
    }
    kube::Binding binding;
    binding.metadata.name = pod->metadata.name;
    binding.metadata.namespace_name = pod->metadata.namespace_name;
    binding.target.api_version = "v1";
    binding.target.kind = "Node";
    binding.target.name = options_.node_name;
    kube::setTypeMeta(binding);
    kube::ApiRequest call;
    call.verb = kube::Verb::kPost;
    call.path =
        kube::objectPath(kPods, pod->metadata.namespace_name, pod->metadata.name, "binding");
    call.body = kube::encodeText(binding);
    call.timeout = seconds(30);
    kube::ApiResult<kube::ApiResponse> bound = kube::callApi(client_, call);
    if (!bound.ok()) {
      if (bound.error().isNotFound() && store_->get(key)) {
        RM_LOG(WARN, LOCAL) << "pod " << key << ": binding failed (" << bound.status().toString()
                            << "); retrying (does the API server serve pods/binding?)";
        next_schedule_retry_ = Clock::now() + seconds(1);
      } else {
        RM_LOG(WARN, LOCAL) << "pod " << key << ": binding failed: " << bound.status().toString();
        unscheduled_.erase(key);  // the watch tells what happened (bound elsewhere, deleted)
      }
      continue;
    }
    unscheduled_.erase(key);
    assumed_[key] = request;
    used += request;
    RM_LOG(INFO, LOCAL) << "pod " << key << " scheduled onto " << options_.node_name;
    core::Status s = scheduler_events_.record(
        *pod, kube::kEventNormal, "Scheduled",
        "Successfully assigned " + podRef(*pod) + " to " + options_.node_name);
    if (!s.ok()) RM_LOG(DEBUG, LOCAL) << "event Scheduled: " << s.toString();
  }
}

bool Kubelet::Impl::hasLiveProcess(const PodRuntime& rt) const {
  for (const auto& c : rt.containers) {
    if (c.pid > 0) return true;
  }
  return false;
}

void Kubelet::Impl::publishRunningContainers() {
  std::vector<RunningContainer> running;
  for (const auto& [key, rt] : pods_) {
    for (const ContainerRuntime& c : rt.containers) {
      if (c.pid <= 0) continue;
      running.push_back(
          {rt.pod->metadata.namespace_name, rt.pod->metadata.name, c.spec.name, c.spec.image, c.pid,
           inImages() ? containerFiles(rt.dir, c.spec.name).conmon_pid.string() : std::string()});
    }
  }
  if (running == published_) return;
  published_ = running;
  usage_metrics_->setContainers(std::move(running));
}

void Kubelet::Impl::release(PodRuntime& rt) {
  if (!rt.ip.empty() && !rt.terminal) network_->detach(rt.pod->metadata.uid, rt.ip);
  if (!rt.ip.empty()) hosts_dirty_ = true;
  std::error_code ec;
  if (!rt.dir.empty() && isInside(options_.root_dir / "pods", rt.dir)) {
    fs::remove_all(rt.dir / "volumes", ec);  // logs and work/ stay for inspection
  }
  RM_LOG(INFO, LOCAL) << "pod " << rt.key << " removed from this node";
}

void Kubelet::Impl::beginTermination(PodRuntime& rt, const std::string& why) {
  rt.terminating = true;
  int64_t grace = 30;
  if (rt.pod->metadata.deletion_grace_period_seconds) {
    grace = *rt.pod->metadata.deletion_grace_period_seconds;
  } else if (rt.pod->spec.termination_grace_period_seconds) {
    grace = *rt.pod->spec.termination_grace_period_seconds;
  }
  rt.kill_deadline = Clock::now() + seconds(std::max<int64_t>(grace, 0));
  for (auto& c : rt.containers) {
    c.prober.reset();
    if (c.pid <= 0) continue;
    RM_LOG(INFO, LOCAL) << "pod " << rt.key << " container " << c.spec.name << ": "
                        << (grace > 0 ? "SIGTERM to process group " : "SIGKILL to session ")
                        << c.pid << " (" << why << "; grace " << grace << " s)";
    if (grace > 0) {
      signalGroup(c.pid, SIGTERM);
    } else {
      killSession(c.pid);
      removeImageContainer(rt, c);
    }
    if (!rt.gone) {
      event(*rt.pod, kube::kEventNormal, "Killing", "Stopping container " + c.spec.name);
    }
  }
  rt.sigkilled = grace <= 0;
}

bool Kubelet::Impl::finishTermination(PodRuntime& rt) {
  for (auto& c : rt.containers) {
    if (c.pid <= 0) continue;
    if (auto exit = reap(c.pid)) onExit(rt, c, *exit);
  }
  if (hasLiveProcess(rt)) {
    if (!rt.sigkilled && Clock::now() >= rt.kill_deadline) {
      for (auto& c : rt.containers) {
        if (c.pid <= 0) continue;
        RM_LOG(INFO, LOCAL) << "pod " << rt.key << " container " << c.spec.name
                            << ": grace period over, SIGKILL to session " << c.pid;
        killSession(c.pid);
        removeImageContainer(rt, c);
      }
      rt.sigkilled = true;
    }
    return false;
  }
  if (rt.gone) return true;
  // The real kubelet's last step: the pod object goes once its containers are gone.
  kube::ResourceClient<kube::Pod> pods(client_, kPods, rt.pod->metadata.namespace_name);
  kube::DeleteOptions options;
  options.grace_period_seconds = 0;
  // This pod, not a new one of the same name that its controller may have created already.
  options.precondition_uid = rt.pod->metadata.uid;
  auto removed = pods.remove(rt.pod->metadata.name, options);
  if (!removed.ok() && removed.error().isConflict()) {
    RM_LOG(INFO, LOCAL) << "pod " << rt.key << ": containers stopped; the name is a new pod's now";
    rt.gone = true;
    return true;
  }
  if (!removed.ok() && !removed.error().isNotFound()) {
    RM_LOG(WARN, LOCAL) << "pod " << rt.key << ": delete: " << removed.status().toString();
    return false;
  }
  RM_LOG(INFO, LOCAL) << "pod " << rt.key << ": containers stopped, pod deleted";
  rt.gone = true;
  return true;
}

core::Result<std::optional<std::map<std::string, std::string>>> Kubelet::Impl::sourceData(
    const std::string& ns, bool secret, const std::string& name) {
  using Data = std::optional<std::map<std::string, std::string>>;
  if (secret) {
    auto got = kube::ResourceClient<kube::Secret>(client_, kSecrets, ns).get(name);
    if (!got.ok()) {
      if (got.error().isNotFound()) return Data();
      return got.status();
    }
    return Data(secretData(*got));
  }
  auto got = kube::ResourceClient<kube::ConfigMap>(client_, kConfigMaps, ns).get(name);
  if (!got.ok()) {
    if (got.error().isNotFound()) return Data();
    return got.status();
  }
  std::map<std::string, std::string> data = got->data;
  for (const auto& [k, v] : got->binary_data) data[k] = v;
  return Data(std::move(data));
}

core::Result<std::string> Kubelet::Impl::serviceAccountToken(
    const kube::Pod& pod, const kube::ServiceAccountTokenProjection& t) {
  const std::string& ns = pod.metadata.namespace_name;
  const std::string sa =
      pod.spec.service_account_name.empty() ? "default" : pod.spec.service_account_name;
  nlohmann::json spec = {{"expirationSeconds", t.expiration_seconds.value_or(3600)},
                         {"boundObjectRef",
                          {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"name", pod.metadata.name},
                           {"uid", pod.metadata.uid}}}};
  spec["audiences"] =
      t.audience.empty() ? nlohmann::json::array() : nlohmann::json::array({t.audience});
  kube::ApiRequest call;
  call.verb = kube::Verb::kPost;
  call.path = "/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token";
  call.body = nlohmann::json{
      {"apiVersion", "authentication.k8s.io/v1"},
      {"kind", "TokenRequest"},
      {"spec",
       spec}}.dump();
  call.timeout = seconds(30);
  kube::ApiResult<kube::ApiResponse> answer = kube::callApi(client_, call);
  if (!answer.ok()) {
    return answer.status().withContext("token of ServiceAccount " + ns + "/" + sa);
  }
  nlohmann::json body = nlohmann::json::parse(answer->body, nullptr, false);
  const nlohmann::json* token = body.is_object() && body.contains("status") &&
                                        body["status"].is_object() &&
                                        body["status"].contains("token")
                                    ? &body["status"]["token"]
                                    : nullptr;
  if (token == nullptr || !token->is_string()) {
    return core::internalError("token of ServiceAccount " + ns + "/" + sa +
                               ": the TokenRequest answer has no status.token");
  }
  RM_LOG(INFO, LOCAL) << "pod " << ns << "/" << pod.metadata.name << ": token of ServiceAccount "
                      << sa << " issued for " << t.expiration_seconds.value_or(3600) << " s";
  return token->get<std::string>();
}

core::Result<std::optional<std::string>> Kubelet::Impl::lookupKey(const std::string& ns,
                                                                  bool secret,
                                                                  const std::string& name,
                                                                  const std::string& key) {
  RM_ASSIGN_OR_RETURN(auto data, sourceData(ns, secret, name));
  if (!data) return std::optional<std::string>();
  auto it = data->find(key);
  if (it == data->end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

// Directories, IP and volumes; false (with rt.prepare_error) when a volume cannot be made yet.
bool Kubelet::Impl::prepare(PodRuntime& rt) {
  if (rt.prepared) return true;
  if (Clock::now() < rt.retry_prepare || Clock::now() < rt.start_after) return false;
  rt.retry_prepare = Clock::now() + seconds(2);
  const kube::Pod& pod = *rt.pod;
  const std::string& ns = pod.metadata.namespace_name;
  std::error_code ec;
  fs::create_directories(rt.dir / "work", ec);
  if (ec) {
    rt.prepare_error = "create " + (rt.dir / "work").string() + ": " + ec.message();
    return false;
  }
  if (rt.ip.empty()) {
    core::Result<PodAddress> address = network_->attach(pod.metadata.uid);
    if (!address.ok()) {
      rt.prepare_error = address.status().message();
      return false;
    }
    rt.ip = address->ip;
    rt.netns = address->netns;
    hosts_dirty_ = true;
  }
  if (use_mounts_ && rt.etc_hosts.empty()) {
    // Before any container starts: its peers' names may be missing yet, never its own.
    rt.etc_hosts = rt.dir / "etc-hosts";
    if (core::Status s = writePodHosts(rt, clusterHosts()); !s.ok()) {
      rt.etc_hosts.clear();
      rt.prepare_error = s.message();
      return false;
    }
    core::Status s =
        writeFileAtomically(rt.dir / "etc-hostname", podHostname(hostsEntryOf(rt)) + "\n");
    if (s.ok()) s = writeFileAtomically(rt.dir / "resolv.conf", podResolvConfText(pod));
    if (!s.ok()) {
      rt.prepare_error = s.message();
      return false;
    }
  }
  if (!rt.start_time) rt.start_time = wallNow();
  bool any_mounts = false;
  for (const auto& c : rt.containers) any_mounts = any_mounts || !c.spec.volume_mounts.empty();
  if (any_mounts && !use_mounts_) {
    rt.prepare_error = "volumeMounts need mount namespaces, which this kubelet may not create";
    return false;
  }
  PodSources sources;
  sources.data = [&](bool secret, const std::string& name) { return sourceData(ns, secret, name); };
  sources.field = [&](const std::string& field_path) {
    return downwardApiValue(pod, field_path, PodFacts{rt.ip, kHostIp, options_.node_name});
  };
  sources.token = [&](const kube::ServiceAccountTokenProjection& t) {
    return serviceAccountToken(pod, t);
  };
  for (const auto& v : pod.spec.volumes) {
    core::Result<VolumeDir> dir = setUpVolume(v, ns, rt.dir, options_.claims_dir, sources);
    if (!dir.ok()) {
      rt.prepare_error = dir.status().message();
      return false;
    }
    if (pod.spec.security_context && pod.spec.security_context->fs_group) {
      core::Status owned = applyFsGroup(v, *dir, *pod.spec.security_context->fs_group);
      if (!owned.ok()) {
        rt.prepare_error = "volume " + v.name + ": " + owned.message();
        return false;
      }
    }
    rt.volume_dirs[v.name] = *dir;
  }
  rt.prepared = true;
  rt.prepare_error.clear();
  return true;
}

void Kubelet::Impl::startContainer(PodRuntime& rt, ContainerRuntime& c) {
  const kube::Pod& pod = *rt.pod;
  auto fail = [&](const std::string& reason, const std::string& message, bool retry) {
    RM_LOG(WARN, LOCAL) << "pod " << rt.key << " container " << c.spec.name << ": " << reason
                        << ": " << message;
    event(pod, kube::kEventWarning, "Failed", "Error: " + message);
    if (retry) {  // configuration not there yet: stay waiting and retry after back-off
      c.state = {};
      c.state.waiting = kube::ContainerStateWaiting{reason, message, {}};
      c.next_start = Clock::now() + c.backoff.next(milliseconds(0));
      return;
    }
    ExitInfo exit{128, std::nullopt};
    c.state = {};
    c.state.terminated = kube::ContainerStateTerminated{};
    c.state.terminated->message = message;
    c.started_mono = Clock::now();
    onExit(rt, c, exit);
    if (c.state.terminated) c.state.terminated->reason = "StartError";
    if (c.last_terminated && c.last_terminated->exit_code == 128) {
      c.last_terminated->reason = "StartError";
      c.last_terminated->message = message;
    }
  };
  PodFacts facts{rt.ip, kHostIp, options_.node_name};
  KeyLookup lookup = [&](bool secret, const std::string& name, const std::string& key) {
    return lookupKey(pod.metadata.namespace_name, secret, name, key);
  };
  // In an image the container has the image's environment, none of the kubelet's.
  EnvList base = inImages() ? EnvList{} : base_env_;
  for (auto& [name, value] :
       apiServerEnv(options_.api_server_url, !rt.netns.empty(), gatewayOf(options_.pod_cidr))) {
    setEnv(base, name, std::move(value));
  }
  core::Result<EnvList> env = containerEnv(pod, c.spec, facts, base, lookup);
  if (!env.ok()) return fail("CreateContainerConfigError", env.status().message(), true);
  core::Result<std::vector<Mount>> mounts = containerMounts(c.spec, rt.volume_dirs);
  if (!mounts.ok()) return fail("CreateContainerConfigError", mounts.status().message(), true);
  LaunchSpec spec;
  spec.argv = containerArgv(c.spec, *env);
  if (spec.argv.empty() && !inImages()) {
    return fail("CreateContainerConfigError",
                "container " + c.spec.name + " has no command, and image " + c.spec.image +
                    " is not one whose entrypoint ringmaster local knows (images are not run "
                    "locally)",
                true);
  }
  const std::string* path = findEnv(*env, "PATH");
  if (!inImages()) spec.executable = resolveExecutable(spec.argv[0], path ? *path : "");
  if (spec.executable.empty() && !inImages()) {
    return fail("StartError", "exec: \"" + spec.argv[0] + "\": executable file not found in $PATH",
                false);
  }
  spec.env = std::move(*env);
  spec.mounts = *mounts;
  spec.scratch_dir = rt.dir.string();
  // The termination message: a fresh file per run, seen at terminationMessagePath.
  const ContainerFiles files = containerFiles(rt.dir, c.spec.name);
  const fs::path& message_file = files.termination_log;
  {
    std::ofstream truncate(message_file, std::ios::trunc);
    if (!truncate) {
      return fail("CreateContainerConfigError",
                  "create termination message file " + message_file.string(), true);
    }
  }
  // World-writable, as a kubelet makes it: a container of any uid writes its message there.
  std::error_code perm_ec;
  fs::permissions(message_file,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                      fs::perms::group_write | fs::perms::others_read | fs::perms::others_write,
                  perm_ec);
  const std::string message_path = terminationMessagePath(c.spec);
  if (!use_mounts_) {
    RM_LOG(DEBUG, LOCAL) << "pod " << rt.key << " container " << c.spec.name
                         << ": no mount namespaces, so no file at " << message_path;
  } else if (!canMountFileAt(message_path)) {
    RM_LOG(WARN, LOCAL) << "pod " << rt.key << " container " << c.spec.name
                        << ": terminationMessagePath " << message_path
                        << " needs a directory the host lacks; the container gets no file there";
  } else {
    spec.mounts.push_back({message_file.string(), message_path, false});
  }
  if (!rt.etc_hosts.empty()) {
    // As a kubelet does: the pod's hostname in a UTS namespace, its /etc/hosts and
    // /etc/hostname, unless the container mounts a file of its own there.
    spec.hostname = podHostname(hostsEntryOf(rt));
    const std::pair<fs::path, std::string> files_of_pod[] = {
        {rt.etc_hosts, "/etc/hosts"},
        {rt.dir / "etc-hostname", "/etc/hostname"},
        {rt.dir / "resolv.conf", "/etc/resolv.conf"}};
    for (const auto& file : files_of_pod) {
      const bool own = std::any_of(spec.mounts.begin(), spec.mounts.end(),
                                   [&](const Mount& m) { return m.target == file.second; });
      if (!own && canMountFileAt(file.second)) {
        spec.mounts.push_back({file.first.string(), file.second, false});
      }
    }
  }
  if (c.spec.working_dir.empty()) {
    std::error_code ec;
    fs::create_directories(files.work_dir, ec);
    spec.working_dir = files.work_dir.string();
  } else {
    spec.working_dir = c.spec.working_dir;
  }
  if (c.restart_count > 0 || c.last_terminated) {
    std::error_code ec;
    fs::rename(files.log, files.previous_log, ec);
  }
  spec.log_path = files.log.string();
  spec.session_file = files.pid.string();
  spec.netns = rt.netns;
  if (inImages()) {
    core::Result<LaunchSpec> in_image = imageLaunchSpec(rt, c, spec, *mounts, message_path);
    if (!in_image.ok()) {
      return fail("CreateContainerConfigError", in_image.status().message(), true);
    }
    spec = std::move(*in_image);
  }
  core::Result<pid_t> pid = launch(spec);
  if (!pid.ok()) {
    std::error_code ec;
    fs::remove(files.pid, ec);  // the child may have recorded itself before it failed
    return fail("StartError", pid.status().message(), false);
  }
  c.pid = *pid;
  c.started_mono = Clock::now();
  c.container_id = inImages() ? "podman://" + containerName(rt.pod->metadata.uid, c.spec.name)
                              : "local://" + std::to_string(c.pid);
  c.state = {};
  c.state.running = kube::ContainerStateRunning{wallNow(), {}};
  RM_LOG(INFO, LOCAL) << "pod " << rt.key << " container " << c.spec.name << " started: pid "
                      << c.pid << ", " << spec.executable << ", ip " << rt.ip;
  event(pod, kube::kEventNormal, "Started", "Started container " + c.spec.name);
  if (c.spec.readiness_probe && !c.init) {
    ProbeTarget target;
    target.pod_ip = rt.ip;
    target.ports = c.spec.ports;
    target.exec_base = spec;
    const std::string key = rt.key, name = c.spec.name;
    auto pod_copy = rt.pod;
    c.prober = std::make_unique<Prober>(
        *c.spec.readiness_probe, std::move(target),
        [this, key, name, pod_copy](bool ready, const std::string& failure) {
          if (!ready && !failure.empty()) {
            event(*pod_copy, kube::kEventWarning, "Unhealthy",
                  "Readiness probe failed: " + failure);
          }
          RM_LOG(DEBUG, LOCAL) << "pod " << key << " container " << name
                               << (ready ? ": ready" : ": not ready: " + failure);
          markDirty(key);
        });
  }
}

core::Result<LaunchSpec> Kubelet::Impl::imageLaunchSpec(PodRuntime& rt, ContainerRuntime& c,
                                                        const LaunchSpec& host,
                                                        const std::vector<Mount>& volume_mounts,
                                                        const std::string& message_path) {
  const kube::Pod& pod = *rt.pod;
  ImageRun run;
  run.podman = options_.podman;
  run.containers_conf = options_.containers_conf;
  run.name = containerName(pod.metadata.uid, c.spec.name);
  run.pod_uid = pod.metadata.uid;
  run.kubelet_root = options_.root_dir.string();
  run.image = c.spec.image;
  run.command = expandEach(c.spec.command, host.env);
  run.args = expandEach(c.spec.args, host.env);
  run.netns = rt.netns;
  if (!rt.netns.empty()) run.hostname = podHostname(hostsEntryOf(rt));
  run.working_dir = c.spec.working_dir;
  // The pod's volumes, and the files a kubelet gives every container: its termination message
  // file, the pod's /etc/hosts and resolv.conf (podman makes any mountpoint inside the image;
  // the host process' checks of where a file can be mounted do not apply).
  run.mounts = volume_mounts;
  run.mounts.push_back(
      {containerFiles(rt.dir, c.spec.name).termination_log.string(), message_path, false});
  if (!rt.etc_hosts.empty()) {
    run.mounts.push_back({rt.etc_hosts.string(), "/etc/hosts", false});
    run.mounts.push_back({(rt.dir / "resolv.conf").string(), "/etc/resolv.conf", false});
  }
  applySecurityContext(pod.spec, c.spec, (options_.root_dir / "seccomp").string(), run);
  std::string image_user;
  if (runsAsNonRoot(pod.spec, c.spec) && !run.run_as_user) {
    RM_ASSIGN_OR_RETURN(image_user,
                        runPodman(options_.podman, options_.containers_conf,
                                  {"image", "inspect", "--format", "{{.Config.User}}", run.image},
                                  (rt.dir / (c.spec.name + ".podman.out")).string()));
    while (!image_user.empty() && image_user.back() == '\n') image_user.pop_back();
  }
  if (std::string why = imageRunError(pod.spec, c.spec, run, image_user); !why.empty()) {
    return core::invalidArgument(why);
  }
  run.env = host.env;
  run.env_file = (rt.dir / (c.spec.name + ".env")).string();
  {
    std::ofstream out(run.env_file, std::ios::trunc);
    out << envFileText(run.env);
    if (!out) return core::internalError("write " + run.env_file);
  }
  fs::permissions(run.env_file, fs::perms::owner_read | fs::perms::owner_write);
  run.log_path = host.log_path;
  run.session_file = host.session_file;
  run.conmon_pidfile = containerFiles(rt.dir, c.spec.name).conmon_pid.string();
  RM_LOG(DEBUG, LOCAL) << "pod " << rt.key << " container " << c.spec.name << ": in image "
                       << run.image << " as " << run.name;
  return podmanLaunchSpec(run);
}

void Kubelet::Impl::removeImageContainer(const PodRuntime& rt, const ContainerRuntime& c) {
  if (!inImages() || !rt.pod) return;
  const std::string name = containerName(rt.pod->metadata.uid, c.spec.name);
  auto removed = runPodman(options_.podman, options_.containers_conf,
                           {"rm", "-f", "--ignore", "--time", "0", name},
                           (options_.root_dir / "podman.out").string());
  if (!removed.ok()) {
    RM_LOG(WARN, LOCAL) << "pod " << rt.key << " container " << c.spec.name << ": "
                        << removed.status().message();
  }
}

void Kubelet::Impl::onExit(PodRuntime& rt, ContainerRuntime& c, const ExitInfo& exit) {
  const bool was_running = c.pid > 0;
  if (was_running) {
    // What the container left running (`sh -c "worker &"`, a rank in its own process group)
    // ends with it, as a container's processes end with its init on a real node.
    killSession(c.pid);
    // `podman run` killed by a signal left its container behind.
    if (exit.signal) removeImageContainer(rt, c);
    std::error_code ec;
    fs::remove(containerFiles(rt.dir, c.spec.name).pid, ec);
  }
  c.pid = -1;
  c.prober.reset();
  kube::ContainerStateTerminated t;
  t.exit_code = exit.exit_code;
  t.signal = exit.signal;
  t.reason = exit.exit_code == 0 ? "Completed" : "Error";
  t.started_at =
      c.state.running ? c.state.running->started_at : std::optional<kube::Time>(wallNow());
  t.finished_at = wallNow();
  if (c.state.terminated && c.state.terminated->message) t.message = c.state.terminated->message;
  if (was_running && !t.message) {
    t.message = readTerminationMessage(containerFiles(rt.dir, c.spec.name).termination_log,
                                       containerFiles(rt.dir, c.spec.name).log,
                                       terminationMessagePolicy(c.spec), exit.exit_code);
  }
  if (!c.container_id.empty()) t.container_id = c.container_id;
  RM_LOG(INFO, LOCAL) << "pod " << rt.key << " container " << c.spec.name << " exited: code "
                      << exit.exit_code
                      << (exit.signal ? " (signal " + std::to_string(*exit.signal) + ")" : "");
  const std::string& policy = rt.pod->spec.restart_policy;
  // Init containers always restart on failure unless the policy is Never.
  const bool restart = !rt.terminating && (c.init ? exit.exit_code != 0 && policy != "Never"
                                                  : shouldRestart(policy, exit.exit_code));
  if (!restart) {
    c.state = {};
    c.state.terminated = t;
    c.done = true;
    if (exit.exit_code != 0 && !rt.terminating) {
      event(*rt.pod, kube::kEventWarning, "Failed",
            "Container " + c.spec.name + " exited with code " + std::to_string(exit.exit_code));
    }
    return;
  }
  const milliseconds ran = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started_mono);
  const milliseconds delay = c.backoff.next(ran);
  c.last_terminated = t;
  ++c.restart_count;
  c.next_start = Clock::now() + delay;
  c.state = {};
  c.state.waiting = kube::ContainerStateWaiting{};
  c.state.waiting->reason = "CrashLoopBackOff";
  c.state.waiting->message = "back-off " +
                             (delay.count() % 1000 == 0 ? std::to_string(delay.count() / 1000) + "s"
                                                        : std::to_string(delay.count()) + "ms") +
                             " restarting failed container=" + c.spec.name +
                             " pod=" + rt.pod->metadata.name + "_" +
                             rt.pod->metadata.namespace_name + "(" + rt.pod->metadata.uid + ")";
  event(*rt.pod, kube::kEventWarning, "BackOff",
        "Back-off restarting failed container " + c.spec.name + " in pod " + rt.pod->metadata.name +
            "_" + rt.pod->metadata.namespace_name + "(" + rt.pod->metadata.uid + ")");
}

void Kubelet::Impl::stepPod(PodRuntime& rt) {
  if (!rt.terminating && (rt.gone || rt.pod->metadata.deletion_timestamp)) {
    beginTermination(rt, rt.gone ? "the pod was deleted" : "the pod is being deleted");
  }
  if (rt.terminating) {
    if (finishTermination(rt)) rt.gone = true;
    return;
  }
  if (rt.terminal) return;
  if (!rt.refused.empty()) {
    for (auto& c : rt.containers) {
      c.state = {};
      c.state.waiting = kube::ContainerStateWaiting{"CreateContainerConfigError", rt.refused, {}};
    }
    return writeStatus(rt);
  }
  for (auto& c : rt.containers) {
    if (c.pid <= 0) continue;
    if (auto exit = reap(c.pid)) onExit(rt, c, *exit);
  }
  if (prepare(rt)) {
    // Init containers one at a time, in order; then every app container.
    bool init_done = true;
    for (auto& c : rt.containers) {
      if (!c.init) continue;
      if (c.state.terminated && c.state.terminated->exit_code == 0) continue;
      init_done = false;
      if (c.pid <= 0 && !c.done && Clock::now() >= c.next_start) startContainer(rt, c);
      break;
    }
    if (init_done) {
      for (auto& c : rt.containers) {
        if (c.init || c.pid > 0 || c.done || Clock::now() < c.next_start) continue;
        if (c.state.waiting && c.state.waiting->reason == "PodInitializing") {
          c.state.waiting->reason = "ContainerCreating";
        }
        startContainer(rt, c);
      }
    }
  } else {
    for (auto& c : rt.containers) {
      if (c.pid > 0 || c.done) continue;
      c.state = {};
      c.state.waiting = kube::ContainerStateWaiting{};
      c.state.waiting->reason = "CreateContainerConfigError";
      c.state.waiting->message = rt.prepare_error;
    }
  }
  writeStatus(rt);
}

void Kubelet::Impl::stepSimulated(PodRuntime& rt) {
  if (rt.gone || rt.pod->metadata.deletion_timestamp) {
    if (!rt.gone) {
      rt.terminating = true;
      kube::ResourceClient<kube::Pod> pods(client_, kPods, rt.pod->metadata.namespace_name);
      kube::DeleteOptions options;
      options.grace_period_seconds = 0;
      auto removed = pods.remove(rt.pod->metadata.name, options);
      if (!removed.ok() && !removed.error().isNotFound()) {
        RM_LOG(WARN, LOCAL) << "pod " << rt.key << ": delete: " << removed.status().toString();
        return;
      }
    }
    rt.gone = true;
    return;
  }
  if (rt.terminal) return;
  if (rt.ip.empty()) {
    core::Result<PodAddress> address = network_->attach(rt.pod->metadata.uid);
    if (address.ok()) rt.ip = address->ip;
    hosts_dirty_ = true;
  }
  if (!rt.start_time) rt.start_time = wallNow();
  for (auto& c : rt.containers) {
    if (c.state.running) continue;
    c.state = {};
    c.state.running = kube::ContainerStateRunning{*rt.start_time, {}};
    c.container_id = "simulated://" + rt.pod->metadata.uid + "/" + c.spec.name;
  }
  writeStatus(rt);
}

PodView Kubelet::Impl::viewOf(const PodRuntime& rt) const {
  PodView v;
  v.restart_policy = rt.pod->spec.restart_policy;
  v.pod_ip = rt.ip;
  v.host_ip = kHostIp;
  v.start_time = rt.start_time;
  v.now = wallNow();
  v.previous = rt.written ? rt.written->conditions : rt.pod->status.conditions;
  if (!rt.refused.empty()) {
    v.ended_reason = "UnsafePath";
    v.ended_message = "the kubelet refuses to run this pod: " + rt.refused;
  } else if (rt.node_shutdown) {
    v.ended_reason = "Terminated";
    v.ended_message = "Pod was terminated in response to imminent node shutdown.";
  }
  for (const auto& c : rt.containers) {
    ContainerView cv;
    cv.name = c.spec.name;
    cv.image = c.spec.image;
    cv.state = c.state;
    cv.last_terminated = c.last_terminated;
    cv.restart_count = c.restart_count;
    cv.ready = options_.simulate ||
               (c.state.running && (!c.spec.readiness_probe || (c.prober && c.prober->ready())));
    cv.container_id = c.container_id;
    (c.init ? v.init_containers : v.containers).push_back(std::move(cv));
  }
  return v;
}

void Kubelet::Impl::writeStatus(PodRuntime& rt) {
  kube::PodStatus status = derivePodStatus(viewOf(rt));
  if (rt.written && *rt.written == status) return;
  const bool terminal = isTerminalPhase(status.phase);
  kube::ResourceClient<kube::Pod> pods(client_, kPods, rt.pod->metadata.namespace_name);
  auto patched = pods.patch(rt.pod->metadata.name, kube::PatchType::kMerge,
                            {{"status", kube::encode(status)}}, "status");
  if (!patched.ok()) {
    if (!patched.error().isNotFound()) {
      RM_LOG(WARN, LOCAL) << "pod " << rt.key << ": status: " << patched.status().toString();
    }
    return;
  }
  if (!rt.written || rt.written->phase != status.phase) {
    RM_LOG(INFO, LOCAL) << "pod " << rt.key << " phase " << status.phase;
  }
  rt.written = std::move(status);
  if (terminal && !rt.terminal) {
    rt.terminal = true;
    if (!rt.ip.empty()) network_->detach(rt.pod->metadata.uid, rt.ip);
    hosts_dirty_ = true;
    schedule_due_ = true;  // its resources are free again
  }
}

void Kubelet::Impl::noteRemotePod(const std::string& key, const kube::Pod* pod) {
  const bool listed = pod != nullptr && !pod->status.pod_ip.empty() &&
                      !pod->metadata.deletion_timestamp && !isTerminalPhase(pod->status.phase);
  auto it = remote_hosts_.find(key);
  if (!listed) {
    if (it != remote_hosts_.end()) {
      remote_hosts_.erase(it);
      hosts_dirty_ = true;
    }
    return;
  }
  const auto& m = pod->metadata;
  HostsEntry entry{pod->status.pod_ip, m.namespace_name, m.name, pod->spec.hostname,
                   pod->spec.subdomain};
  if (it != remote_hosts_.end() && it->second == entry) return;
  remote_hosts_[key] = std::move(entry);
  hosts_dirty_ = true;
}

std::vector<HostsEntry> Kubelet::Impl::clusterHosts() const {
  std::vector<HostsEntry> entries;
  for (const auto& [key, entry] : remote_hosts_) entries.push_back(entry);
  for (const auto& [key, rt] : pods_) {
    if (rt.ip.empty() || rt.terminal || rt.gone) continue;
    entries.push_back(hostsEntryOf(rt));
  }
  return entries;
}

std::string Kubelet::Impl::podResolvConfText(const kube::Pod& pod) const {
  std::ifstream in(options_.resolv_conf);
  std::stringstream host;
  host << in.rdbuf();
  const nlohmann::json& extra = pod.spec.extra;
  const auto field = [&extra](const char* name) {
    return extra.is_object() && extra.contains(name) ? extra[name] : nlohmann::json();
  };
  return renderResolvConf(
      podResolvConf(parseResolvConf(host.str()), field("dnsPolicy"), field("dnsConfig")));
}

core::Status Kubelet::Impl::writePodHosts(PodRuntime& rt, const std::vector<HostsEntry>& cluster) {
  std::string text = renderPodHosts(hostsEntryOf(rt), cluster);
  if (text == rt.etc_hosts_text) return core::Status::Ok();
  RM_RETURN_IF_ERROR(writeFileInPlace(rt.etc_hosts, text));
  rt.etc_hosts_text = std::move(text);
  return core::Status::Ok();
}

void Kubelet::Impl::writeHosts() {
  hosts_dirty_ = false;
  if (options_.simulate) return;
  const std::vector<HostsEntry> cluster = clusterHosts();
  for (auto& [key, rt] : pods_) {
    if (rt.etc_hosts.empty() || rt.terminal || rt.gone) continue;
    if (core::Status s = writePodHosts(rt, cluster); !s.ok()) {
      RM_LOG(WARN, LOCAL) << "pod " << key << " /etc/hosts: " << s.toString();
      hosts_dirty_ = true;
    }
  }
  std::string text = renderHosts(cluster);
  if (text == hosts_text_) return;
  if (auto s = writeFileAtomically(options_.root_dir / "hosts", text); !s.ok()) {
    RM_LOG(WARN, LOCAL) << "hosts file: " << s.toString();
    hosts_dirty_ = true;
    return;
  }
  hosts_text_ = std::move(text);
}

void Kubelet::Impl::stopAll() {
  const bool shutdown = options_.shutdown_grace.count() > 0;
  if (shutdown) {
    RM_LOG(INFO, LOCAL) << "node " << options_.node_name << " shutting down: NotReady, "
                        << pods_.size() << " pods end Failed (Terminated)";
    shutting_down_ = true;
    heartbeat();
  }
  const Clock::duration cap = shutdown ? Clock::duration(options_.shutdown_grace) : seconds(30);
  Clock::time_point deadline = Clock::now();
  for (auto& [key, rt] : pods_) {
    if (!hasLiveProcess(rt)) continue;
    beginTermination(rt, shutdown ? "the node is shutting down" : "the kubelet is stopping");
    deadline = std::max(deadline, std::min(rt.kill_deadline, Clock::now() + cap));
  }
  bool killed = false;
  for (;;) {
    bool live = false;
    for (auto& [key, rt] : pods_) {
      for (auto& c : rt.containers) {
        if (c.pid <= 0) continue;
        if (auto exit = reap(c.pid)) {
          onExit(rt, c, *exit);  // what it left running goes with it
        } else {
          live = true;
        }
      }
    }
    if (!live) break;
    if (!killed && Clock::now() >= deadline) {
      for (auto& [key, rt] : pods_) {
        for (auto& c : rt.containers) {
          if (c.pid <= 0) continue;
          killSession(c.pid);
          removeImageContainer(rt, c);
        }
      }
      killed = true;
    }
    std::this_thread::sleep_for(milliseconds(20));  // polling child exits on the way out
  }
  for (auto& [key, rt] : pods_) {
    if (shutdown && !rt.terminal && !rt.gone) {
      rt.node_shutdown = true;
      writeStatus(rt);
    }
    if (!rt.ip.empty() && !rt.terminal) network_->detach(rt.pod->metadata.uid, rt.ip);
  }
  pods_.clear();
}

Kubelet::Kubelet(kube::ApiClient& client, KubeletOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(options))) {}
Kubelet::~Kubelet() = default;
core::Status Kubelet::run(const core::StopSource& stop) { return impl_->run(stop); }

core::Result<std::vector<StartDelay>> parseStartDelays(const std::string& text) {
  std::vector<StartDelay> out;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) continue;
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      return core::usageError("--start-delay '" + item + "': expected PATTERN=SECONDS");
    }
    StartDelay d;
    d.pod_name = item.substr(0, eq);
    const std::string seconds_text = item.substr(eq + 1);
    char* end = nullptr;
    const double secs = std::strtod(seconds_text.c_str(), &end);
    if (seconds_text.empty() || *end != '\0' || !(secs >= 0)) {
      return core::usageError("--start-delay '" + item + "': '" + seconds_text +
                              "' is not a number of seconds");
    }
    d.delay = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
    out.push_back(std::move(d));
  }
  return out;
}

std::string findNssWrapper() {
  for (const char* p :
       {"/usr/lib/x86_64-linux-gnu/libnss_wrapper.so",
        "/usr/lib/aarch64-linux-gnu/libnss_wrapper.so", "/usr/lib64/libnss_wrapper.so",
        "/usr/lib/libnss_wrapper.so", "/usr/local/lib/libnss_wrapper.so"}) {
    if (access(p, R_OK) == 0) return p;
  }
  return "";
}

}  // namespace ringmaster::local::kubelet
