#pragma once
// FakeApiServer: an in-memory ApiClient that behaves like an API server for the calls the
// operator makes (unlike lib/kube's scripted FakeApiClient, calls need not be foreseen):
//   POST collection   create (409 AlreadyExists if the name is taken); sets uid,
//                     resourceVersion, creationTimestamp, generation
//   GET object        200 / 404;  GET /apis/<group>/<version>: 200 when that group is served
//   PUT object[/status]  409 Conflict on a stale resourceVersion; /status replaces only status
//   PATCH object      JSON merge patch (used for Event repeats)
//   DELETE object     removes it at once (no graceful deletion, no GC)
//   GET collection    a List (label selectors "key" and "key=value"; /api/v1/pods = all
//                     namespaces); watch() streams ADDED/MODIFIED/DELETED of later changes
// waitUntil() blocks until a predicate over the server holds (notified on every change), so
// tests that run the controller's threads wait without sleeping.
// Every call is recorded; failNext() makes the next matching call fail with a Status.
// Tests copy its state into informer Stores with syncTo() when they want the cache caught up,
// and leave them stale to simulate a lagging cache.
//
// Thread-safety: every method locks one mutex. Ownership: plain value owned by the test.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/clock.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/reflector.h"

namespace ringmaster::op::testing {

class FakeApiServer : public kube::ApiClient {
 public:
  explicit FakeApiServer(kube::Clock& clock) : clock_(clock) {}

  core::Result<kube::ApiResponse> request(const kube::ApiRequest& request) override;
  kube::ApiResult<std::unique_ptr<kube::WatchStream>> watch(const kube::ApiRequest& request,
                                                            kube::WatchSink& sink) override;
  const std::string& defaultNamespace() const override { return namespace_; }

  // Serves /apis/<group_version> (trainingjobs' group is always served).
  void serveGroup(const std::string& group_version);
  // The next call with this verb whose path starts with `path_prefix` answers `code`/`reason`.
  void failNext(kube::Verb verb, const std::string& path_prefix, int code, std::string reason);

  // Stores `object` (JSON) at `collection`/<name> as if created (uid etc. filled if missing).
  nlohmann::json put(const std::string& collection, nlohmann::json object);
  std::optional<nlohmann::json> get(const std::string& path) const;
  void erase(const std::string& path);
  // Every object whose path starts with `collection` + "/" (not deeper).
  std::vector<nlohmann::json> list(const std::string& collection) const;

  template <class T>
  std::vector<T> typed(const std::string& collection) const {
    std::vector<T> out;
    for (const nlohmann::json& j : list(collection)) {
      core::Result<T> t = kube::decode<T>(j);
      if (t.ok()) out.push_back(std::move(t).value());
    }
    return out;
  }
  template <class T>
  void syncTo(kube::Store<T>& store, const std::string& collection) const {
    store.replace(typed<T>(collection));
  }
  // The same into a store of what an informer keeps of each object (`project` of it).
  template <class T, class Cached>
  void syncTo(kube::Store<Cached>& store, const std::string& collection,
              Cached (*project)(const T&)) const {
    std::vector<Cached> cached;
    for (const T& object : typed<T>(collection)) cached.push_back(project(object));
    store.replace(std::move(cached));
  }

  // Waits until `done()` holds (checked after every change) or `timeout` passes.
  bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

  std::vector<kube::ApiRequest> calls() const;
  void clearCalls();
  // Calls with this verb whose path starts with `prefix`.
  int count(kube::Verb verb, const std::string& prefix) const;

 private:
  struct Failure {
    kube::Verb verb;
    std::string prefix;
    int code;
    std::string reason;
  };
  struct Watch {
    std::string collection;
    std::string selector;
    kube::WatchSink* sink;
  };
  class Stream;
  nlohmann::json createLocked(const std::string& collection, nlohmann::json object);
  void notifyLocked(const std::string& type, const std::string& collection,
                    const nlohmann::json& object);

  struct Change {
    int64_t resource_version;
    std::string type;
    std::string collection;
    nlohmann::json object;
  };
  std::vector<Change> history_;  // replayed to watches that start from an older version
  std::condition_variable changed_;
  uint64_t changes_ = 0;  // bumped by every call and change; waitUntil waits for a bump
  std::map<int, Watch> watches_;
  int next_watch_ = 0;

  kube::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> objects_;  // object path -> object
  std::set<std::string> groups_ = {"ringmaster.dev/v1alpha1"};
  std::vector<Failure> failures_;
  std::vector<kube::ApiRequest> calls_;
  int64_t resource_version_ = 100;
  int64_t uid_ = 0;
  std::string namespace_ = "default";
};

}  // namespace ringmaster::op::testing
