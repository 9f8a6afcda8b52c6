#include "fake_api_server.h"

#include "ringmaster/kube/api_status.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::op::testing {
namespace {

kube::ApiResponse json(int code, const nlohmann::json& body) {
  return kube::ApiResponse{code, {{"Content-Type", "application/json"}}, kube::dumpJson(body)};
}

kube::ApiResponse failure(int code, const std::string& reason, const std::string& message) {
  return json(code, kube::encode(kube::ApiStatus::failure(code, reason, message)));
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Splits an object path into its collection, name and subresource ("" when absent).
struct Parsed {
  std::string collection;
  std::string name;
  std::string subresource;
  bool discovery = false;
};

Parsed parse(const std::string& path) {
  std::vector<std::string> s = split(path);
  Parsed p;
  size_t prefix = !s.empty() && s[0] == "api" ? 2 : 3;
  if (s.size() == prefix) {
    p.discovery = true;
    return p;
  }
  size_t collection_end = prefix + 1;
  if (s.size() > prefix + 2 && s[prefix] == "namespaces") collection_end = prefix + 3;
  for (size_t i = 0; i < collection_end && i < s.size(); ++i) p.collection += "/" + s[i];
  if (s.size() > collection_end) p.name = s[collection_end];
  if (s.size() > collection_end + 1) p.subresource = s[collection_end + 1];
  return p;
}

void mergePatch(nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = nlohmann::json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      mergePatch(target[key], value);
    }
  }
}

// "/api/v1/pods" (all namespaces) covers "/api/v1/namespaces/x/pods".
bool covers(const std::string& watched, const std::string& collection) {
  if (watched == collection) return true;
  std::vector<std::string> w = split(watched), c = split(collection);
  if (c.size() != w.size() + 2 || w.empty()) return false;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] != c[i]) return false;
  }
  return c[w.size() - 1] == "namespaces" && c.back() == w.back();
}

bool selected(const nlohmann::json& object, const std::string& selector) {
  if (selector.empty()) return true;
  const nlohmann::json labels = object["metadata"].value("labels", nlohmann::json::object());
  size_t eq = selector.find('=');
  std::string key = selector.substr(0, eq);
  if (!labels.contains(key)) return false;
  return eq == std::string::npos || labels[key] == selector.substr(eq + 1);
}

std::string queryValue(const kube::ApiRequest& request, const std::string& name) {
  for (const auto& [key, value] : request.query) {
    if (key == name) return value;
  }
  return {};
}

}  // namespace

class FakeApiServer::Stream : public kube::WatchStream {
 public:
  Stream(FakeApiServer* server, int id) : server_(server), id_(id) {}
  ~Stream() override { cancel(); }
  void cancel() override {
    std::lock_guard lock(server_->mu_);
    server_->watches_.erase(id_);
  }

 private:
  FakeApiServer* server_;
  int id_;
};

void FakeApiServer::notifyLocked(const std::string& type, const std::string& collection,
                                 const nlohmann::json& object) {
  history_.push_back({resource_version_, type, collection, object});
  ++changes_;
  for (auto& [id, w] : watches_) {
    if (covers(w.collection, collection) && selected(object, w.selector)) {
      w.sink->onLine(kube::dumpJson({{"type", type}, {"object", object}}));
    }
  }
  changed_.notify_all();
}

bool FakeApiServer::waitUntil(const std::function<bool()>& done,
                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  for (;;) {
    const uint64_t seen = changes_;
    lock.unlock();
    if (done()) return true;
    lock.lock();
    if (!changed_.wait_until(lock, deadline, [&] { return changes_ != seen; })) {
      lock.unlock();
      return done();
    }
  }
}

void FakeApiServer::serveGroup(const std::string& group_version) {
  std::lock_guard lock(mu_);
  groups_.insert(group_version);
}

void FakeApiServer::failNext(kube::Verb verb, const std::string& path_prefix, int code,
                             std::string reason) {
  std::lock_guard lock(mu_);
  failures_.push_back({verb, path_prefix, code, std::move(reason)});
}

nlohmann::json FakeApiServer::createLocked(const std::string& collection, nlohmann::json object) {
  nlohmann::json& meta = object["metadata"];
  std::vector<std::string> s = split(collection);
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == "namespaces") meta["namespace"] = s[i + 1];
  }
  if (!meta.contains("uid")) meta["uid"] = "uid-" + std::to_string(++uid_);
  if (!meta.contains("creationTimestamp")) {
    meta["creationTimestamp"] = kube::Time(clock_.wallNow()).toString();
  }
  if (!meta.contains("generation")) meta["generation"] = 1;
  meta["resourceVersion"] = std::to_string(++resource_version_);
  const std::string key = collection + "/" + meta["name"].get<std::string>();
  const bool existed = objects_.count(key) > 0;
  objects_[key] = object;
  notifyLocked(existed ? "MODIFIED" : "ADDED", collection, object);
  return object;
}

nlohmann::json FakeApiServer::put(const std::string& collection, nlohmann::json object) {
  std::lock_guard lock(mu_);
  return createLocked(collection, std::move(object));
}

std::optional<nlohmann::json> FakeApiServer::get(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(path);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

void FakeApiServer::erase(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(path);
  if (it == objects_.end()) return;
  nlohmann::json object = it->second;
  objects_.erase(it);
  object["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  notifyLocked("DELETED", path.substr(0, path.rfind('/')), object);
}

std::vector<nlohmann::json> FakeApiServer::list(const std::string& collection) const {
  std::lock_guard lock(mu_);
  std::vector<nlohmann::json> out;
  const std::string prefix = collection + "/";
  for (auto it = objects_.lower_bound(prefix); it != objects_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (it->first.find('/', prefix.size()) == std::string::npos) out.push_back(it->second);
  }
  return out;
}

std::vector<kube::ApiRequest> FakeApiServer::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

void FakeApiServer::clearCalls() {
  std::lock_guard lock(mu_);
  calls_.clear();
}

int FakeApiServer::count(kube::Verb verb, const std::string& prefix) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const kube::ApiRequest& r : calls_) {
    if (r.verb == verb && r.path.compare(0, prefix.size(), prefix) == 0) ++n;
  }
  return n;
}

core::Result<kube::ApiResponse> FakeApiServer::request(const kube::ApiRequest& request) {
  std::lock_guard lock(mu_);
  calls_.push_back(request);
  ++changes_;
  changed_.notify_all();
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if (it->verb == request.verb && request.path.compare(0, it->prefix.size(), it->prefix) == 0) {
      Failure f = *it;
      failures_.erase(it);
      if (f.code == 0) return core::unavailable("injected transport failure");
      return failure(f.code, f.reason, "injected " + f.reason);
    }
  }
  Parsed p = parse(request.path);
  if (p.discovery) {
    const std::string gv = request.path.substr(std::string("/apis/").size());
    if (groups_.count(gv)) return json(200, {{"kind", "APIResourceList"}, {"groupVersion", gv}});
    return failure(404, "NotFound", "the server could not find the requested resource");
  }
  const std::string key = p.collection + "/" + p.name;
  switch (request.verb) {
    case kube::Verb::kPost: {
      core::Result<nlohmann::json> body = kube::parseJson(request.body);
      if (!body.ok()) return failure(400, "BadRequest", body.status().message());
      const std::string name = (*body)["metadata"].value("name", "");
      if (objects_.count(p.collection + "/" + name)) {
        return failure(409, "AlreadyExists", "\"" + name + "\" already exists");
      }
      return json(201, createLocked(p.collection, *body));
    }
    case kube::Verb::kGet: {
      if (p.name.empty()) {
        nlohmann::json items = nlohmann::json::array();
        const std::string selector = queryValue(request, "labelSelector");
        for (const auto& [path, object] : objects_) {
          if (covers(p.collection, path.substr(0, path.rfind('/'))) && selected(object, selector)) {
            items.push_back(object);
          }
        }
        return json(200, {{"kind", "List"},
                          {"apiVersion", "v1"},
                          {"metadata", {{"resourceVersion", std::to_string(resource_version_)}}},
                          {"items", items}});
      }
      auto it = objects_.find(key);
      if (it == objects_.end()) return failure(404, "NotFound", "\"" + p.name + "\" not found");
      return json(200, it->second);
    }
    case kube::Verb::kPut: {
      auto it = objects_.find(key);
      if (it == objects_.end()) return failure(404, "NotFound", "\"" + p.name + "\" not found");
      core::Result<nlohmann::json> body = kube::parseJson(request.body);
      if (!body.ok()) return failure(400, "BadRequest", body.status().message());
      if ((*body)["metadata"].value("resourceVersion", "") !=
          it->second["metadata"]["resourceVersion"].get<std::string>()) {
        return failure(409, "Conflict", "the object has been modified");
      }
      if (p.subresource == "status") {
        it->second["status"] = (*body)["status"];
      } else {
        nlohmann::json status = it->second.value("status", nlohmann::json());
        nlohmann::json meta = it->second["metadata"];
        it->second = *body;
        it->second["metadata"] = meta;
        if (!status.is_null()) it->second["status"] = status;
      }
      it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
      notifyLocked("MODIFIED", p.collection, it->second);
      return json(200, it->second);
    }
    case kube::Verb::kPatch: {
      auto it = objects_.find(key);
      if (it == objects_.end()) return failure(404, "NotFound", "\"" + p.name + "\" not found");
      core::Result<nlohmann::json> body = kube::parseJson(request.body);
      if (!body.ok()) return failure(400, "BadRequest", body.status().message());
      mergePatch(it->second, *body);
      it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
      notifyLocked("MODIFIED", p.collection, it->second);
      return json(200, it->second);
    }
    case kube::Verb::kDelete: {
      auto it = objects_.find(key);
      if (it == objects_.end()) return failure(404, "NotFound", "\"" + p.name + "\" not found");
      nlohmann::json object = it->second;
      objects_.erase(it);
      object["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
      notifyLocked("DELETED", p.collection, object);
      return json(200, {{"kind", "Status"}, {"status", "Success"}});
    }
  }
  return failure(405, "MethodNotAllowed", "unsupported verb");
}

kube::ApiResult<std::unique_ptr<kube::WatchStream>> FakeApiServer::watch(
    const kube::ApiRequest& request, kube::WatchSink& sink) {
  std::lock_guard lock(mu_);
  calls_.push_back(request);
  ++changes_;
  changed_.notify_all();
  const int id = next_watch_++;
  Watch w{parse(request.path).collection, queryValue(request, "labelSelector"), &sink};
  // Replays what changed after the resourceVersion the watch starts from, as a server does.
  const std::string from = queryValue(request, "resourceVersion");
  const int64_t since = from.empty() ? resource_version_ : std::stoll(from);
  for (const Change& c : history_) {
    if (c.resource_version > since && covers(w.collection, c.collection) &&
        selected(c.object, w.selector)) {
      sink.onLine(kube::dumpJson({{"type", c.type}, {"object", c.object}}));
    }
  }
  watches_[id] = w;
  return std::unique_ptr<kube::WatchStream>(new Stream(this, id));
}

}  // namespace ringmaster::op::testing
