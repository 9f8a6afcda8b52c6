#include "operator/progress.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ringmaster/contract/trainer_summary.h"
#include "ringmaster/core/json.h"
#include "ringmaster/kube/termination_message.h"

namespace ringmaster::op {
namespace {

// "name{labels} value [timestamp]" -> name and value; false for comments and junk.
bool parseSample(std::string_view line, std::string_view& name, double& value) {
  if (line.empty() || line[0] == '#') return false;
  size_t end = line.find_first_of("{ ");
  if (end == std::string_view::npos) return false;
  name = line.substr(0, end);
  size_t pos = end;
  if (line[pos] == '{') {
    size_t close = line.find('}', pos);
    if (close == std::string_view::npos) return false;
    pos = close + 1;
  }
  while (pos < line.size() && line[pos] == ' ') ++pos;
  std::string number(line.substr(pos, line.find(' ', pos) - pos));
  if (number.empty()) return false;
  char* parse_end = nullptr;
  value = std::strtod(number.c_str(), &parse_end);
  return parse_end != number.c_str() && std::isfinite(value);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` is ready for `events` or the deadline passes.
core::Status waitFor(int fd, short events, std::chrono::steady_clock::time_point deadline,
                     const std::string& what) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return core::unavailable(what + ": timed out");
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return core::Status::Ok();
    if (n < 0 && errno != EINTR) return core::errnoError(what + ": poll", errno);
  }
}

// Status is for people (`kubectl get tj` prints numbers as stored): 4 significant digits.
double significant(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}

}  // namespace

core::Result<kube::TrainingProgress> parsePrometheusText(std::string_view text) {
  kube::TrainingProgress p;
  bool any = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    std::string_view name;
    double value = 0;
    if (!parseSample(line, name, value)) continue;
    // A gauge the trainer has not set yet reads 0: not a value to show.
    const bool measured = value > 0;
    if (name == "ringmaster_trainer_epoch") {
      if (measured) p.epoch = static_cast<int32_t>(value);
    } else if (name == "ringmaster_trainer_steps_total") {
      p.step = static_cast<int64_t>(value);
    } else if (name == "ringmaster_trainer_loss") {
      if (measured) p.loss = significant(value);
    } else if (name == "ringmaster_trainer_samples_per_second") {
      if (measured) p.samples_per_second = std::round(value);
    } else if (name == "ringmaster_trainer_test_accuracy_ratio") {
      if (measured) p.test_accuracy = significant(value);
    } else if (name == "ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second") {
      // One series per backend; the largest is the one in use.
      if (measured) {
        p.allreduce_bus_bandwidth =
            std::round(std::max(p.allreduce_bus_bandwidth.value_or(0.0), value));
      }
    } else {
      continue;
    }
    any = true;
  }
  if (!any) return core::notFound("no ringmaster_trainer_* metrics in the answer");
  return p;
}

core::Result<kube::TrainingProgress> parseTrainerSummary(std::string_view text) {
  if (text.size() > kube::kMaxTerminationMessageBytes) {
    return core::invalidArgument("summary of " + std::to_string(text.size()) +
                                 " bytes, over the termination message's " +
                                 std::to_string(kube::kMaxTerminationMessageBytes));
  }
  auto parsed = core::parseJson(text);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return core::invalidArgument("not a JSON object");
  kube::TrainingProgress p;
  bool any = false;
  core::Status bad;
  // obj[key] when it is there; a non-number is remembered in `bad`, naming `where`.
  auto number = [&](const nlohmann::json& obj, const std::string& key,
                    const std::string& where) -> std::optional<double> {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      if (bad.ok()) bad = core::invalidArgument(where + ": expected a number, got " + it->dump());
      return std::nullopt;
    }
    any = true;
    return it->get<double>();
  };
  namespace key = contract::trainer_summary;
  if (auto v = number(j, key::kEpochs, key::kEpochs); v && *v >= 0 && *v < 1e9) {
    p.epoch = static_cast<int32_t>(*v);
  }
  if (auto v = number(j, key::kSteps, key::kSteps); v && *v >= 0 && *v < 9e18) {
    p.step = static_cast<int64_t>(*v);
  }
  if (auto v = number(j, key::kFinalTrainLoss, key::kFinalTrainLoss)) p.loss = significant(*v);
  if (auto v = number(j, key::kSamplesPerSecond, key::kSamplesPerSecond)) {
    p.samples_per_second = std::round(*v);
  }
  if (auto v = number(j, key::kTestAccuracy, key::kTestAccuracy)) {
    p.test_accuracy = significant(*v);
  }
  if (auto a = j.find(key::kAllreduce); a != j.end() && a->is_object()) {
    if (auto v = number(*a, key::kAllreduceBusBandwidth,
                        std::string(key::kAllreduce) + "." + key::kAllreduceBusBandwidth);
        v && *v > 0) {
      p.allreduce_bus_bandwidth = std::round(*v);
    }
  }
  if (!bad.ok()) return bad;
  if (!any) return core::notFound("no summary field (epochs, steps, finalTrainLoss, ...)");
  return p;
}

kube::TrainingProgress mergeProgress(const std::optional<kube::TrainingProgress>& progress,
                                     const kube::TrainingProgress& final_figures) {
  kube::TrainingProgress out = progress.value_or(kube::TrainingProgress{});
  if (final_figures.epoch) out.epoch = final_figures.epoch;
  if (final_figures.step) out.step = final_figures.step;
  if (final_figures.loss) out.loss = final_figures.loss;
  if (final_figures.samples_per_second) out.samples_per_second = final_figures.samples_per_second;
  if (final_figures.allreduce_bus_bandwidth) {
    out.allreduce_bus_bandwidth = final_figures.allreduce_bus_bandwidth;
  }
  if (final_figures.test_accuracy) out.test_accuracy = final_figures.test_accuracy;
  return out;
}

core::Result<std::string> httpGet(const std::string& host, int port, const std::string& path,
                                  std::chrono::milliseconds timeout) {
  const std::string what = "GET http://" + host + ":" + std::to_string(port) + path;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return core::unavailable(what + ": resolve: " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addrs(found, freeaddrinfo);
  Fd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return core::errnoError(what + ": socket", errno);
  if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
    return core::unavailable(what + ": connect: " + std::strerror(errno));
  }
  RM_RETURN_IF_ERROR(waitFor(fd.get(), POLLOUT, deadline, what + ": connect"));
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return core::unavailable(what + ": connect: " + std::strerror(err));
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + host +
                              "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    RM_RETURN_IF_ERROR(waitFor(fd.get(), POLLOUT, deadline, what + ": send"));
    ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return core::errnoError(what + ": send", errno);
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string response;
  char buf[16384];
  for (;;) {
    RM_RETURN_IF_ERROR(waitFor(fd.get(), POLLIN, deadline, what + ": read"));
    ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return core::errnoError(what + ": read", errno);
    }
    response.append(buf, static_cast<size_t>(n));
    if (response.size() > (16 << 20)) return core::unavailable(what + ": answer over 16 MiB");
  }
  size_t header_end = response.find("\r\n\r\n");
  if (header_end == std::string::npos) return core::unavailable(what + ": malformed answer");
  // "HTTP/1.1 200 OK"
  size_t sp = response.find(' ');
  int code = sp == std::string::npos ? 0 : std::atoi(response.c_str() + sp + 1);
  if (code != 200) return core::unavailable(what + ": HTTP " + std::to_string(code));
  return response.substr(header_end + 4);
}

core::Result<kube::TrainingProgress> HttpProgressSource::read(const std::string& host, int port) {
  RM_ASSIGN_OR_RETURN(std::string body, httpGet(host, port, "/metrics", timeout_));
  core::Result<kube::TrainingProgress> p = parsePrometheusText(body);
  if (!p.ok()) return p.status().withContext("http://" + host + ":" + std::to_string(port));
  return p;
}

}  // namespace ringmaster::op
