#pragma once
// Store<T> and Reflector<T>: a cache of one resource kept equal to the server by a Watcher
// (kube-runtime's reflector; client-go's informer store).
//
//   Store<T>      objects keyed "<namespace>/<name>" ("<name>" when cluster-scoped), handed out
//                 as shared_ptr<const T>: readers never mutate the cache and keep a consistent
//                 snapshot of an object while the store moves on.
//   Reflector<T>  a Watcher whose relists replace the store (objects that vanished while the
//                 watch was down are dropped) and whose events update it; then it calls the
//                 optional notify handler (to enqueue keys in a WorkQueue, say). Objects that
//                 do not decode as T are kept apart, as RawObjects with their error, in a
//                 second store (undecodable()): an object is in at most one of the two.
//                 The handler's optional transform trims each decoded object before the store
//                 and the handler see it (client-go's SetTransform). Reflector<T, Cached> goes
//                 further: its store holds a Cached made of each object by a projection, so a
//                 cache of thousands of pods holds a small type of the facts its reader uses,
//                 while the handler still sees the objects as decoded.
//
// Ownership: the Reflector owns its Watcher and Store. Thread-safety: Store is safe for any
// number of readers alongside the one writer (a shared mutex); the Reflector is driven by one
// thread (step()/run()), like the Watcher, and its notify handler runs on that thread after
// the stores have been updated. Failure: see Watcher; store() only ever holds decoded objects.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "ringmaster/kube/watcher.h"

namespace ringmaster::kube {

template <class T>
std::string objectKey(const T& object) {
  const std::string& ns = object.metadata.namespace_name;
  return ns.empty() ? object.metadata.name : ns + "/" + object.metadata.name;
}

template <class T>
class Store {
 public:
  std::shared_ptr<const T> get(const std::string& key) const {
    std::shared_lock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  std::shared_ptr<const T> get(const std::string& namespace_name, const std::string& name) const {
    return get(namespace_name.empty() ? name : namespace_name + "/" + name);
  }
  // Sorted by key.
  std::vector<std::shared_ptr<const T>> list() const {
    std::shared_lock lock(mu_);
    std::vector<std::shared_ptr<const T>> out;
    out.reserve(items_.size());
    for (const auto& [key, item] : items_) out.push_back(item);
    return out;
  }
  std::vector<std::string> keys() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, item] : items_) out.push_back(key);
    return out;
  }
  size_t size() const {
    std::shared_lock lock(mu_);
    return items_.size();
  }

  // Adds or replaces the object under its key.
  void put(T item) {
    std::string key = objectKey(item);
    auto value = std::make_shared<const T>(std::move(item));
    std::unique_lock lock(mu_);
    items_[std::move(key)] = std::move(value);
  }
  // Makes the store hold exactly `items`.
  void replace(std::vector<T> items) {
    std::map<std::string, std::shared_ptr<const T>> next;
    for (T& item : items) {
      std::string key = objectKey(item);
      next.emplace(std::move(key), std::make_shared<const T>(std::move(item)));
    }
    std::unique_lock lock(mu_);
    items_.swap(next);
  }
  void erase(const std::string& key) {
    std::unique_lock lock(mu_);
    items_.erase(key);
  }
  void apply(const WatchEvent<T>& event) {
    std::string key = objectKey(event.object);
    std::unique_lock lock(mu_);
    if (event.type == WatchEventType::kDeleted) {
      items_.erase(key);
    } else if (event.type == WatchEventType::kAdded || event.type == WatchEventType::kModified) {
      items_[key] = std::make_shared<const T>(event.object);
    }
  }

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const T>> items_;
};

template <class T, class Cached = T>
class Reflector {
 public:
  using Handler = typename Watcher<T>::Handler;
  using Options = typename Watcher<T>::Options;
  // What the store keeps of a decoded object; must keep its name and namespace (the key).
  using Project = std::function<Cached(const T&)>;

  // `notify` (both members optional) sees each relist and event after the store applied it.
  // Its transform, when set, trims each object before the store and the other members see it; it
  // must keep the metadata's name and namespace (the key). `project` is needed when Cached is
  // not T (else the store keeps a copy of each object).
  Reflector(ResourceClient<T> client, Options options, Handler notify = {}, Project project = {})
      : store_(std::make_shared<Store<Cached>>()),
        undecodable_(std::make_shared<Store<RawObject>>()),
        notify_(std::move(notify)),
        project_(std::move(project)),
        watcher_(std::move(client), makeHandler(), std::move(options)) {}

  // Shared so that readers may keep the store beyond the reflector's life.
  std::shared_ptr<const Store<Cached>> store() const { return store_; }
  // The objects the server holds that do not decode as T, each with its error.
  std::shared_ptr<const Store<RawObject>> undecodable() const { return undecodable_; }
  Watcher<T>& watcher() { return watcher_; }
  std::chrono::milliseconds step(std::stop_token stop = {}) { return watcher_.step(stop); }
  void run(std::stop_token stop) { watcher_.run(stop); }

 private:
  Handler makeHandler() {
    Handler h;
    h.relisted = [this](std::vector<T> items, std::vector<RawObject> undecodable) {
      std::vector<RawObject> undecodable_copy =
          notify_.relisted ? undecodable : std::vector<RawObject>();
      std::vector<Cached> cached;
      cached.reserve(items.size());
      for (const T& item : items) cached.push_back(project(item));
      store_->replace(std::move(cached));
      undecodable_->replace(std::move(undecodable));
      std::vector<T> copy = notify_.relisted ? std::move(items) : std::vector<T>();
      if (notify_.relisted) notify_.relisted(std::move(copy), std::move(undecodable_copy));
    };
    h.event = [this](const WatchEvent<T>& event) {
      undecodable_->erase(objectKey(event.object));
      if (event.type == WatchEventType::kDeleted) {
        store_->erase(objectKey(event.object));
      } else if (event.type == WatchEventType::kAdded || event.type == WatchEventType::kModified) {
        store_->put(project(event.object));
      }
      if (notify_.event) notify_.event(event);
    };
    h.undecodable = [this](const WatchEvent<RawObject>& event) {
      store_->erase(objectKey(event.object));
      undecodable_->apply(event);
      if (notify_.undecodable) notify_.undecodable(event);
    };
    h.transform = notify_.transform;
    return h;
  }

  Cached project(const T& object) const {
    if constexpr (std::is_same_v<Cached, T>) {
      if (!project_) return object;
    }
    return project_(object);
  }

  std::shared_ptr<Store<Cached>> store_;
  std::shared_ptr<Store<RawObject>> undecodable_;
  Handler notify_;
  Project project_;
  Watcher<T> watcher_;
};

}  // namespace ringmaster::kube
