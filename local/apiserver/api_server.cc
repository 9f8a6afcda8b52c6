#include "local/apiserver/api_server.h"

#include <random>

#include "local/apiserver/builtin_defaults.h"
#include "local/apiserver/builtin_types.h"
#include "local/apiserver/crd.h"
#include "local/apiserver/discovery.h"
#include "local/apiserver/openapi_v2.h"
#include "local/apiserver/pod_binding.h"
#include "local/apiserver/pod_log.h"
#include "local/apiserver/protobuf_body.h"
#include "local/apiserver/rbac.h"
#include "local/apiserver/scale.h"
#include "local/apiserver/table.h"
#include "local/https/auth.h"
#include "local/https/local_network.h"
#include "local/https/service_account_token.h"
#include "local/store/meta_util.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/json.h"
#include "ringmaster/core/log.h"
#include "ringmaster/kube/yaml_documents.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using SysClock = std::chrono::system_clock;

constexpr const char* kUnknownBodyFormat =
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml";

std::string auditId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = rng(), b = rng();
  char buf[40];
  snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
           static_cast<unsigned>(a >> 16) & 0xffff, (static_cast<unsigned>(a) & 0x0fff) | 0x4000,
           (static_cast<unsigned>(b >> 48) & 0x3fff) | 0x8000,
           static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

Headers apiHeaders(std::string content_type = "application/json") {
  Headers h;
  h.add("Audit-Id", auditId());
  h.add("Cache-Control", "no-cache, private");
  h.add("Content-Type", std::move(content_type));
  return h;
}

void sendJson(ResponseWriter& w, int code, std::string_view body) {
  (void)w.send(code, apiHeaders(), body);
}

// A 2xx answer to a write, with one `Warning: 299 - "…"` header per admission warning.
void sendWritten(ResponseWriter& w, int code, std::string_view body,
                 const std::vector<std::string>& warnings) {
  Headers h = apiHeaders();
  for (const auto& warning : warnings) h.add("Warning", "299 - " + json(warning).dump());
  (void)w.send(code, std::move(h), body);
}

void sendError(ResponseWriter& w, const StatusError& error) {
  sendJson(w, error.code(), error.bodyText());
}

// Go's http.NotFound: what kube-apiserver answers for paths it does not route.
void sendPageNotFound(ResponseWriter& w) {
  Headers h;
  h.add("Content-Type", "text/plain; charset=utf-8");
  h.add("X-Content-Type-Options", "nosniff");
  (void)w.send(404, std::move(h), "404 page not found\n");
}

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string param(const Request& r, std::string_view name) {
  const std::string* v = r.queryParam(name);
  return v ? *v : "";
}

// apimachinery's IsValidPathSegmentName for a name in a URL.
std::optional<std::string> pathSegmentProblem(const std::string& name) {
  if (name == "." || name == "..") return "may not be '" + name + "'";
  if (name.find('%') != std::string::npos) return std::string("may not contain '%'");
  return std::nullopt;
}

bool truthy(const std::string& v) { return v == "1" || v == "true" || v == "True"; }

enum class Representation { kJson, kTable, kNone };

Representation negotiate(const Request& r) {
  for (const auto& m : parseAccept(r.headers.get("Accept"))) {
    if (!m.accepts("application/json")) continue;
    const std::string* as = m.param("as");
    if (!as) return Representation::kJson;
    const std::string* g = m.param("g");
    if (*as == "Table" && g && *g == "meta.k8s.io") return Representation::kTable;
  }
  return Representation::kNone;
}

// ?fieldValidation= and ?dryRun= of a write (400 for values kube-apiserver rejects).
ApiResult<WriteOptions> writeOptions(const Request& r, std::vector<std::string>* warnings) {
  WriteOptions wo;
  wo.warnings = warnings;
  const std::string fv = param(r, "fieldValidation");
  if (fv == "Strict") {
    wo.field_validation = FieldValidation::kStrict;
  } else if (fv == "Ignore") {
    wo.field_validation = FieldValidation::kIgnore;
  } else if (fv.empty() || fv == "Warn") {
    wo.field_validation = FieldValidation::kWarn;
  } else {
    return badRequestError("fieldValidation parameter unsupported: " + fv);
  }
  for (const auto& [k, v] : r.query) {
    if (k != "dryRun") continue;
    if (v != "All") {
      return badRequestError("dryRun parameter unsupported: " + v + " (only All is supported)");
    }
    wo.dry_run = true;
  }
  return wo;
}

StatusError notAcceptable() {
  return StatusError(406, "NotAcceptable",
                     "only the following media types are accepted: application/json, "
                     "application/yaml, application/vnd.kubernetes.protobuf");
}

ApiResult<json> parseBody(const Request& r) {
  std::string ct = contentTypeEssence(r);
  if (ct == kProtobufContentType) {
    // kubectl's imperative generators (create namespace|configmap|secret) send protobuf.
    if (auto decoded = decodeProtobufBody(r.body)) return *decoded;
    return unsupportedMediaTypeError(kUnknownBodyFormat);
  }
  if (!ct.empty() && ct != "application/json") {
    return unsupportedMediaTypeError(kUnknownBodyFormat);
  }
  auto body = core::parseJson(r.body);
  if (!body.ok() || !body->is_object()) {
    return badRequestError(
        "the object provided is unrecognized (must be of type object): "
        "couldn't get version/kind; json parse error" +
        (body.ok() ? std::string() : ": " + body.status().message()));
  }
  return std::move(body).value();
}

}  // namespace

struct ApiServer::Target {
  // Shared with the registry: a request does not copy the resource's schema and columns.
  std::shared_ptr<const ApiResource> served;
  const ApiResource& resource() const { return *served; }
  std::string ns;
  std::string name;
  Subresource sub = Subresource::kMain;
};

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), store_(options_.store) {}

ApiServer::~ApiServer() { (void)stop(); }

core::Result<std::unique_ptr<ApiServer>> ApiServer::start(ApiServerOptions options) {
  if (options.data_dir.empty()) return core::invalidArgument("api server: data_dir is required");
  std::unique_ptr<ApiServer> server(new ApiServer(std::move(options)));
  RM_RETURN_IF_ERROR(server->init());
  return server;
}

core::Status ApiServer::init() {
  const auto& dir = options_.data_dir;
  RM_ASSIGN_OR_RETURN(auto pki, loadOrCreatePki(dir));
  RM_ASSIGN_OR_RETURN(auto token, loadOrCreateToken(dir / "token"));

  for (auto& r : builtinResources()) {
    if (r.type.key() == crdKey()) {
      r.type.admit = [](json& obj, const json* old, AdmitContext& context) {
        if (!context.status_write) defaultCrd(obj, old == nullptr);
        return validateCrd(obj);
      };
    } else if (r.type.resource == "namespaces" && r.type.group.empty()) {
      r.type.admit = [](json& obj, const json* old, AdmitContext&) -> std::optional<StatusError> {
        defaultNamespace(obj, old == nullptr);
        return std::nullopt;
      };
    } else if (r.type.resource == "pods" && r.type.group.empty()) {
      r.type.admit = [](json& obj, const json* old,
                        AdmitContext& context) -> std::optional<StatusError> {
        if (auto error = podQuantityError(obj)) return error;
        if (!context.status_write) defaultPod(obj, old == nullptr);
        if (!context.status_write && old == nullptr) {
          thread_local RandomSource random;
          addServiceAccountVolume(obj, random.nameSuffix());
        }
        return std::nullopt;
      };
    } else if (r.type.resource == "services" && r.type.group.empty()) {
      r.type.admit = [this](json& obj, const json* old,
                            AdmitContext&) -> std::optional<StatusError> {
        if (auto error = serviceError(obj)) return error;
        assignClusterIp(obj, old);
        defaultService(obj);
        return std::nullopt;
      };
    } else if (r.type.resource == "events" && r.type.group.empty()) {
      r.type.admit = [](json& obj, const json*, AdmitContext&) -> std::optional<StatusError> {
        defaultEvent(obj);
        return std::nullopt;
      };
    } else if (r.type.group == "apps") {
      r.type.admit = [](json& obj, const json* old,
                        AdmitContext& context) -> std::optional<StatusError> {
        if (!context.status_write) defaultWorkload(obj, old == nullptr);
        return std::nullopt;
      };
    } else if (r.type.resource == "nodes" && r.type.group.empty()) {
      r.type.admit = [](json& obj, const json*, AdmitContext&) -> std::optional<StatusError> {
        defaultNode(obj);
        return std::nullopt;
      };
    }
    store_.registerType(r.type);
    registry_.add(r);
  }
  RM_RETURN_IF_ERROR(store_.open(dir / "store").withContext("api server: opening the store"));
  if (auto services = store_.list({"", "services"}, "", {}); services.ok()) {
    for (const auto& s : services->items) {
      const json& spec = s->object.value("spec", json::object());
      if (spec.contains("clusterIP") && spec["clusterIP"].is_string()) {
        cluster_ips_.reserve(spec["clusterIP"].get<std::string>());
      }
    }
  }
  // Types of the CRDs persisted by an earlier run.
  auto crds = store_.list(crdKey(), "", {});
  if (crds.ok()) {
    for (const auto& crd : crds->items) registerCrd(crd->object, false);
  }
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    json obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
    auto created = store_.create({"", "namespaces"}, "", obj);
    if (!created.ok() && created.error().code() != 409) return created.error().toStatus();
  }

  RM_ASSIGN_OR_RETURN(auto signing_key, loadOrCreateToken(dir / "sa.key"));
  service_account_tokens_ = std::make_unique<ServiceAccountTokens>(signing_key);
  namespace_defaults_ = std::make_unique<controllers::NamespaceDefaults>(store_, pki.ca_cert_pem);

  ServerOptions so;
  so.port = options_.port;
  so.also_listen_on = {kDefaultPodGateway};
  so.cert_pem = pki.server_cert_pem;
  so.key_pem = pki.server_key_pem;
  so.bearer_token = token;
  so.token_user = [this](std::string_view bearer) -> std::optional<std::string> {
    auto claims = service_account_tokens_->verify(bearer, SysClock::now());
    if (!claims) return std::nullopt;
    return claims->userName();
  };
  RM_ASSIGN_OR_RETURN(
      server_, Server::start(so, [this](const Request& r, ResponseWriter& w) { handle(r, w); }));
  KubeconfigSpec spec;
  spec.server_url = server_->url();
  spec.ca_pem = pki.ca_cert_pem;
  spec.token = token;
  RM_RETURN_IF_ERROR(writeKubeconfig(kubeconfigPath(), spec));
  // The workload controllers follow their objects' changes, as kube-controller-manager's informers
  // do; mu_ is a leaf lock (the housekeeper never holds it while it reads the store).
  store_.setCommitListener([this](const ResourceKey& key) {
    const bool workload =
        (key.group == "apps" && (key.resource == "deployments" || key.resource == "replicasets")) ||
        (key.group.empty() && key.resource == "pods");
    if (!workload) return;
    std::lock_guard lock(mu_);
    workloads_due_ = true;
    cv_.notify_all();
  });
  housekeeper_ = std::thread([this] { housekeeping(); });
  RM_LOG(INFO, LOCAL) << "api server listening on " << server_->url() << " (data " << dir.string()
                      << ")";
  return core::Status::Ok();
}

core::Status ApiServer::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return core::Status::Ok();
    stopped_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (server_) server_->stop();
  if (housekeeper_.joinable()) housekeeper_.join();
  store_.setCommitListener(nullptr);
  if (!server_) return core::Status::Ok();
  return store_.snapshot().withContext("api server: final snapshot");
}

void ApiServer::assignClusterIp(json& service, const json* old) {
  json& spec = service["spec"];
  if (!spec.is_object()) return;
  const std::string type = spec.value("type", "ClusterIP");
  if (type == "ExternalName") return;
  // A Service keeps its address for life; an update that leaves it out keeps the old one.
  if (old && (!spec.contains("clusterIP") || spec["clusterIP"] == "")) {
    const json& old_spec = old->value("spec", json::object());
    if (old_spec.contains("clusterIP")) spec["clusterIP"] = old_spec["clusterIP"];
    if (old_spec.contains("clusterIPs")) spec["clusterIPs"] = old_spec["clusterIPs"];
    return;
  }
  if (old || (spec.contains("clusterIP") && spec["clusterIP"] != "")) return;
  const std::string ip = cluster_ips_.allocate();
  if (ip.empty()) return;
  spec["clusterIP"] = ip;
  spec["clusterIPs"] = json::array({ip});
}

void ApiServer::housekeeping() {
  // Every second: garbage collection, the namespace defaults and a level-triggered pass of the
  // workload controllers (what a change's wake-up missed). Between ticks the workload controllers
  // run on their objects' changes, at most every kWorkloadSpacing: one pod's status writes must
  // not turn into a pass per write.
  constexpr auto kTick = std::chrono::seconds(1);
  constexpr auto kWorkloadSpacing = std::chrono::milliseconds(20);
  using Steady = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  auto next_bookmark = SysClock::now() + std::chrono::minutes(1);
  auto next_tick = Steady::now() + kTick;
  while (!stopping_) {
    cv_.wait_until(lock, next_tick, [this] { return stopping_ || workloads_due_; });
    if (stopping_) break;
    const bool tick = Steady::now() >= next_tick;
    workloads_due_ = false;
    lock.unlock();
    if (tick) {
      store_.collectGarbage();
      if (namespace_defaults_) namespace_defaults_->sync();
      if (SysClock::now() >= next_bookmark) {
        store_.sendBookmarks();
        next_bookmark = SysClock::now() + std::chrono::minutes(1);
      }
      next_tick = Steady::now() + kTick;
    }
    workloads_.sync();
    if (!tick) std::this_thread::sleep_for(kWorkloadSpacing);
    lock.lock();
  }
}

bool ApiServer::authorized(const Request& r) const {
  // The admin and anonymous requests were decided by the transport (auth.h).
  if (r.user.empty() || r.user == kAdminUser || r.user == kAnonymousUser) return true;
  RbacObjects objects;
  auto load = [&](const char* resource, std::vector<json>* into) {
    auto list = store_.list({"rbac.authorization.k8s.io", resource}, "", {});
    if (!list.ok()) return;
    for (const auto& item : list->items) into->push_back(item->object);
  };
  load("clusterroles", &objects.cluster_roles);
  load("clusterrolebindings", &objects.cluster_role_bindings);
  load("roles", &objects.roles);
  load("rolebindings", &objects.role_bindings);
  const RequestInfo info = requestInfo(r);
  const bool allowed = rbacAllows(userInfoFor(r.user), info, r.path, objects);
  // One line per denial, and one the first time a user is allowed a verb on a resource: what a
  // role needs to grant is then read off the log.
  std::string what = info.verb + " ";
  if (info.resource_request) {
    what += (info.group.empty() ? "core" : info.group) + "/" + info.resource +
            (info.subresource.empty() ? "" : "/" + info.subresource);
  } else {
    what += r.path;
  }
  if (!allowed) {
    RM_LOG(WARN, LOCAL) << "rbac: denied " << r.user << " " << what
                        << (info.namespace_name.empty() ? ""
                                                        : " in namespace " + info.namespace_name);
  } else if (info.resource_request) {
    std::lock_guard lock(rbac_log_mu_);
    if (rbac_logged_.insert(r.user + " " + what).second) {
      RM_LOG(INFO, LOCAL) << "rbac: allowed " << r.user << " " << what << " (first time)";
    }
  }
  return allowed;
}

void ApiServer::handle(const Request& r, ResponseWriter& w) {
  if (!authorized(r)) {
    (void)w.send(403, apiHeaders(), forbiddenBody(r, r.user));
    return;
  }
  const auto segs = splitPath(r.path);
  if (segs.empty()) return sendPageNotFound(w);
  const std::string& root = segs[0];
  if (root == "healthz" || root == "readyz" || root == "livez") {
    Headers h;
    h.add("Content-Type", "text/plain; charset=utf-8");
    h.add("X-Content-Type-Options", "nosniff");
    (void)w.send(200, std::move(h), "ok");
    return;
  }
  if (root == "version" && segs.size() == 1) return sendJson(w, 200, versionText());
  if (root == "openapi") {
    if (segs.size() >= 2 && segs[1] == "v3") {
      const auto all = registry_.all();
      if (segs.size() == 2) {
        (void)w.send(200, apiHeaders("text/plain; charset=utf-8"), openApiV3IndexText(all));
        return;
      }
      std::string gv;
      for (size_t i = 2; i < segs.size(); ++i) gv += (i > 2 ? "/" : "") + segs[i];
      std::string doc = openApiV3DocumentText(all, gv);
      if (doc.empty()) return sendPageNotFound(w);
      return sendJson(w, 200, doc);
    }
    if (segs.size() == 2 && segs[1] == "v2") {
      const json doc = openApiV2Document(registry_.all());
      if (r.headers.get("Accept").find("com.github.proto-openapi.spec.v2") != std::string::npos) {
        (void)w.send(200, apiHeaders(kOpenApiV2ProtobufType), encodeOpenApiV2(doc));
        return;
      }
      return sendJson(w, 200, doc.dump());
    }
    return sendPageNotFound(w);
  }
  if (root == "api") {
    if (segs.size() == 1) {
      return sendJson(w, 200, apiVersionsText("127.0.0.1:" + std::to_string(port())));
    }
    if (segs[1] != "v1") return sendPageNotFound(w);
    if (segs.size() == 2) return sendJson(w, 200, apiResourceListText(registry_.all(), "", "v1"));
    return serveResource(r, w, "", "v1", {segs.begin() + 2, segs.end()});
  }
  if (root == "apis") {
    if (segs.size() == 1) return sendJson(w, 200, apiGroupListText(registry_.all()));
    if (segs.size() == 2) return sendPageNotFound(w);
    if (!registry_.hasGroupVersion(segs[1], segs[2])) return sendPageNotFound(w);
    if (segs.size() == 3) {
      return sendJson(w, 200, apiResourceListText(registry_.all(), segs[1], segs[2]));
    }
    return serveResource(r, w, segs[1], segs[2], {segs.begin() + 3, segs.end()});
  }
  sendPageNotFound(w);
}

void ApiServer::serveResource(const Request& r, ResponseWriter& w, const std::string& group,
                              const std::string& version, const std::vector<std::string>& rest) {
  Target t;
  std::vector<std::string> tail;
  std::shared_ptr<const ApiResource> found;
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    found = registry_.find(group, version, rest[2]);
    if (found && found->type.namespaced) {
      t.ns = rest[1];
      tail.assign(rest.begin() + 2, rest.end());
    } else {
      found.reset();
    }
  }
  if (!found) {
    found = registry_.find(group, version, rest[0]);
    tail = rest;
  }
  if (!found || tail.size() > 3) return sendPageNotFound(w);
  t.served = std::move(found);
  if (tail.size() >= 2) t.name = tail[1];
  // A namespace or name in the URL is one path segment of an object, never "." or "..".
  if (t.ns == "." || t.ns == "..") return sendPageNotFound(w);
  if (auto why = pathSegmentProblem(t.name)) {
    return sendError(w, badRequestError("Name parameter invalid: \"" + t.name + "\": " + *why));
  }
  if (tail.size() == 3 && t.resource().type.key() == ResourceKey{"", "pods"} && !t.ns.empty() &&
      (tail[2] == "binding" || tail[2] == "log")) {
    return servePodSubresource(r, w, t.ns, t.name, tail[2]);
  }
  if (tail.size() == 3 && t.resource().type.key() == ResourceKey{"", "serviceaccounts"} &&
      !t.ns.empty() && tail[2] == "token") {
    return serveTokenRequest(r, w, t.ns, t.name);
  }
  if (tail.size() == 3 && tail[2] == "scale" && t.resource().scale) {
    if (t.resource().type.namespaced && t.ns.empty()) return sendPageNotFound(w);
    return serveScale(r, w, t);
  }
  if (tail.size() == 3) {
    if (tail[2] != "status" || !t.resource().type.has_status_subresource) {
      return sendPageNotFound(w);
    }
    t.sub = Subresource::kStatus;
  }
  const ResourceKey key = t.resource().type.key();
  // A namespaced object needs its namespace in the URL (only collections span namespaces).
  if (t.resource().type.namespaced && t.ns.empty() && !t.name.empty()) return sendPageNotFound(w);

  const std::string& method = r.method;
  if (method == "GET") {
    const Representation rep = negotiate(r);
    if (rep == Representation::kNone) return sendError(w, notAcceptable());
    const bool table = rep == Representation::kTable;
    if (t.name.empty()) {
      if (truthy(param(r, "watch"))) return serveWatch(r, w, t, table);
      return serveList(r, w, t, table);
    }
    auto got = store_.get(key, t.ns, t.name);
    if (!got.ok()) return sendError(w, got.error());
    if (table) {
      return sendJson(
          w, 200,
          tableText(t.resource(), {*got}, (*got)->resource_version,
                    parseIncludeObject(param(r, "includeObject")), true, SysClock::now()));
    }
    return sendJson(w, 200, (*got)->text);
  }
  if (method == "POST") {
    if (!t.name.empty()) {
      return sendError(w, StatusError(405, "MethodNotAllowed",
                                      "the server does not allow this method on the requested "
                                      "resource"));
    }
    auto body = parseBody(r);
    if (!body.ok()) return sendError(w, body.error());
    if (t.resource().type.namespaced) {
      auto& meta = (*body)["metadata"];
      if (meta.is_object() && meta.contains("namespace") && meta["namespace"] != t.ns) {
        return sendError(w, badRequestError("the namespace of the provided object does not "
                                            "match the namespace sent on the request"));
      }
      auto ns = store_.get({"", "namespaces"}, "", t.ns);
      if (!ns.ok()) return sendError(w, ns.error());
    }
    std::vector<std::string> warnings;
    auto wo = writeOptions(r, &warnings);
    if (!wo.ok()) return sendError(w, wo.error());
    auto created = store_.create(key, t.ns, std::move(*body), *wo);
    if (!created.ok()) return sendError(w, created.error());
    if (!wo->dry_run) afterWrite(t.resource(), **created);
    return sendWritten(w, 201, (*created)->text, warnings);
  }
  if (t.name.empty() && method != "DELETE") {
    return sendError(w, StatusError(405, "MethodNotAllowed",
                                    "the server does not allow this method on the requested "
                                    "resource"));
  }
  if (method == "PUT") {
    auto body = parseBody(r);
    if (!body.ok()) return sendError(w, body.error());
    std::vector<std::string> warnings;
    auto wo = writeOptions(r, &warnings);
    if (!wo.ok()) return sendError(w, wo.error());
    auto updated = store_.update(key, t.ns, t.name, std::move(*body), t.sub, *wo);
    if (!updated.ok()) return sendError(w, updated.error());
    if (!wo->dry_run) afterWrite(t.resource(), **updated);
    return sendWritten(w, 200, (*updated)->text, warnings);
  }
  if (method == "PATCH") {
    if (contentTypeEssence(r) == "application/apply-patch+yaml") return serveApply(r, w, t);
    auto type = patchTypeFromContentType(contentTypeEssence(r));
    if (!type) {
      return sendError(w, unsupportedMediaTypeError(
                              "the body of the request was in an unknown format - accepted media "
                              "types include: application/json-patch+json, "
                              "application/merge-patch+json, "
                              "application/strategic-merge-patch+json"));
    }
    std::vector<std::string> warnings;
    auto wo = writeOptions(r, &warnings);
    if (!wo.ok()) return sendError(w, wo.error());
    auto patched = store_.patch(key, t.ns, t.name, *type, r.body, t.sub, *wo);
    if (!patched.ok()) return sendError(w, patched.error());
    if (!wo->dry_run) afterWrite(t.resource(), **patched);
    return sendWritten(w, 200, (*patched)->text, warnings);
  }
  if (method == "DELETE") {
    DeleteOptions opts;
    auto dry = writeOptions(r, nullptr);
    if (!dry.ok()) return sendError(w, dry.error());
    bool dry_run = dry->dry_run;
    if (!r.body.empty()) {
      core::Result<json> parsed = core::invalidArgument("not a protobuf DeleteOptions");
      if (contentTypeEssence(r) != kProtobufContentType) {
        parsed = core::parseJson(r.body);
      } else if (auto decoded = decodeProtobufBody(r.body);
                 decoded && decoded->value("kind", "") == "DeleteOptions") {
        parsed = std::move(*decoded);
      }
      if (!parsed.ok() || !parsed->is_object()) {
        return sendError(
            w, badRequestError("invalid DeleteOptions body" +
                               (parsed.ok() ? std::string() : ": " + parsed.status().message())));
      }
      const json& body = *parsed;
      // kubectl puts dryRun into the DeleteOptions body rather than the query.
      if (body.contains("dryRun") && body["dryRun"].is_array()) {
        for (const auto& d : body["dryRun"]) dry_run |= d == "All";
      }
      opts.propagation_policy = body.value("propagationPolicy", "");
      if (body.contains("gracePeriodSeconds") && body["gracePeriodSeconds"].is_number_integer()) {
        opts.grace_period_seconds = body["gracePeriodSeconds"].get<int64_t>();
      }
      if (body.contains("preconditions") && body["preconditions"].is_object()) {
        const auto& p = body["preconditions"];
        if (p.contains("uid") && p["uid"].is_string()) opts.precondition_uid = p["uid"];
        if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
          opts.precondition_resource_version = p["resourceVersion"];
        }
      }
    } else {  // the query counts only without a body, as in kube-apiserver
      if (auto p = param(r, "propagationPolicy"); !p.empty()) opts.propagation_policy = p;
      if (auto g = param(r, "gracePeriodSeconds"); !g.empty()) {
        auto n = core::parseInt(g);
        if (!n.ok()) return sendError(w, badRequestError("invalid gracePeriodSeconds: " + g));
        opts.grace_period_seconds = *n;
      }
    }
    if (t.name.empty()) {  // deletecollection
      ListOptions lo;
      lo.label_selector = param(r, "labelSelector");
      lo.field_selector = param(r, "fieldSelector");
      auto list = store_.list(key, t.ns, lo);
      if (!list.ok()) return sendError(w, list.error());
      for (const auto& item : dry_run ? std::vector<ObjectPtr>{} : list->items) {
        const auto& meta = item->object["metadata"];
        auto removed =
            store_.remove(key, meta.value("namespace", ""), meta.value("name", ""), opts);
        if (!removed.ok() && removed.error().code() != 404) return sendError(w, removed.error());
      }
      return sendJson(w, 200, ObjectStore::listText(t.resource().type, *list));
    }
    if (dry_run) {  // what the deletion would answer; nothing changes
      auto got = store_.get(key, t.ns, t.name);
      if (!got.ok()) return sendError(w, got.error());
      if (t.resource().type.return_deleted_object) return sendJson(w, 200, (*got)->text);
      StatusError done;
      done.asSuccess().withDetails(t.name, key.group, key.resource);
      done.withUid((*got)->object["metadata"].value("uid", ""));
      return sendJson(w, 200, done.bodyText());
    }
    auto removed = store_.remove(key, t.ns, t.name, opts);
    if (!removed.ok()) return sendError(w, removed.error());
    if (removed->deleted && key == crdKey()) unregisterCrd(removed->object->object);
    if (removed->status) return sendJson(w, 200, removed->status->bodyText());
    return sendJson(w, 200, removed->object->text);
  }
  sendError(w, StatusError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource"));
}

void ApiServer::serveApply(const Request& r, ResponseWriter& w, const Target& t) {
  // Server-side apply, common case only (docs/local-api-fidelity.md): create when absent, else
  // merge the applied configuration into the live object. No field ownership, managedFields or
  // conflicts.
  // application/apply-patch+yaml: kubectl sends JSON (which is YAML); other clients send YAML.
  auto parsed = core::parseJson(r.body);
  if (!parsed.ok()) {
    auto documents = kube::parseYamlDocuments(r.body, "the apply patch");
    if (documents.ok() && documents->size() == 1) parsed = std::move(documents->front());
  }
  if (!parsed.ok() || !parsed->is_object()) {
    return sendError(
        w, badRequestError("error decoding YAML: the body of an apply patch must be "
                           "one object" +
                           (parsed.ok() ? std::string() : ": " + parsed.status().message())));
  }
  json body = std::move(parsed).value();
  const json meta = body.value("metadata", json::object());
  if (!meta.is_object() || meta.value("name", "") != t.name) {
    return sendError(w, badRequestError("the name of the object (" + meta.value("name", "") +
                                        ") does not match the name on the URL (" + t.name + ")"));
  }
  std::vector<std::string> warnings;
  auto wo = writeOptions(r, &warnings);
  if (!wo.ok()) return sendError(w, wo.error());
  const ResourceKey key = t.resource().type.key();
  auto existing = store_.get(key, t.ns, t.name);
  if (!existing.ok()) {
    if (existing.error().code() != 404 || t.sub != Subresource::kMain) {
      return sendError(w, existing.error());
    }
    auto created = store_.create(key, t.ns, std::move(body), *wo);
    if (!created.ok()) return sendError(w, created.error());
    if (!wo->dry_run) afterWrite(t.resource(), **created);
    return sendWritten(w, 201, (*created)->text, warnings);
  }
  body["metadata"].erase("resourceVersion");
  const PatchType type =
      t.resource().type.strategic_merge_patch ? PatchType::kStrategicMerge : PatchType::kMerge;
  auto patched = store_.patch(key, t.ns, t.name, type, body.dump(), t.sub, *wo);
  if (!patched.ok()) return sendError(w, patched.error());
  if (!wo->dry_run) afterWrite(t.resource(), **patched);
  sendWritten(w, 200, (*patched)->text, warnings);
}

void ApiServer::serveScale(const Request& r, ResponseWriter& w, const Target& t) {
  const ScaleSubresource& scale = *t.resource().scale;
  const ResourceKey key = t.resource().type.key();
  if (r.method == "GET") {
    const Representation rep = negotiate(r);
    if (rep == Representation::kNone) return sendError(w, notAcceptable());
    auto got = store_.get(key, t.ns, t.name);
    if (!got.ok()) return sendError(w, got.error());
    const json current = scaleOf(scale, (*got)->object);
    if (rep != Representation::kTable) return sendJson(w, 200, scaleText(current));
    ApiResource printer;
    printer.printer = TablePrinter::kScale;
    nlohmann::ordered_json doc;
    doc["kind"] = "Table";
    doc["apiVersion"] = "meta.k8s.io/v1";
    doc["metadata"] = {{"resourceVersion", std::to_string((*got)->resource_version)}};
    doc["columnDefinitions"] = tableColumns(printer);
    doc["rows"] = {
        tableRow(printer, current, parseIncludeObject(param(r, "includeObject")), SysClock::now())};
    return sendJson(w, 200, doc.dump());
  }
  if (r.method != "PUT" && r.method != "PATCH") {
    const std::string verb = r.method == "POST"     ? "create"
                             : r.method == "DELETE" ? "delete"
                                                    : r.method;
    return sendError(
        w, StatusError(405, "MethodNotAllowed",
                       verb + " is not supported on resources of kind \"" + key.qualified() + "\"")
               .withDetails("", key.group, key.resource));
  }
  std::vector<std::string> warnings;
  auto wo = writeOptions(r, &warnings);
  if (!wo.ok()) return sendError(w, wo.error());
  json put_body;
  std::optional<PatchType> patch_type;
  if (r.method == "PUT") {
    auto body = parseBody(r);
    if (!body.ok()) return sendError(w, body.error());
    put_body = std::move(body).value();
  } else {
    patch_type = patchTypeFromContentType(contentTypeEssence(r));
    if (!patch_type) return sendError(w, customResourcePatchTypeError());
  }
  // Read, rescale and write under the store's lock, so that the operator's status writes in
  // between do not make an unconditional scale fail on a stale resourceVersion.
  auto written = store_.mutate(
      key, t.ns, t.name,
      [&](json& obj) -> std::optional<StatusError> {
        auto next = patch_type ? withScalePatch(scale, std::move(obj), *patch_type, r.body, t.name)
                               : withScale(scale, std::move(obj), put_body, t.name);
        if (!next.ok()) return next.error();
        obj = std::move(next).value();
        return std::nullopt;
      },
      Subresource::kMain, *wo);
  if (!written.ok()) return sendError(w, written.error());
  if (!wo->dry_run) afterWrite(t.resource(), **written);
  return sendWritten(w, 200, scaleText(scaleOf(scale, (*written)->object)), warnings);
}

void ApiServer::servePodSubresource(const Request& r, ResponseWriter& w, const std::string& ns,
                                    const std::string& name, const std::string& sub) {
  const bool binding = sub == "binding";
  if ((binding && r.method != "POST") || (!binding && r.method != "GET")) {
    return sendError(w, StatusError(405, "MethodNotAllowed",
                                    "the server does not allow this method on the requested "
                                    "resource"));
  }
  if (!binding) return servePodLog(store_, r, w, ns, name);
  auto body = parseBody(r);
  if (!body.ok()) return sendError(w, body.error());
  auto bound = bindPod(store_, ns, name, *body, formatTimestamp(SysClock::now()));
  if (!bound.ok()) return sendError(w, bound.error());
  sendJson(w, 201, kBindingSuccessBody);
}

void ApiServer::serveTokenRequest(const Request& r, ResponseWriter& w, const std::string& ns,
                                  const std::string& name) {
  if (r.method != "POST") {
    return sendError(w, StatusError(405, "MethodNotAllowed",
                                    "the server does not allow this method on the requested "
                                    "resource"));
  }
  auto body = parseBody(r);
  if (!body.ok()) return sendError(w, body.error());
  auto account = store_.get({"", "serviceaccounts"}, ns, name);
  if (!account.ok()) return sendError(w, account.error());
  json request = *body;
  json& spec = request["spec"];
  if (!spec.is_object()) spec = json::object();
  // kube-apiserver's defaults and bounds: an hour, at least ten minutes, at most 48 hours here
  // (its --service-account-max-token-expiration is unset by default; a day or two is what
  // clusters configure).
  const int64_t seconds = spec.value("expirationSeconds", int64_t{3600});
  if (seconds < 600) {
    return sendError(w, invalidError("TokenRequest", "authentication.k8s.io", name,
                                     {{"FieldValueInvalid",
                                       "Invalid value: " + std::to_string(seconds) +
                                           ": may not specify a duration less than 10 minutes",
                                       "spec.expirationSeconds"}}));
  }
  spec["expirationSeconds"] = std::min<int64_t>(seconds, 48 * 3600);
  if (!spec.contains("audiences") || !spec["audiences"].is_array() || spec["audiences"].empty()) {
    spec["audiences"] = json::array({kServiceAccountIssuer});
  }
  const auto now = SysClock::now();
  ServiceAccountClaims claims;
  claims.namespace_name = ns;
  claims.service_account = name;
  claims.service_account_uid = (*account)->object["metadata"].value("uid", "");
  for (const auto& a : spec["audiences"]) {
    if (a.is_string()) claims.audiences.push_back(a.get<std::string>());
  }
  // 3607 s is what ServiceAccount admission asks for in every pod's volume. As kube-apiserver does
  // (--service-account-extend-token-expiration, on by default), such a token stays valid for a
  // year, so that a client that never rereads its token file keeps working; the kubelet writes
  // the file once per pod start.
  const int64_t asked = spec["expirationSeconds"].get<int64_t>();
  const int64_t valid = asked == 3607 ? int64_t{365} * 24 * 3600 : asked;
  claims.expires = now + std::chrono::seconds(valid);
  if (spec.contains("boundObjectRef") && spec["boundObjectRef"].is_object() &&
      spec["boundObjectRef"].value("kind", "") == "Pod") {
    claims.pod_name = spec["boundObjectRef"].value("name", "");
    claims.pod_uid = spec["boundObjectRef"].value("uid", "");
  }
  json answer = {{"kind", "TokenRequest"},
                 {"apiVersion", "authentication.k8s.io/v1"},
                 {"metadata", {{"name", name}, {"namespace", ns}, {"creationTimestamp", nullptr}}},
                 {"spec", spec},
                 {"status",
                  {{"token", service_account_tokens_->issue(claims, now)},
                   {"expirationTimestamp", formatTimestamp(now + std::chrono::seconds(asked))}}}};
  sendJson(w, 201, answer.dump());
}

void ApiServer::serveList(const Request& r, ResponseWriter& w, const Target& t, bool table) {
  ListOptions lo;
  lo.label_selector = param(r, "labelSelector");
  lo.field_selector = param(r, "fieldSelector");
  lo.continue_token = param(r, "continue");
  lo.resource_version = param(r, "resourceVersion");
  lo.resource_version_match = param(r, "resourceVersionMatch");
  if (auto l = param(r, "limit"); !l.empty()) {
    auto n = core::parseInt(l);
    if (!n.ok()) return sendError(w, badRequestError("invalid limit: " + l));
    lo.limit = *n;
  }
  auto list = store_.list(t.resource().type.key(), t.ns, lo);
  if (!list.ok()) return sendError(w, list.error());
  if (!table) return sendJson(w, 200, ObjectStore::listText(t.resource().type, *list));
  std::string text =
      tableText(t.resource(), list->items, list->resource_version,
                parseIncludeObject(param(r, "includeObject")), true, SysClock::now());
  if (!list->continue_token.empty()) {
    // Table lists page like plain lists.
    auto doc = nlohmann::ordered_json::parse(text);
    doc["metadata"]["continue"] = list->continue_token;
    if (list->remaining_item_count) {
      doc["metadata"]["remainingItemCount"] = *list->remaining_item_count;
    }
    text = doc.dump();
  }
  sendJson(w, 200, text);
}

void ApiServer::serveWatch(const Request& r, ResponseWriter& w, const Target& t, bool table) {
  WatchOptions wo;
  wo.resource_version = param(r, "resourceVersion");
  wo.label_selector = param(r, "labelSelector");
  wo.field_selector = param(r, "fieldSelector");
  wo.allow_bookmarks = truthy(param(r, "allowWatchBookmarks"));
  wo.send_initial_events = truthy(param(r, "sendInitialEvents"));
  std::optional<SysClock::time_point> deadline;
  if (auto ts = param(r, "timeoutSeconds"); !ts.empty()) {
    auto n = core::parseInt(ts);
    if (!n.ok() || *n < 0) return sendError(w, badRequestError("invalid timeoutSeconds: " + ts));
    if (*n > 0) deadline = SysClock::now() + std::chrono::seconds(*n);
  }
  // A name in the field selector narrows the watch as kubectl wait does.
  auto started = store_.watch(t.resource().type.key(), t.ns, wo);
  if (!started.ok()) return sendError(w, started.error());
  std::shared_ptr<Watch> watch = *started;
  if (!w.startStream(200, apiHeaders()).ok()) {
    watch->close();
    return;
  }
  // kube-apiserver sends a bookmark about 2 s before timeoutSeconds and about once a minute.
  std::optional<SysClock::time_point> bookmark_at;
  if (wo.allow_bookmarks) {
    bookmark_at = SysClock::now() + std::chrono::minutes(1);
    if (deadline && *deadline - std::chrono::seconds(2) < *bookmark_at) {
      bookmark_at = *deadline - std::chrono::seconds(2);
    }
  }
  const IncludeObject include = parseIncludeObject(param(r, "includeObject"));
  bool first = true;
  while (!w.closed()) {
    auto now = SysClock::now();
    if (deadline && now >= *deadline) break;
    if (bookmark_at && now >= *bookmark_at) {
      store_.sendBookmark(watch);
      bookmark_at = now + std::chrono::minutes(1);
      if (deadline && *bookmark_at >= *deadline) bookmark_at.reset();
    }
    auto wait = std::chrono::milliseconds(500);
    if (deadline) {
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now));
    }
    auto event = watch->next(std::max(wait, std::chrono::milliseconds(1)));
    if (!event) {
      if (watch->done()) break;
      continue;
    }
    std::string line;
    if (table &&
        (event->type == WatchEventType::kAdded || event->type == WatchEventType::kModified ||
         event->type == WatchEventType::kDeleted)) {
      line = "{\"type\":\"" + std::string(watchEventTypeName(event->type)) + "\",\"object\":" +
             tableText(t.resource(), {event->object}, event->object->resource_version, include,
                       first, SysClock::now()) +
             "}\n";
      first = false;
    } else {
      line = event->line();
    }
    if (!w.writeChunk(line).ok()) break;
  }
  watch->close();
  if (!w.closed()) (void)w.endStream();
}

void ApiServer::afterWrite(const ApiResource& resource, const StoredObject& object) {
  if (resource.type.key() == crdKey()) registerCrd(object.object, true);
}

void ApiServer::registerCrd(const json& crd, bool set_status) {
  auto resources = resourcesFromCrd(crd);
  if (!resources.ok()) {
    RM_LOG(WARN, LOCAL) << "CRD not served: " << resources.error().message();
    return;
  }
  // Versions no longer served disappear from discovery.
  for (const auto& existing : registry_.all()) {
    if (existing.type.key() != resources->storage.key()) continue;
    bool still = false;
    for (const auto& r : resources->served) still |= r.type.version == existing.type.version;
    if (!still)
      registry_.remove(existing.type.group, existing.type.version, existing.type.resource);
  }
  store_.registerType(resources->storage);
  for (auto& r : resources->served) registry_.add(std::move(r));
  if (!set_status) return;
  bool established = false;
  if (crd.contains("status") && crd["status"].contains("conditions")) {
    for (const auto& c : crd["status"]["conditions"]) {
      established |= c.value("type", "") == "Established" && c.value("status", "") == "True";
    }
  }
  if (established) return;
  const std::string name = crd["metadata"].value("name", "");
  auto patched =
      store_.patch(crdKey(), "", name, PatchType::kMerge,
                   crdStatusPatch(crd, formatTimestamp(SysClock::now())), Subresource::kStatus);
  if (!patched.ok()) {
    RM_LOG(WARN, LOCAL) << "CRD " << name << ": status not set: " << patched.error().message();
  }
}

void ApiServer::unregisterCrd(const json& crd) {
  auto resources = resourcesFromCrd(crd);
  if (!resources.ok()) return;
  for (const auto& existing : registry_.all()) {
    if (existing.type.key() == resources->storage.key()) {
      registry_.remove(existing.type.group, existing.type.version, existing.type.resource);
    }
  }
  store_.unregisterType(resources->storage.key());
}

}  // namespace ringmaster::local
