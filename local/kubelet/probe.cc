#include "local/kubelet/probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "local/kubelet/session.h"
#include "ringmaster/http/get.h"

namespace ringmaster::local::kubelet {
namespace {

using Clock = std::chrono::steady_clock;

int resolvePort(const kube::IntOrString& port, const std::vector<kube::ContainerPort>& ports) {
  if (port.isInt()) return port.intValue();
  for (const auto& p : ports) {
    if (p.name && *p.name == port.strValue()) return p.container_port;
  }
  return -1;
}

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Connected socket or "" + failure text.
int connectTo(const std::string& host, int port, Clock::time_point deadline, std::string* error) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    *error = "bad probe host \"" + host + "\"";
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + strerror(errno);
    return -1;
  }
  const std::string where = "dial tcp " + host + ":" + std::to_string(port) + ": ";
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      *error = where + "connect: " + strerror(errno);
      close(fd);
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, remainingMs(deadline)) <= 0) {
      *error = where + "i/o timeout";
      close(fd);
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      *error = where + "connect: " + strerror(err);
      close(fd);
      return -1;
    }
  }
  return fd;
}

std::string httpProbe(const kube::HttpGetAction& get, const ProbeTarget& target,
                      Clock::time_point deadline) {
  const std::string host = get.host.value_or(target.pod_ip.empty() ? "127.0.0.1" : target.pod_ip);
  const int port = resolvePort(get.port, target.ports);
  if (port <= 0) return "unknown port \"" + get.port.toString() + "\"";
  http::GetOptions options;
  options.timeout =
      std::max(std::chrono::milliseconds(1), std::chrono::milliseconds(remainingMs(deadline)));
  options.max_body = 10 << 10;  // what the kubelet reads of a probe's body
  options.headers = {"User-Agent: kube-probe/1.32", "Accept: */*"};
  core::Result<http::Response> answer =
      http::get(http::url(host, port, get.path.value_or("/")), options);
  if (!answer.ok()) return answer.status().message();
  if (answer->status >= 200 && answer->status < 400) return "";
  return "HTTP probe failed with statuscode: " + std::to_string(answer->status);
}

std::string execProbe(const kube::ExecAction& exec, const ProbeTarget& target,
                      Clock::time_point deadline) {
  if (exec.command.empty()) return "exec probe without a command";
  LaunchSpec spec = target.exec_base;
  spec.argv = exec.command;
  const std::string* path = findEnv(spec.env, "PATH");
  spec.executable = resolveExecutable(exec.command[0], path ? *path : "");
  if (spec.executable.empty()) return "exec: \"" + exec.command[0] + "\": not found in $PATH";
  spec.log_path.clear();
  core::Result<pid_t> pid = launch(spec);
  if (!pid.ok()) return pid.status().message();
  std::optional<ExitInfo> exit;
  while (!(exit = reap(*pid)) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded by the probe timeout
  }
  if (!exit) {
    killSession(*pid);
    while (!(exit = reap(*pid))) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return "command timed out";
  }
  if (exit->exit_code != 0) return "command exited with " + std::to_string(exit->exit_code);
  return "";
}

}  // namespace

std::string probeOnce(const kube::Probe& probe, const ProbeTarget& target,
                      std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  if (probe.http_get) return httpProbe(*probe.http_get, target, deadline);
  if (probe.tcp_socket) {
    const std::string host =
        probe.tcp_socket->host.value_or(target.pod_ip.empty() ? "127.0.0.1" : target.pod_ip);
    int port = resolvePort(probe.tcp_socket->port, target.ports);
    if (port <= 0) return "unknown port \"" + probe.tcp_socket->port.toString() + "\"";
    std::string error;
    int fd = connectTo(host, port, deadline, &error);
    if (fd < 0) return error;
    close(fd);
    return "";
  }
  if (probe.exec) return execProbe(*probe.exec, target, deadline);
  return "probe has no handler (httpGet, tcpSocket or exec)";
}

Prober::Prober(kube::Probe probe, ProbeTarget target, Changed changed)
    : probe_(std::move(probe)), target_(std::move(target)), changed_(std::move(changed)) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

Prober::~Prober() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void Prober::run(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  auto sleep = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, d, [] { return false; });
  };
  const auto period = std::chrono::seconds(std::max(1, probe_.period_seconds.value_or(10)));
  const auto timeout = std::chrono::seconds(std::max(1, probe_.timeout_seconds.value_or(1)));
  const int success_threshold = std::max(1, probe_.success_threshold.value_or(1));
  const int failure_threshold = std::max(1, probe_.failure_threshold.value_or(3));
  sleep(std::chrono::seconds(std::max(0, probe_.initial_delay_seconds.value_or(0))));
  int successes = 0, failures = 0;
  while (!stop.stop_requested()) {
    std::string failure = probeOnce(probe_, target_, timeout);
    if (stop.stop_requested()) break;
    if (failure.empty()) {
      failures = 0;
      if (++successes >= success_threshold && !ready_.exchange(true)) changed_(true, "");
    } else {
      successes = 0;
      ++failures;
      // Kubernetes reports each failure (an Unhealthy event) but flips only at the threshold.
      if (failures >= failure_threshold && ready_.exchange(false)) {
        changed_(false, failure);
      } else if (!ready_.load()) {
        changed_(false, failure);
      }
    }
    sleep(std::chrono::duration_cast<std::chrono::milliseconds>(period));
  }
}

}  // namespace ringmaster::local::kubelet
