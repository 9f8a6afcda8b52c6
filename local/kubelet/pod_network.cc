#include "local/kubelet/pod_network.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "local/kubelet/cni.h"
#include "local/kubelet/ip_allocator.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

struct ToolResult {
  int exit_code = 0;
  std::string out, err;
};

// Runs `argv` with exactly `env`, `input` on its stdin; waits for it. The kubelet has threads:
// the child calls only async-signal-safe functions before execve.
core::Result<ToolResult> runTool(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env, const std::string& input) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return core::errnoError("pipe", errno);
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : {in[0], in[1]}) close(fd);
    return core::errnoError("pipe", e);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    return core::errnoError("fork " + argv[0], e);
  }
  if (pid == 0) {
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) _exit(126);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // The input is a small JSON document, well under a pipe's buffer: written before reading.
  for (size_t off = 0; off < input.size();) {
    const ssize_t n = write(in[1], input.data() + off, input.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(in[1]);
  ToolResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  for (int open = 2; open > 0;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 127 && r.out.empty() && r.err.empty()) {
    return core::notFound("cannot run " + argv[0]);
  }
  return r;
}

// iproute2's `ip`, which makes the named network namespaces (/run/netns/NAME) CNI plugins enter.
std::string findIp() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

class LoopbackNetwork : public PodNetwork {
 public:
  std::string describe() const override {
    return "loopback: one address 127.1.x.y per pod in the host's network";
  }
  core::Result<PodAddress> attach(const std::string&) override {
    RM_ASSIGN_OR_RETURN(std::string ip, ips_.allocate());
    return PodAddress{ip, ""};
  }
  std::optional<PodAddress> reclaim(const std::string&, const std::string& ip) override {
    if (!ips_.claim(ip)) return std::nullopt;
    return PodAddress{ip, ""};
  }
  void detach(const std::string&, const std::string& ip) override { ips_.release(ip); }

 private:
  IpAllocator ips_{IpAllocator::hostLockDir()};  // shared with the kubelets beside it
};

class CniNetwork : public PodNetwork {
 public:
  CniNetwork(CniOptions options, std::string ip_tool)
      : options_(std::move(options)), ip_tool_(std::move(ip_tool)) {}

  std::string describe() const override {
    return "cni: a network namespace per pod on bridge " + options_.bridge + ", " + options_.subnet;
  }

  core::Result<PodAddress> attach(const std::string& uid) override {
    const std::string name = netnsName(uid);
    const std::string path = "/run/netns/" + name;
    if (fs::exists(path)) {
      // Made by a kubelet killed while its `ip netns add` ran: that child outlives it, and may
      // finish after the successor undid what the killed kubelet had recorded.
      RM_LOG(WARN, LOCAL) << "pod network: pod " << uid
                          << " has a network namespace already, left by a killed kubelet; "
                             "detaching it first";
      detach(uid, "");
    }
    // Recorded before anything is made: a kubelet killed from here on leaves what its successor
    // undoes.
    std::ofstream(options_.state_dir / uid) << name << "\n";
    if (core::Status made = ipNetns("add", name); !made.ok()) {
      detach(uid, "");
      return made.withContext("pod network of pod " + uid);
    }
    core::Result<std::string> ip = add(uid, path);
    if (!ip.ok()) {
      detach(uid, "");
      return ip.status().withContext("pod network of pod " + uid);
    }
    return PodAddress{*ip, path};
  }

  // The previous kubelet's attachments were undone at start-up.
  std::optional<PodAddress> reclaim(const std::string&, const std::string&) override {
    return std::nullopt;
  }

  void detach(const std::string& uid, const std::string&) override {
    const std::string name = netnsName(uid);
    const std::string path = "/run/netns/" + name;
    // DEL releases the address even when the namespace is already gone (the spec asks plugins
    // to tolerate that).
    if (core::Result<ToolResult> r = plugin("bridge", CniCommand::kDel, uid, path, bridgeConfig());
        !r.ok() || r->exit_code != 0) {
      RM_LOG(WARN, LOCAL) << "pod network: CNI DEL of pod " << uid << ": "
                          << (r.ok() ? r->out + r->err : r.status().toString());
    }
    if (fs::exists(path)) {
      if (core::Status s = ipNetns("delete", name); !s.ok()) {
        RM_LOG(WARN, LOCAL) << "pod network: " << s.toString();
      }
    }
    std::error_code ec;
    fs::remove(options_.state_dir / uid, ec);
  }

  // Undoes what a kubelet with this state dir left attached (its pods' processes are gone).
  void releaseLeftovers() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(options_.state_dir, ec)) {
      const std::string uid = entry.path().filename().string();
      RM_LOG(WARN, LOCAL) << "pod network: detaching pod " << uid
                          << ", left attached by a previous kubelet";
      detach(uid, "");
    }
  }

  // Attaches and detaches a probe namespace: whether this host lets us.
  core::Status selfTest() {
    const std::string uid = "probe-" + std::to_string(getpid());
    RM_ASSIGN_OR_RETURN(PodAddress address, attach(uid));
    detach(uid, address.ip);
    return core::Status::Ok();
  }

 private:
  static std::string netnsName(const std::string& uid) { return "rm-" + uid; }

  nlohmann::json bridgeConfig() const {
    return bridgeNetworkConfig(options_.bridge, options_.subnet, options_.ipam_dir.string());
  }

  core::Status ipNetns(const std::string& verb, const std::string& name) {
    RM_ASSIGN_OR_RETURN(ToolResult r, runTool({ip_tool_, "netns", verb, name}, {}, ""));
    if (r.exit_code != 0) {
      return core::unavailable("ip netns " + verb + " " + name + ": " + r.err + r.out);
    }
    return core::Status::Ok();
  }

  core::Result<ToolResult> plugin(const std::string& type, CniCommand command,
                                  const std::string& uid, const std::string& netns,
                                  const nlohmann::json& config) {
    const std::string ifname = type == "loopback" ? "lo" : "eth0";
    return runTool({(options_.plugin_dir / type).string()},
                   cniEnvironment(command, uid, netns, ifname, options_.plugin_dir.string()),
                   config.dump());
  }

  core::Result<std::string> add(const std::string& uid, const std::string& netns) {
    RM_ASSIGN_OR_RETURN(ToolResult lo,
                        plugin("loopback", CniCommand::kAdd, uid, netns, loopbackNetworkConfig()));
    if (lo.exit_code != 0) {
      return parseCniResult(lo.exit_code, lo.out).status().withContext("CNI loopback ADD");
    }
    RM_ASSIGN_OR_RETURN(ToolResult bridge,
                        plugin("bridge", CniCommand::kAdd, uid, netns, bridgeConfig()));
    core::Result<std::string> ip = parseCniResult(bridge.exit_code, bridge.out);
    if (!ip.ok()) return ip.status().withContext("CNI bridge ADD");
    return ip;
  }

  CniOptions options_;
  std::string ip_tool_;
};

}  // namespace

core::Result<PodNetworkMode> parsePodNetworkMode(const std::string& text) {
  if (text == "auto") return PodNetworkMode::kAuto;
  if (text == "cni") return PodNetworkMode::kCni;
  if (text == "loopback") return PodNetworkMode::kLoopback;
  return core::usageError("--pod-network must be auto, cni or loopback, not '" + text + "'");
}

std::unique_ptr<PodNetwork> makeLoopbackNetwork() { return std::make_unique<LoopbackNetwork>(); }

core::Result<std::unique_ptr<PodNetwork>> makeCniNetwork(CniOptions options) {
  if (geteuid() != 0) return core::unavailable("network namespaces need root");
  for (const char* type : {"bridge", "host-local", "loopback"}) {
    if (access((options.plugin_dir / type).c_str(), X_OK) != 0) {
      return core::notFound("no CNI plugin " + (options.plugin_dir / type).string() +
                            " (Debian: containernetworking-plugins)");
    }
  }
  const std::string ip_tool = findIp();
  if (ip_tool.empty()) return core::notFound("no `ip` (Debian: iproute2)");
  std::error_code ec;
  fs::create_directories(options.state_dir, ec);
  if (ec) return core::errnoError("create " + options.state_dir.string(), ec.value());
  auto network = std::make_unique<CniNetwork>(std::move(options), ip_tool);
  network->releaseLeftovers();
  RM_RETURN_IF_ERROR(network->selfTest());
  return std::unique_ptr<PodNetwork>(std::move(network));
}

}  // namespace ringmaster::local::kubelet
