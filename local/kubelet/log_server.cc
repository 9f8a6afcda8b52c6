#include "local/kubelet/log_server.h"

#include <fstream>

#include "local/https/log_file.h"
#include "local/https/pki.h"
#include "local/https/server.h"
#include "local/kubelet/pod_paths.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::local::kubelet {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "/containerLogs/";

bool truthy(const std::string* v) { return v && (*v == "true" || *v == "1" || *v == "True"); }

// A non-negative integer query parameter; false (and `error` set) when malformed.
bool nonNegative(const Request& r, const char* name, std::optional<int64_t>& out,
                 std::string& error) {
  const std::string* v = r.queryParam(name);
  if (v == nullptr) return true;
  core::Result<int64_t> n = core::parseInt(*v);
  if (!n.ok() || *n < 0) {
    error = std::string("invalid ") + name + ": " + *v;
    return false;
  }
  out = *n;
  return true;
}

// Whether the container's current run is over: the pod is gone, replaced, finished, or reports
// the container terminated.
bool runOver(const kube::Pod* pod, const std::string& uid, const std::string& container) {
  if (pod == nullptr || pod->metadata.uid != uid) return true;
  if (pod->status.phase == "Succeeded" || pod->status.phase == "Failed") return true;
  for (const kube::ContainerStatus& cs : pod->status.container_statuses) {
    if (cs.name == container) return cs.state && cs.state->terminated.has_value();
  }
  return false;
}

}  // namespace

class LogServer::Impl {
 public:
  Impl(fs::path root_dir, PodLookup pods)
      : root_dir_(std::move(root_dir)), pods_(std::move(pods)) {}

  void handle(const Request& r, ResponseWriter& w) {
    if (r.method != "GET" || r.path.rfind(kPrefix, 0) != 0) {
      (void)w.send(404, "text/plain", "404 page not found\n");
      return;
    }
    // <namespace>/<pod>/<container>
    std::vector<std::string> parts;
    std::string rest = r.path.substr(kPrefix.size());
    for (size_t start = 0;;) {
      const size_t slash = rest.find('/', start);
      parts.push_back(rest.substr(start, slash == std::string::npos ? slash : slash - start));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty()) {
      (void)w.send(400, "text/plain", "expected /containerLogs/<namespace>/<pod>/<container>\n");
      return;
    }
    const std::string &ns = parts[0], &name = parts[1], &container = parts[2];
    std::shared_ptr<const kube::Pod> pod = pods_(ns, name);
    if (!pod) {
      (void)w.send(404, "text/plain", "pod " + ns + "/" + name + " not found\n");
      return;
    }
    // The container name becomes a file name: only a DNS label may.
    if (!kube::dns1123LabelProblems(container).empty()) {
      (void)w.send(400, "text/plain", "container " + container + " is not valid\n");
      return;
    }
    LogFileOptions options;
    options.follow = truthy(r.queryParam("follow"));
    std::optional<int64_t> since_seconds;
    std::string error;
    if (!nonNegative(r, "tailLines", options.tail_lines, error) ||
        !nonNegative(r, "limitBytes", options.limit_bytes, error) ||
        !nonNegative(r, "sinceSeconds", since_seconds, error)) {
      (void)w.send(400, "text/plain", error + "\n");
      return;
    }
    if (since_seconds) {
      options.since = std::chrono::system_clock::now() - std::chrono::seconds(*since_seconds);
    }
    const bool previous = truthy(r.queryParam("previous"));
    const ContainerFiles files = containerFiles(podDir(root_dir_, pod->metadata), container);
    const fs::path& file = previous ? files.previous_log : files.log;
    if (!std::ifstream(file, std::ios::binary)) {
      (void)w.send(404, "text/plain",
                   "no " + std::string(previous ? "previous " : "") + "log of container " +
                       container + " in pod " + ns + "/" + name + "\n");
      return;
    }
    const std::string uid = pod->metadata.uid;
    sendLogFile(file, options, w, [&] {
      std::shared_ptr<const kube::Pod> now = pods_(ns, name);
      return previous || runOver(now.get(), uid, container);
    });
  }

  std::unique_ptr<Server> server;

 private:
  fs::path root_dir_;
  PodLookup pods_;
};

core::Result<std::unique_ptr<LogServer>> LogServer::start(int port, const fs::path& root_dir,
                                                          PodLookup pods) {
  RM_ASSIGN_OR_RETURN(LocalPki pki, loadOrCreatePki(root_dir / "pki"));
  // Never presented (the callers are anonymous), but the server wants one.
  RM_ASSIGN_OR_RETURN(std::string token, loadOrCreateToken(root_dir / "pki" / "token"));
  auto impl = std::make_unique<Impl>(root_dir, std::move(pods));
  ServerOptions options;
  options.port = port;
  options.cert_pem = pki.server_cert_pem;
  options.key_pem = pki.server_key_pem;
  options.bearer_token = token;
  options.anonymous_reads = true;
  Impl* handler = impl.get();
  RM_ASSIGN_OR_RETURN(impl->server,
                      Server::start(options, [handler](const Request& r, ResponseWriter& w) {
                        handler->handle(r, w);
                      }));
  RM_LOG(INFO, LOCAL) << "serving container logs on https://127.0.0.1:" << impl->server->port()
                      << "/containerLogs/";
  return std::unique_ptr<LogServer>(new LogServer(std::move(impl)));
}

LogServer::LogServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LogServer::~LogServer() { stop(); }
int LogServer::port() const { return impl_->server->port(); }
void LogServer::stop() {
  if (impl_ && impl_->server) impl_->server->stop();
}

}  // namespace ringmaster::local::kubelet
