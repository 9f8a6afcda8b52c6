#include "local/store/object_store.h"

#include <algorithm>
#include <charconv>

#include "local/store/labels.h"
#include "local/store/metadata_limits.h"
#include "local/store/names.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local {

using nlohmann::json;

namespace {

// What one watch event costs the history's byte budget: its object as sent on the wire.
size_t historyBytes(const ObjectPtr& object) { return object ? object->text.size() : 0; }

const ResourceKey kNamespaces{"", "namespaces"};
constexpr const char* kForegroundDeletion = "foregroundDeletion";
constexpr const char* kContinueExpired =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";

const json& metaOf(const json& obj) {
  static const json kEmpty = json::object();
  auto it = obj.find("metadata");
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

std::string strField(const json& obj, const char* field) {
  auto it = obj.find(field);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool hasDeletionTimestamp(const json& obj) {
  const json& m = metaOf(obj);
  auto it = m.find("deletionTimestamp");
  return it != m.end() && !it->is_null();
}

std::vector<std::string> finalizersOf(const json& obj) {
  std::vector<std::string> out;
  const json& m = metaOf(obj);
  auto it = m.find("finalizers");
  if (it != m.end() && it->is_array()) {
    for (const json& f : *it) {
      if (f.is_string()) out.push_back(f.get<std::string>());
    }
  }
  return out;
}

void setFinalizers(json& obj, const std::vector<std::string>& finalizers) {
  if (finalizers.empty()) {
    obj["metadata"].erase("finalizers");
  } else {
    obj["metadata"]["finalizers"] = finalizers;
  }
}

// Everything but metadata and status: what bumps metadata.generation.
bool specEqual(const json& a, const json& b) {
  auto skip = [](const std::string& k) { return k == "metadata" || k == "status"; };
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (skip(it.key())) continue;
    auto other = b.find(it.key());
    if (other == b.end() || *other != *it) return false;
  }
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!skip(it.key()) && !a.contains(it.key())) return false;
  }
  return true;
}

std::optional<uint64_t> parseRv(const std::string& s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

StatusError unknownResource() {
  return StatusError(404, "NotFound", "the server could not find the requested resource");
}

// Checks kind/apiVersion of a body against the type, filling them in when absent.
std::optional<StatusError> checkTypeMeta(json& obj, const ResourceType& type) {
  std::string kind = strField(obj, "kind");
  std::string api_version = strField(obj, "apiVersion");
  if (!kind.empty() && kind != type.kind) {
    return badRequestError("the kind in the request body (" + kind +
                           ") does not match the resource's kind (" + type.kind + ")");
  }
  if (!api_version.empty() && api_version != type.apiVersion()) {
    return badRequestError("the API version in the data (" + api_version +
                           ") does not match the expected API version (" + type.apiVersion() + ")");
  }
  obj["kind"] = type.kind;
  obj["apiVersion"] = type.apiVersion();
  return std::nullopt;
}

std::string jsonQuote(const std::string& v) { return json(v).dump(); }

}  // namespace

ObjectStore::ObjectStore(ObjectStoreOptions options)
    : options_(std::move(options)),
      random_(options_.random_seed ? RandomSource(options_.random_seed) : RandomSource()) {}

ObjectStore::~ObjectStore() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& reg : watchers_) reg.watch->finish();
}

// ---------------------------------------------------------------- types

void ObjectStore::registerType(ResourceType type) {
  std::lock_guard<std::mutex> lock(mu_);
  ResourceKey key = type.key();
  types_[key] = std::move(type);
  buckets_[key];
}

std::optional<ResourceType> ObjectStore::findType(const ResourceKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* t = typeLocked(key);
  if (!t) return std::nullopt;
  return *t;
}

void ObjectStore::unregisterType(const ResourceKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = buckets_.find(key);
  if (b != buckets_.end()) {
    std::vector<ObjectPtr> all;
    for (const auto& [k, obj] : b->second.objects) all.push_back(obj);
    for (const auto& obj : all) deleteNowLocked(key, obj);
    buckets_.erase(key);
  }
  types_.erase(key);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->key == key) {
      it->watch->finish();
      it = watchers_.erase(it);
    } else {
      ++it;
    }
  }
}

const ResourceType* ObjectStore::typeLocked(const ResourceKey& key) const {
  auto it = types_.find(key);
  return it == types_.end() ? nullptr : &it->second;
}

std::string ObjectStore::storageKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

std::string ObjectStore::nowText() const { return formatTimestamp(options_.clock()); }

uint64_t ObjectStore::resourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

size_t ObjectStore::objectCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [k, b] : buckets_) n += b.objects.size();
  return n;
}

// ---------------------------------------------------------------- writes

void ObjectStore::setCommitListener(std::function<void(const ResourceKey&)> listener) {
  std::lock_guard lock(mu_);
  commit_listener_ = std::move(listener);
}

ObjectPtr ObjectStore::commitLocked(const ResourceKey& key, const std::string& storage_key,
                                    json obj, WatchEventType type, ObjectPtr prev) {
  uint64_t rv = rv_ + 1;
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  ObjectPtr stored = makeStoredObject(std::move(obj), rv);
  if (log_.isOpen()) {
    std::string record = "{\"rv\":" + std::to_string(rv) + ",\"g\":" + jsonQuote(key.group) +
                         ",\"r\":" + jsonQuote(key.resource) + ",\"k\":" + jsonQuote(storage_key) +
                         ",\"o\":" + (type == WatchEventType::kDeleted ? "null" : stored->text) +
                         "}";
    core::Status st = log_.append(record, options_.sync_every_write);
    if (!st.ok()) {
      log_error_ = st;
      RM_LOG(ERROR, LOCAL) << "store: " << st.toString();
      return nullptr;
    }
    ++log_records_;
  }
  rv_ = rv;
  Bucket& bucket = buckets_[key];
  std::string uid = strField(metaOf(stored->object), "uid");
  if (type == WatchEventType::kDeleted) {
    bucket.objects.erase(storage_key);
    if (!uid.empty()) by_uid_.erase(uid);
  } else {
    bucket.objects[storage_key] = stored;
    if (!uid.empty()) by_uid_[uid] = Locator{key, storage_key};
  }
  if (!gc_due_) gc_due_ = type == WatchEventType::kDeleted || mayMakeGarbageLocked(stored->object);
  history_.push_back(HistoryEntry{rv, type, key, storage_key, stored, prev});
  if (commit_listener_) commit_listener_(key);
  history_bytes_ += historyBytes(history_.back().object);
  while (history_.size() > options_.history_length ||
         (history_bytes_ > options_.history_bytes && history_.size() > 1)) {
    history_floor_ = history_.front().rv;
    history_bytes_ -= historyBytes(history_.front().object);
    history_.pop_front();
  }
  dispatchLocked(history_.back());
  if (log_.isOpen() && log_records_ >= options_.log_records_per_snapshot) {
    core::Status st = writeFileAtomic(dir_ / "snapshot.jsonl", snapshotTextLocked());
    if (st.ok()) st = log_.truncate();
    if (st.ok()) {
      log_records_ = 0;
    } else {
      RM_LOG(ERROR, LOCAL) << "store: snapshot: " << st.toString();
    }
  }
  return stored;
}

ObjectPtr ObjectStore::deleteNowLocked(const ResourceKey& key, ObjectPtr existing) {
  const json& m = metaOf(existing->object);
  std::string skey = storageKey(strField(m, "namespace"), strField(m, "name"));
  return commitLocked(key, skey, existing->object, WatchEventType::kDeleted, existing);
}

ApiResult<ObjectPtr> ObjectStore::create(const ResourceKey& key, const std::string& ns_in, json obj,
                                         const WriteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  if (!obj.is_object()) return badRequestError("the body of the request is not a JSON object");
  if (auto err = checkTypeMeta(obj, *type)) return *err;
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string ns = ns_in;
  if (type->namespaced) {
    std::string body_ns = strField(meta, "namespace");
    if (ns.empty()) ns = body_ns;
    if (!body_ns.empty() && body_ns != ns) {
      return badRequestError(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    if (ns.empty()) return badRequestError("a namespace is required for " + key.qualified());
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
    ns.clear();
  }
  Bucket& bucket = buckets_[key];
  std::string name = strField(meta, "name");
  if (name.empty()) {
    std::string prefix = strField(meta, "generateName");
    if (prefix.empty()) {
      return invalidError(type->kind, type->group, "",
                          {{"FieldValueRequired",
                            "Required value: name or generateName is required", "metadata.name"}});
    }
    for (int attempt = 0; attempt < 8; ++attempt) {
      name = prefix + random_.nameSuffix();
      if (!bucket.objects.count(storageKey(ns, name))) break;
    }
    meta["name"] = name;
  }
  if (type->namespaced && types_.count(kNamespaces)) {
    auto nsb = buckets_.find(kNamespaces);
    const StoredObject* found = nullptr;
    if (nsb != buckets_.end()) {
      auto it = nsb->second.objects.find(ns);
      if (it != nsb->second.objects.end()) found = it->second.get();
    }
    if (!found) return notFoundError(kNamespaces, ns);
    if (hasDeletionTimestamp(found->object)) {
      StatusError e = forbiddenError(
          key, name,
          "unable to create new content in namespace " + ns + " because it is being terminated");
      e.addCause({"NamespaceTerminating", "namespace " + ns + " is being terminated",
                  "metadata.namespace"});
      return e;
    }
  }
  if (auto causes = objectMetaNameCauses(*type, strField(meta, "generateName"), name, ns);
      !causes.empty()) {
    return invalidError(type->kind, type->group, name, std::move(causes));
  }
  if (auto causes = metadataLimitCauses(meta); !causes.empty()) {
    return invalidError(type->kind, type->group, name, std::move(causes));
  }
  if (auto causes = labelCauses(meta); !causes.empty()) {
    return invalidError(type->kind, type->group, name, std::move(causes));
  }
  std::string skey = storageKey(ns, name);
  if (bucket.objects.count(skey)) return alreadyExistsError(key, name);
  for (const char* f : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation"}) {
    meta.erase(f);
  }
  meta["uid"] = random_.uuid4();
  meta["creationTimestamp"] = nowText();
  if (type->tracks_generation) meta["generation"] = 1;
  if (type->has_status_subresource && !type->builtin) obj.erase("status");
  if (type->admit) {
    AdmitContext context{options.field_validation, false, {}};
    auto err = type->admit(obj, nullptr, context);
    if (options.warnings) {
      for (auto& w : context.warnings) options.warnings->push_back(std::move(w));
    }
    if (err) return *err;
  }
  if (options.dry_run) return makeStoredObject(std::move(obj), 0);
  ObjectPtr stored = commitLocked(key, skey, std::move(obj), WatchEventType::kAdded, nullptr);
  if (!stored) return internalError(log_error_.message());
  return stored;
}

ApiResult<ObjectPtr> ObjectStore::update(const ResourceKey& key, const std::string& ns,
                                         const std::string& name, json obj, Subresource sub,
                                         const WriteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  std::string effective_ns = type->namespaced ? ns : "";
  auto& objects = buckets_[key].objects;
  auto it = objects.find(storageKey(effective_ns, name));
  if (it == objects.end()) return notFoundError(key, name);
  return updateLocked(*type, effective_ns, name, std::move(obj), sub, it->second, options);
}

ApiResult<ObjectPtr> ObjectStore::patch(const ResourceKey& key, const std::string& ns,
                                        const std::string& name, PatchType patch_type,
                                        std::string_view body, Subresource sub,
                                        const WriteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  if (patch_type == PatchType::kStrategicMerge && !type->strategic_merge_patch) {
    return customResourcePatchTypeError();
  }
  std::string effective_ns = type->namespaced ? ns : "";
  auto& objects = buckets_[key].objects;
  auto it = objects.find(storageKey(effective_ns, name));
  if (it == objects.end()) return notFoundError(key, name);
  ObjectPtr existing = it->second;
  auto patched = applyPatch(patch_type, existing->object, body);
  if (!patched.ok()) return patched.error();
  return updateLocked(*type, effective_ns, name, std::move(patched).value(), sub, existing,
                      options);
}

ApiResult<ObjectPtr> ObjectStore::mutate(const ResourceKey& key, const std::string& ns,
                                         const std::string& name, const MutateFn& fn,
                                         Subresource sub, const WriteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  std::string effective_ns = type->namespaced ? ns : "";
  auto& objects = buckets_[key].objects;
  auto it = objects.find(storageKey(effective_ns, name));
  if (it == objects.end()) return notFoundError(key, name);
  ObjectPtr existing = it->second;
  json obj = existing->object;
  if (auto err = fn(obj)) return *err;
  return updateLocked(*type, effective_ns, name, std::move(obj), sub, existing, options);
}

ApiResult<ObjectPtr> ObjectStore::updateLocked(const ResourceType& type, const std::string& ns,
                                               const std::string& name, json obj, Subresource sub,
                                               ObjectPtr existing, const WriteOptions& options) {
  if (!obj.is_object()) return badRequestError("the body of the request is not a JSON object");
  if (auto err = checkTypeMeta(obj, type)) return *err;
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string body_name = strField(meta, "name");
  if (!body_name.empty() && body_name != name) {
    return badRequestError("the name of the object (" + body_name +
                           ") does not match the name on the URL (" + name + ")");
  }
  std::string body_ns = strField(meta, "namespace");
  if (type.namespaced && !body_ns.empty() && body_ns != ns) {
    return badRequestError(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  std::string want_rv = strField(meta, "resourceVersion");
  if (!want_rv.empty() && want_rv != std::to_string(existing->resource_version)) {
    return conflictError(type.key(), name, kModifiedConflict);
  }
  const json& old = existing->object;
  json next;
  if (sub == Subresource::kStatus) {
    next = old;
    auto status = obj.find("status");
    if (status != obj.end()) {
      next["status"] = *status;
    } else {
      next.erase("status");
    }
  } else {
    next = std::move(obj);
    json& nm = next["metadata"];
    const json& om = metaOf(old);
    nm["name"] = name;
    if (type.namespaced) nm["namespace"] = ns;
    for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"}) {
      auto o = om.find(f);
      if (o != om.end()) {
        nm[f] = *o;
      } else {
        nm.erase(f);
      }
    }
    if (type.has_status_subresource && sub == Subresource::kMain) {
      auto status = old.find("status");
      if (status != old.end()) {
        next["status"] = *status;
      } else {
        next.erase("status");
      }
    }
    if (type.tracks_generation && !specEqual(old, next)) {
      nm["generation"] = om.value("generation", int64_t{0}) + 1;
    }
  }
  next["metadata"]["resourceVersion"] = std::to_string(existing->resource_version);
  if (auto causes = metadataLimitCauses(next["metadata"]); !causes.empty()) {
    return invalidError(type.kind, type.group, name, std::move(causes));
  }
  if (auto causes = labelCauses(next["metadata"]); !causes.empty()) {
    return invalidError(type.kind, type.group, name, std::move(causes));
  }
  if (type.admit) {
    AdmitContext context{options.field_validation, sub == Subresource::kStatus, {}};
    auto err = type.admit(next, &old, context);
    if (options.warnings) {
      for (auto& w : context.warnings) options.warnings->push_back(std::move(w));
    }
    if (err) return *err;
  }
  if (next == old) return existing;  // no-op: no write, same resourceVersion (e3)
  if (options.dry_run) return makeStoredObject(std::move(next), existing->resource_version);
  std::string skey = storageKey(type.namespaced ? ns : "", name);
  if (hasDeletionTimestamp(next) && finalizersOf(next).empty() && !(type.key() == kNamespaces)) {
    // The last finalizer is gone: delete now. The answer is the written state, the DELETED
    // event carries the last stored one.
    if (!deleteNowLocked(type.key(), existing)) return internalError(log_error_.message());
    return makeStoredObject(std::move(next), existing->resource_version);
  }
  ObjectPtr stored =
      commitLocked(type.key(), skey, std::move(next), WatchEventType::kModified, existing);
  if (!stored) return internalError(log_error_.message());
  return stored;
}

// ---------------------------------------------------------------- delete

ApiResult<DeleteResult> ObjectStore::remove(const ResourceKey& key, const std::string& ns,
                                            const std::string& name, const DeleteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  auto& objects = buckets_[key].objects;
  auto it = objects.find(storageKey(type->namespaced ? ns : "", name));
  if (it == objects.end()) return notFoundError(key, name);
  return removeLocked(*type, it->second, options);
}

ApiResult<DeleteResult> ObjectStore::removeLocked(const ResourceType& type, ObjectPtr existing,
                                                  const DeleteOptions& options) {
  const json& old = existing->object;
  const json& om = metaOf(old);
  std::string name = strField(om, "name");
  std::string uid = strField(om, "uid");
  std::string ns = strField(om, "namespace");
  std::string skey = storageKey(ns, name);
  ResourceKey key = type.key();
  if (options.precondition_uid && *options.precondition_uid != uid) {
    return preconditionError(key, type.kind, name, "UID", *options.precondition_uid, uid);
  }
  if (options.precondition_resource_version &&
      *options.precondition_resource_version != std::to_string(existing->resource_version)) {
    return preconditionError(key, type.kind, name, "ResourceVersion",
                             *options.precondition_resource_version,
                             std::to_string(existing->resource_version));
  }
  std::string policy =
      options.propagation_policy.empty() ? "Background" : options.propagation_policy;
  if (policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    return invalidError("DeleteOptions", "meta.k8s.io", "",
                        {{"FieldValueNotSupported",
                          "Unsupported value: \"" + policy +
                              "\": supported values: \"Foreground\", \"Background\", \"Orphan\"",
                          "propagationPolicy"}});
  }
  auto write = [&](json next) -> ApiResult<DeleteResult> {
    ObjectPtr stored =
        commitLocked(key, skey, std::move(next), WatchEventType::kModified, existing);
    if (!stored) return internalError(log_error_.message());
    return DeleteResult{stored, false, std::nullopt};
  };

  if (key == kNamespaces) {
    if (name == "default" || name == "kube-system" || name == "kube-public") {
      return forbiddenError(key, name, "this namespace may not be deleted");
    }
    if (hasDeletionTimestamp(old)) return DeleteResult{existing, false, std::nullopt};
    json next = old;
    next["metadata"]["deletionTimestamp"] = nowText();
    next["metadata"]["deletionGracePeriodSeconds"] = 0;
    next["spec"]["finalizers"] = json::array({"kubernetes"});
    next["status"]["phase"] = "Terminating";
    return write(std::move(next));
  }

  if (policy == "Orphan") {
    for (auto& [dep_key, dep] : dependentsLocked(uid)) {
      json next = dep->object;
      json refs = json::array();
      for (const json& ref : next["metadata"]["ownerReferences"]) {
        if (strField(ref, "uid") != uid) refs.push_back(ref);
      }
      if (refs.empty()) {
        next["metadata"].erase("ownerReferences");
      } else {
        next["metadata"]["ownerReferences"] = std::move(refs);
      }
      const json& dm = metaOf(dep->object);
      commitLocked(dep_key, storageKey(strField(dm, "namespace"), strField(dm, "name")),
                   std::move(next), WatchEventType::kModified, dep);
    }
  }

  std::vector<std::string> finalizers = finalizersOf(old);
  if (hasDeletionTimestamp(old)) {
    // Already being deleted: a shorter grace period may finish a graceful deletion; a
    // foreground request adds its finalizer; otherwise nothing changes.
    if (type.graceful_deletion && options.grace_period_seconds &&
        *options.grace_period_seconds == 0 && finalizers.empty()) {
      ObjectPtr gone = deleteNowLocked(key, existing);
      if (!gone) return internalError(log_error_.message());
      return DeleteResult{gone, true, std::nullopt};
    }
    if (policy == "Foreground" &&
        std::find(finalizers.begin(), finalizers.end(), kForegroundDeletion) == finalizers.end()) {
      json next = old;
      finalizers.push_back(kForegroundDeletion);
      setFinalizers(next, finalizers);
      return write(std::move(next));
    }
    return DeleteResult{existing, false, std::nullopt};
  }

  if (type.graceful_deletion) {
    int64_t grace = 30;
    auto spec = old.find("spec");
    if (spec != old.end() && spec->is_object()) {
      grace = spec->value("terminationGracePeriodSeconds", int64_t{30});
    }
    if (options.grace_period_seconds) grace = *options.grace_period_seconds;
    std::string phase =
        old.contains("status") && old["status"].is_object() ? strField(old["status"], "phase") : "";
    bool bound = spec != old.end() && spec->is_object() && !strField(*spec, "nodeName").empty();
    if (!bound || phase == "Succeeded" || phase == "Failed") grace = 0;
    if (grace > 0) {
      json next = old;
      if (policy == "Foreground") {
        finalizers.push_back(kForegroundDeletion);
        setFinalizers(next, finalizers);
      }
      next["metadata"]["deletionTimestamp"] =
          formatTimestamp(options_.clock() + std::chrono::seconds(grace));
      next["metadata"]["deletionGracePeriodSeconds"] = grace;
      return write(std::move(next));
    }
  }

  if (policy == "Foreground") finalizers.push_back(kForegroundDeletion);
  if (!finalizers.empty()) {
    json next = old;
    setFinalizers(next, finalizers);
    next["metadata"]["deletionTimestamp"] = nowText();
    next["metadata"]["deletionGracePeriodSeconds"] = 0;
    if (type.tracks_generation && om.contains("generation")) {
      next["metadata"]["generation"] = om.value("generation", int64_t{0}) + 1;
    }
    return write(std::move(next));
  }

  ObjectPtr gone = deleteNowLocked(key, existing);
  if (!gone) return internalError(log_error_.message());
  DeleteResult result{gone, true, std::nullopt};
  if (!type.return_deleted_object) {
    StatusError ok;
    ok.asSuccess().withDetails(name, key.group, key.resource).withUid(uid);
    result.status = ok;
  }
  return result;
}

// ---------------------------------------------------------------- garbage collection

std::vector<std::pair<ResourceKey, ObjectPtr>> ObjectStore::dependentsLocked(
    const std::string& uid) const {
  std::vector<std::pair<ResourceKey, ObjectPtr>> out;
  for (const auto& [key, bucket] : buckets_) {
    for (const auto& [skey, obj] : bucket.objects) {
      const json& m = metaOf(obj->object);
      auto refs = m.find("ownerReferences");
      if (refs == m.end() || !refs->is_array()) continue;
      for (const json& ref : *refs) {
        if (strField(ref, "uid") == uid) {
          out.emplace_back(key, obj);
          break;
        }
      }
    }
  }
  return out;
}

bool ObjectStore::uidExistsLocked(const std::string& uid) const { return by_uid_.count(uid) > 0; }

bool ObjectStore::mayMakeGarbageLocked(const json& object) const {
  if (hasDeletionTimestamp(object)) return true;
  const json& m = metaOf(object);
  auto refs = m.find("ownerReferences");
  if (refs == m.end() || !refs->is_array()) return false;
  for (const json& ref : *refs) {
    if (!uidExistsLocked(strField(ref, "uid"))) return true;
  }
  return false;
}

size_t ObjectStore::gcPassLocked() {
  size_t writes = 0;
  auto current = [&](const ResourceKey& key, const ObjectPtr& obj) {
    auto b = buckets_.find(key);
    if (b == buckets_.end()) return false;
    const json& m = metaOf(obj->object);
    auto it = b->second.objects.find(storageKey(strField(m, "namespace"), strField(m, "name")));
    return it != b->second.objects.end() && it->second == obj;
  };
  auto deleteBackground = [&](const ResourceKey& key, const ObjectPtr& obj) {
    const ResourceType* type = typeLocked(key);
    if (type) {
      auto r = removeLocked(*type, obj, DeleteOptions{});
      if (!r.ok()) {
        RM_LOG(WARN, LOCAL) << "gc: delete " << key.qualified() << ": " << r.error().message();
        return;
      }
    } else if (!deleteNowLocked(key, obj)) {
      return;
    }
    ++writes;
  };

  std::vector<std::pair<ResourceKey, ObjectPtr>> all;
  for (const auto& [key, bucket] : buckets_) {
    for (const auto& [skey, obj] : bucket.objects) all.emplace_back(key, obj);
  }

  // Terminating namespaces: delete their content, then the namespace.
  for (const auto& [key, ns_obj] : all) {
    if (!(key == kNamespaces) || !hasDeletionTimestamp(ns_obj->object)) continue;
    if (!current(key, ns_obj)) continue;
    std::string ns = strField(metaOf(ns_obj->object), "name");
    std::string prefix = ns + "/";
    bool empty = true;
    for (const auto& [okey, obj] : all) {
      if (okey == kNamespaces || strField(metaOf(obj->object), "namespace") != ns) continue;
      if (!current(okey, obj)) continue;
      empty = false;
      if (!hasDeletionTimestamp(obj->object)) deleteBackground(okey, obj);
    }
    if (empty) {
      if (deleteNowLocked(key, ns_obj)) ++writes;
    }
  }

  for (const auto& [key, obj] : all) {
    if (!current(key, obj)) continue;
    const json& m = metaOf(obj->object);
    std::string uid = strField(m, "uid");
    std::vector<std::string> finalizers = finalizersOf(obj->object);

    // Foreground deletion: delete dependents, drop the finalizer once none block.
    if (hasDeletionTimestamp(obj->object) &&
        std::find(finalizers.begin(), finalizers.end(), kForegroundDeletion) != finalizers.end()) {
      bool blocked = false;
      for (auto& [dkey, dep] : dependentsLocked(uid)) {
        if (!hasDeletionTimestamp(dep->object)) deleteBackground(dkey, dep);
        auto b = buckets_.find(dkey);
        const json& dm = metaOf(dep->object);
        if (b == buckets_.end() ||
            !b->second.objects.count(storageKey(strField(dm, "namespace"), strField(dm, "name"))))
          continue;
        for (const json& ref : dm["ownerReferences"]) {
          if (strField(ref, "uid") == uid && ref.value("blockOwnerDeletion", false)) blocked = true;
        }
      }
      if (!blocked && current(key, obj)) {
        json next = obj->object;
        finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), kForegroundDeletion),
                         finalizers.end());
        setFinalizers(next, finalizers);
        const ResourceType* type = typeLocked(key);
        if (type) {
          auto r = updateLocked(*type, strField(m, "namespace"), strField(m, "name"),
                                std::move(next), Subresource::kMain, obj);
          if (r.ok()) ++writes;
        }
      }
      continue;
    }

    // Owner references: all owners gone -> delete; some gone -> drop the dangling ones.
    auto refs = m.find("ownerReferences");
    if (refs == m.end() || !refs->is_array() || refs->empty()) continue;
    json solid = json::array();
    for (const json& ref : *refs) {
      if (uidExistsLocked(strField(ref, "uid"))) solid.push_back(ref);
    }
    if (solid.size() == refs->size()) continue;
    if (solid.empty()) {
      if (!hasDeletionTimestamp(obj->object)) deleteBackground(key, obj);
      continue;
    }
    json next = obj->object;
    next["metadata"]["ownerReferences"] = std::move(solid);
    if (commitLocked(key, storageKey(strField(m, "namespace"), strField(m, "name")),
                     std::move(next), WatchEventType::kModified, obj)) {
      ++writes;
    }
  }
  return writes;
}

size_t ObjectStore::collectGarbage() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!gc_due_) return 0;
  ++gc_scans_;
  size_t total = 0;
  for (int pass = 0; pass < 100; ++pass) {
    gc_due_ = false;  // the pass's own writes set it again
    size_t n = gcPassLocked();
    total += n;
    if (n == 0) return total;  // a fixed point: nothing wrote, nothing flagged it again
  }
  gc_due_ = true;
  return total;
}

uint64_t ObjectStore::garbageScans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gc_scans_;
}

// ---------------------------------------------------------------- reads

ApiResult<ObjectPtr> ObjectStore::get(const ResourceKey& key, const std::string& ns,
                                      const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  auto b = buckets_.find(key);
  if (b == buckets_.end()) return notFoundError(key, name);
  auto it = b->second.objects.find(storageKey(type->namespaced ? ns : "", name));
  if (it == b->second.objects.end()) return notFoundError(key, name);
  return it->second;
}

ApiResult<ListResult> ObjectStore::list(const ResourceKey& key, const std::string& ns,
                                        const ListOptions& options) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  auto labels = LabelSelector::parse(options.label_selector);
  if (!labels.ok()) return labels.error();
  auto fields = FieldSelector::parse(options.field_selector, *type);
  if (!fields.ok()) return fields.error();
  bool filtered = !labels->empty() || !fields->empty();

  uint64_t snapshot = rv_;
  int64_t limit = options.limit;
  std::string start;
  if (!options.continue_token.empty()) {
    if (!options.resource_version.empty()) {
      return badRequestError("specifying resource version is not allowed when using continue");
    }
    auto token = decodeContinueToken(options.continue_token);
    if (!token)
      return badRequestError(
          "continue key is not valid: incorrect encoded start resourceVersion (version "
          "meta.k8s.io/v1)");
    start = token->start;
    if (token->rv >= 0) {
      if (static_cast<uint64_t>(token->rv) < history_floor_) {
        StatusError e = expiredError(kContinueExpired);
        e.withContinue(encodeContinueToken({-1, token->start}));
        return e;
      }
      snapshot = std::min<uint64_t>(static_cast<uint64_t>(token->rv), rv_);
    }
  } else if (options.resource_version == "0") {
    limit = 0;  // served from the watch cache upstream: no paging
  } else if (!options.resource_version.empty()) {
    auto want = parseRv(options.resource_version);
    if (!want) {
      return badRequestError("invalid resource version: \"" + options.resource_version + "\"");
    }
    if (*want > rv_) return tooLargeResourceVersionError(*want, rv_);
    if (options.resource_version_match == "Exact") {
      if (*want < history_floor_) {
        return expiredError("The resourceVersion for the provided list is too old.");
      }
      snapshot = *want;
    }
  }

  std::string prefix = type->namespaced && !ns.empty() ? ns + "/" : "";
  std::map<std::string, ObjectPtr> rolled;  // the range as of `snapshot`, when older than now
  const std::map<std::string, ObjectPtr>* view = nullptr;
  static const std::map<std::string, ObjectPtr> kEmpty;
  auto b = buckets_.find(key);
  view = b == buckets_.end() ? &kEmpty : &b->second.objects;
  if (snapshot < rv_) {
    std::map<std::string, ObjectPtr> overrides;
    for (auto h = history_.rbegin(); h != history_.rend() && h->rv > snapshot; ++h) {
      if (h->key == key) overrides[h->storage_key] = h->prev;
    }
    if (!overrides.empty()) {
      for (auto it = view->lower_bound(prefix);
           it != view->end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        rolled.insert(*it);
      }
      for (auto& [k, v] : overrides) {
        if (k.compare(0, prefix.size(), prefix) != 0) continue;
        if (v) {
          rolled[k] = v;
        } else {
          rolled.erase(k);
        }
      }
      view = &rolled;
    }
  }

  ListResult result;
  result.resource_version = snapshot;
  std::string last_key;
  int64_t remaining = 0;
  bool more = false;
  for (auto it = view->lower_bound(prefix + start);
       it != view->end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const ObjectPtr& obj = it->second;
    if (filtered) {
      const json& m = metaOf(obj->object);
      auto lbl = m.find("labels");
      if (!labels->matches(lbl == m.end() ? json() : *lbl)) continue;
      if (!fields->matches(obj->object)) continue;
    }
    if (limit > 0 && static_cast<int64_t>(result.items.size()) >= limit) {
      more = true;
      if (filtered) break;
      ++remaining;
      continue;
    }
    result.items.push_back(obj);
    last_key = it->first.substr(prefix.size());
  }
  if (more) {
    result.continue_token =
        encodeContinueToken({static_cast<int64_t>(snapshot), last_key + std::string(1, '\0')});
    if (!filtered) result.remaining_item_count = remaining;
  }
  return result;
}

std::string ObjectStore::listText(const ResourceType& type, const ListResult& list) {
  size_t size = 256;
  for (const auto& item : list.items) size += item->text.size() + 1;
  std::string items;
  items.reserve(size);
  items += '[';
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i) items += ',';
    items += list.items[i]->text;
  }
  items += ']';
  std::string rv = "\"" + std::to_string(list.resource_version) + "\"";
  std::string out;
  out.reserve(size);
  if (type.builtin) {
    out += "{\"kind\":" + jsonQuote(type.listKind()) +
           ",\"apiVersion\":" + jsonQuote(type.apiVersion()) +
           ",\"metadata\":{\"resourceVersion\":" + rv;
    if (!list.continue_token.empty()) out += ",\"continue\":" + jsonQuote(list.continue_token);
    if (list.remaining_item_count) {
      out += ",\"remainingItemCount\":" + std::to_string(*list.remaining_item_count);
    }
    out += "},\"items\":";
    out += items;
    out += "}";
  } else {
    out += "{\"apiVersion\":" + jsonQuote(type.apiVersion()) + ",\"items\":";
    out += items;
    out += ",\"kind\":" + jsonQuote(type.listKind()) +
           ",\"metadata\":{\"continue\":" + jsonQuote(list.continue_token);
    if (list.remaining_item_count) {
      out += ",\"remainingItemCount\":" + std::to_string(*list.remaining_item_count);
    }
    out += ",\"resourceVersion\":" + rv + "}}";
  }
  return out;
}

// ---------------------------------------------------------------- watch

bool ObjectStore::matches(const Registration& reg, const ObjectPtr& obj) const {
  const json& m = metaOf(obj->object);
  if (!reg.ns.empty() && strField(m, "namespace") != reg.ns) return false;
  if (!reg.labels.empty()) {
    auto lbl = m.find("labels");
    if (!reg.labels.matches(lbl == m.end() ? json() : *lbl)) return false;
  }
  return reg.fields.empty() || reg.fields.matches(obj->object);
}

std::optional<WatchEvent> ObjectStore::filterEvent(const Registration& reg,
                                                   const HistoryEntry& entry) const {
  if (!(entry.key == reg.key)) return std::nullopt;
  switch (entry.type) {
    case WatchEventType::kAdded:
      if (matches(reg, entry.object)) return WatchEvent{WatchEventType::kAdded, entry.object};
      return std::nullopt;
    case WatchEventType::kDeleted:
      if (matches(reg, entry.object)) return WatchEvent{WatchEventType::kDeleted, entry.object};
      return std::nullopt;
    case WatchEventType::kModified: {
      bool now = matches(reg, entry.object);
      bool before = entry.prev && matches(reg, entry.prev);
      if (now && before) return WatchEvent{WatchEventType::kModified, entry.object};
      if (now) return WatchEvent{WatchEventType::kAdded, entry.object};
      if (before) {
        // Left the selector: DELETED with the previous content at this event's RV (as the
        // apiserver's watch cache does).
        json last = entry.prev->object;
        last["metadata"]["resourceVersion"] = std::to_string(entry.rv);
        return WatchEvent{WatchEventType::kDeleted, makeStoredObject(std::move(last), entry.rv)};
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

void ObjectStore::dispatchLocked(const HistoryEntry& entry) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->watch->closed()) {
      it = watchers_.erase(it);
      continue;
    }
    if (auto ev = filterEvent(*it, entry)) {
      if (!it->watch->push(std::move(*ev))) {
        RM_LOG(INFO, WATCH) << "store: dropping a slow watch on " << it->key.qualified()
                            << " (queue full)";
        it = watchers_.erase(it);
        continue;
      }
    }
    ++it;
  }
}

ObjectPtr ObjectStore::bookmarkObject(const Registration& reg) const {
  json obj = {{"apiVersion", reg.api_version},
              {"kind", reg.kind},
              {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  return makeStoredObject(std::move(obj), rv_);
}

ApiResult<std::shared_ptr<Watch>> ObjectStore::watch(const ResourceKey& key, const std::string& ns,
                                                     const WatchOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const ResourceType* type = typeLocked(key);
  if (!type) return unknownResource();
  auto labels = LabelSelector::parse(options.label_selector);
  if (!labels.ok()) return labels.error();
  auto fields = FieldSelector::parse(options.field_selector, *type);
  if (!fields.ok()) return fields.error();
  Registration reg{std::make_shared<Watch>(options_.watch_queue_capacity),
                   key,
                   type->apiVersion(),
                   type->kind,
                   type->namespaced ? ns : "",
                   std::move(labels).value(),
                   std::move(fields).value(),
                   options.allow_bookmarks};
  auto& w = reg.watch;
  const std::string& rv_text = options.resource_version;
  if (options.send_initial_events || rv_text.empty() || rv_text == "0") {
    auto b = buckets_.find(key);
    if (b != buckets_.end()) {
      std::string prefix = reg.ns.empty() ? "" : reg.ns + "/";
      for (auto it = b->second.objects.lower_bound(prefix);
           it != b->second.objects.end() && it->first.compare(0, prefix.size(), prefix) == 0;
           ++it) {
        if (matches(reg, it->second)) w->pushInitial({WatchEventType::kAdded, it->second});
      }
    }
    if (options.send_initial_events && options.allow_bookmarks) {
      json obj = {{"apiVersion", reg.api_version},
                  {"kind", reg.kind},
                  {"metadata",
                   {{"resourceVersion", std::to_string(rv_)},
                    {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
      w->pushInitial({WatchEventType::kBookmark, makeStoredObject(std::move(obj), rv_)});
    }
  } else {
    auto from = parseRv(rv_text);
    if (!from) return badRequestError("invalid resource version: \"" + rv_text + "\"");
    if (*from < history_floor_) {
      StatusError e = expiredError("too old resource version: " + rv_text + " (" +
                                   std::to_string(history_floor_) + ")");
      auto status = std::make_shared<StoredObject>();
      status->text = e.bodyText();
      status->object = e.body();
      w->pushInitial({WatchEventType::kError, status});
      w->finish();
      return w;
    }
    auto first = std::partition_point(history_.begin(), history_.end(),
                                      [&](const HistoryEntry& h) { return h.rv <= *from; });
    for (auto it = first; it != history_.end(); ++it) {
      if (auto ev = filterEvent(reg, *it)) w->pushInitial(std::move(*ev));
    }
  }
  auto result = w;
  watchers_.push_back(std::move(reg));
  return result;
}

void ObjectStore::sendBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->watch->closed()) {
      it = watchers_.erase(it);
      continue;
    }
    if (it->allow_bookmarks) it->watch->push({WatchEventType::kBookmark, bookmarkObject(*it)});
    ++it;
  }
}

void ObjectStore::sendBookmark(const std::shared_ptr<Watch>& watch) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& reg : watchers_) {
    if (reg.watch == watch && reg.allow_bookmarks) {
      reg.watch->push({WatchEventType::kBookmark, bookmarkObject(reg)});
    }
  }
}

// ---------------------------------------------------------------- persistence

std::string ObjectStore::snapshotTextLocked() const {
  std::string out = "{\"format\":1,\"rv\":" + std::to_string(rv_) + "}\n";
  for (const auto& [key, bucket] : buckets_) {
    std::string head =
        "{\"g\":" + jsonQuote(key.group) + ",\"r\":" + jsonQuote(key.resource) + ",\"o\":";
    for (const auto& [skey, obj] : bucket.objects) {
      out += head;
      out += obj->text;
      out += "}\n";
    }
  }
  return out;
}

void ObjectStore::resetLocked() {
  for (auto& [key, bucket] : buckets_) bucket.objects.clear();
  by_uid_.clear();
  history_.clear();
  history_bytes_ = 0;
  for (auto& reg : watchers_) reg.watch->finish();
  watchers_.clear();
  rv_ = 0;
  gc_due_ = true;  // what is loaded next may hold garbage that no pass has seen
}

core::Status ObjectStore::applyLogRecordLocked(std::string_view line) {
  json rec = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!rec.is_object() || !rec.contains("rv") || !rec["rv"].is_number_unsigned()) {
    return core::dataLoss("unreadable log record");
  }
  uint64_t rv = rec["rv"].get<uint64_t>();
  if (rv <= rv_) return core::Status::Ok();  // already in the snapshot
  ResourceKey key{rec.value("g", ""), rec.value("r", "")};
  std::string skey = rec.value("k", "");
  Bucket& bucket = buckets_[key];
  auto old = bucket.objects.find(skey);
  if (old != bucket.objects.end()) {
    by_uid_.erase(strField(metaOf(old->second->object), "uid"));
    bucket.objects.erase(old);
  }
  if (rec["o"].is_object()) {
    ObjectPtr stored = makeStoredObject(std::move(rec["o"]), rv);
    std::string uid = strField(metaOf(stored->object), "uid");
    if (!uid.empty()) by_uid_[uid] = Locator{key, skey};
    bucket.objects[skey] = std::move(stored);
  }
  rv_ = rv;
  return core::Status::Ok();
}

core::Status ObjectStore::loadLocked(const std::filesystem::path& dir, size_t* wal_bytes) {
  resetLocked();
  bool header = true;
  size_t snapshot_bytes = 0;
  RM_RETURN_IF_ERROR(readLines(
      dir / "snapshot.jsonl",
      [&](std::string_view line) -> core::Status {
        json rec = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!rec.is_object()) return core::dataLoss("unreadable snapshot record");
        if (header) {
          header = false;
          if (rec.value("format", 0) != 1) return core::dataLoss("unknown snapshot format");
          rv_ = rec.value("rv", uint64_t{0});
          return core::Status::Ok();
        }
        json& obj = rec["o"];
        const json& m = metaOf(obj);
        ResourceKey key{rec.value("g", ""), rec.value("r", "")};
        std::string skey = storageKey(strField(m, "namespace"), strField(m, "name"));
        auto rv = parseRv(strField(m, "resourceVersion"));
        std::string uid = strField(m, "uid");
        ObjectPtr stored = makeStoredObject(std::move(obj), rv.value_or(0));
        if (!uid.empty()) by_uid_[uid] = Locator{key, skey};
        buckets_[key].objects[skey] = std::move(stored);
        return core::Status::Ok();
      },
      &snapshot_bytes));
  RM_RETURN_IF_ERROR(readLines(
      dir / "wal.jsonl", [&](std::string_view line) { return applyLogRecordLocked(line); },
      wal_bytes));
  history_floor_ = rv_;
  return core::Status::Ok();
}

core::Status ObjectStore::open(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return core::internalError("create " + dir.string() + ": " + ec.message());
  std::lock_guard<std::mutex> lock(mu_);
  size_t wal_bytes = 0;
  RM_RETURN_IF_ERROR_CTX(loadLocked(dir, &wal_bytes), "load store from " + dir.string());
  RM_RETURN_IF_ERROR(log_.open(dir / "wal.jsonl", wal_bytes));
  dir_ = dir;
  log_records_ = 0;
  RM_LOG(INFO, LOCAL) << "store: loaded " << by_uid_.size() << " objects at resourceVersion " << rv_
                      << " from " << dir.string();
  return core::Status::Ok();
}

core::Status ObjectStore::snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!log_.isOpen()) return core::internalError("store: snapshot() before open()");
  RM_RETURN_IF_ERROR(writeFileAtomic(dir_ / "snapshot.jsonl", snapshotTextLocked()));
  RM_RETURN_IF_ERROR(log_.truncate());
  log_records_ = 0;
  return core::Status::Ok();
}

core::Status ObjectStore::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return core::internalError("create " + dir.string() + ": " + ec.message());
  std::string text;
  bool own_log = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    text = snapshotTextLocked();
    own_log = log_.isOpen() && std::filesystem::equivalent(dir, dir_, ec);
  }
  RM_RETURN_IF_ERROR(writeFileAtomic(dir / "snapshot.jsonl", text));
  // The snapshot holds everything; our own open log's older records are skipped on replay.
  if (!own_log) std::filesystem::remove(dir / "wal.jsonl", ec);
  return core::Status::Ok();
}

core::Status ObjectStore::load(const std::filesystem::path& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t wal_bytes = 0;
  RM_RETURN_IF_ERROR_CTX(loadLocked(dir, &wal_bytes), "load store from " + dir.string());
  return core::Status::Ok();
}

}  // namespace ringmaster::local
