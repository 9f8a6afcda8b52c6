#pragma once
// ObjectStore: the embedded API server's storage with kube-apiserver semantics, generic over
// resources (CRDs register types at run time). Objects are JSON; every write gets the next value
// of one global resourceVersion counter. Implements create / get / list / update (PUT) / patch /
// delete / watch, the status subresource, generation, finalizers and deletionTimestamp, graceful
// pod deletion, ownerReference garbage collection, namespace deletion, a bounded event history
// (410 Expired beyond it), and persistence (snapshot + append log) in a data directory.
// The texts of errors and the shapes of answers are kube-apiserver's (see the .cc).
//
// Ownership: the store owns every object; readers get ObjectPtr (shared_ptr<const>), which stays
// valid after later writes. Watches are shared between the store (producer) and the consumer.
// Thread-safety: every public method is thread-safe (one internal mutex); writers never block on
// watchers. The clock and AdmitFn hooks are called under the lock and must not call back in.
// Failure: API outcomes are ApiResult<T> with a StatusError (HTTP code + Status body); file
// system failures of persistence are core::Status (a failed log append fails the write with 500).

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "local/store/meta_util.h"
#include "local/store/patch.h"
#include "local/store/persistence.h"
#include "local/store/resource_type.h"
#include "local/store/selectors.h"
#include "local/store/status_error.h"
#include "local/store/watch.h"
#include "ringmaster/core/status.h"

namespace ringmaster::local {

// kAll: the whole object, spec and status in one write (internal writers such as pods/binding).
enum class Subresource { kMain, kStatus, kAll };

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // 0: all
  std::string continue_token;
  std::string resource_version;        // "" (most recent), "0" (any: no paging), or a number
  std::string resource_version_match;  // "", "NotOlderThan", "Exact"
};

struct ListResult {
  std::vector<ObjectPtr> items;
  uint64_t resource_version = 0;
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;
};

struct WatchOptions {
  std::string resource_version;  // "" or "0": synthetic ADDED for current objects first
  std::string label_selector;
  std::string field_selector;
  bool allow_bookmarks = false;
  // Watch-list: initial ADDED events, then a BOOKMARK annotated k8s.io/initial-events-end.
  bool send_initial_events = false;
};

// Per-request options of create / update / patch.
struct WriteOptions {
  FieldValidation field_validation = FieldValidation::kWarn;
  // ?dryRun=All: validate and admit, answer the object as it would be, persist nothing.
  bool dry_run = false;
  std::vector<std::string>* warnings = nullptr;  // out (optional): the admit hooks' warnings
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Background", "Foreground", "Orphan"
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
};

struct DeleteResult {
  // The object as it now is (still present: deletionTimestamp set) or as it was (gone).
  ObjectPtr object;
  bool deleted = false;  // gone from the store now
  // For a type without return_deleted_object, the 200 Status Success body kube-apiserver sends
  // when the object is gone at once; nullopt when `object` is the answer.
  std::optional<StatusError> status;
};

struct ObjectStoreOptions {
  size_t history_length = 10000;  // watch events kept for watches from an older RV
  // ...and at most this many bytes of them (serialized objects), so that a few large objects
  // written often cannot hold the memory of 10,000 old versions. The newest event always stays.
  size_t history_bytes = 64 << 20;
  size_t watch_queue_capacity = 10000;  // undelivered events per watch before it is dropped
  Clock clock = [] { return std::chrono::system_clock::now(); };
  uint64_t random_seed = 0;  // 0: from std::random_device
  size_t log_records_per_snapshot = 20000;
  bool sync_every_write = false;  // fdatasync the log on each write (off: survives crashes of
                                  // the process, not of the machine)
};

class ObjectStore {
 public:
  explicit ObjectStore(ObjectStoreOptions options = {});
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // ---- types ----
  void registerType(ResourceType type);  // replaces a type with the same key
  std::optional<ResourceType> findType(const ResourceKey& key) const;
  // Removes the type and all its objects (DELETED events); its watches end.
  void unregisterType(const ResourceKey& key);

  // Called with the type of each committed write, under the store's lock: it must not call back
  // in (it wakes a controller that then reads). nullptr removes it.
  void setCommitListener(std::function<void(const ResourceKey&)> listener);

  // ---- objects (namespace "" for cluster-scoped types; for list/watch "" = all) ----
  ApiResult<ObjectPtr> create(const ResourceKey& key, const std::string& ns, nlohmann::json obj,
                              const WriteOptions& options = {});
  ApiResult<ObjectPtr> get(const ResourceKey& key, const std::string& ns,
                           const std::string& name) const;
  ApiResult<ListResult> list(const ResourceKey& key, const std::string& ns,
                             const ListOptions& options) const;
  ApiResult<ObjectPtr> update(const ResourceKey& key, const std::string& ns,
                              const std::string& name, nlohmann::json obj,
                              Subresource sub = Subresource::kMain,
                              const WriteOptions& options = {});
  ApiResult<ObjectPtr> patch(const ResourceKey& key, const std::string& ns, const std::string& name,
                             PatchType type, std::string_view body,
                             Subresource sub = Subresource::kMain,
                             const WriteOptions& options = {});
  // Read-modify-write under the store's lock: `fn` edits a copy of the current object (spec and
  // status) or returns an error to abort; the result is written as an update of `sub` (internal
  // writers: the whole object; a scale subresource write: the main resource, so that its status
  // stays). A resourceVersion `fn` leaves in the metadata is the write's precondition. `fn` must
  // not call back into the store.
  using MutateFn = std::function<std::optional<StatusError>(nlohmann::json& obj)>;
  ApiResult<ObjectPtr> mutate(const ResourceKey& key, const std::string& ns,
                              const std::string& name, const MutateFn& fn,
                              Subresource sub = Subresource::kAll,
                              const WriteOptions& options = {});
  ApiResult<DeleteResult> remove(const ResourceKey& key, const std::string& ns,
                                 const std::string& name, const DeleteOptions& options = {});
  // 400 for bad selectors or resourceVersion; a too-old RV yields a watch whose only event is
  // ERROR 410 "too old resource version: X (Y)".
  ApiResult<std::shared_ptr<Watch>> watch(const ResourceKey& key, const std::string& ns,
                                          const WatchOptions& options);

  // BOOKMARK (current RV) to every open watch that allows bookmarks; the caller's timer drives
  // it (kube-apiserver: ~2 s before timeoutSeconds and about once a minute).
  void sendBookmarks();
  void sendBookmark(const std::shared_ptr<Watch>& watch);

  // One garbage-collector pass, run to a fixed point: dependents whose owners are all gone are
  // deleted (dangling references are dropped when other owners remain), owners in foreground
  // deletion lose `foregroundDeletion` once no blocking dependents remain, and terminating
  // namespaces are emptied and removed. Returns how many writes it made.
  size_t collectGarbage();
  // How many collectGarbage() calls scanned the store: one skips the scan while no write since
  // the last fixed point could have made garbage (a deletion, a deletion timestamp, an owner
  // reference to a uid that does not exist).
  uint64_t garbageScans() const;

  // A LIST body: {"kind":"XList","apiVersion":…,"metadata":{…},"items":[…]} built from the
  // cached object texts (custom resources: keys sorted and "continue":"" as upstream).
  static std::string listText(const ResourceType& type, const ListResult& list);

  uint64_t resourceVersion() const;
  size_t objectCount() const;

  // ---- persistence ----
  // Loads DIR/snapshot.jsonl and replays DIR/wal.jsonl, then logs every write to DIR/wal.jsonl;
  // a new snapshot is taken every log_records_per_snapshot writes. Call before serving.
  core::Status open(const std::filesystem::path& dir);
  // Writes a snapshot now and empties the log (open() first).
  core::Status snapshot();
  // A snapshot of everything into DIR (atomic), and loading one (replacing the contents).
  core::Status save(const std::filesystem::path& dir) const;
  core::Status load(const std::filesystem::path& dir);

 private:
  struct Bucket {
    std::map<std::string, ObjectPtr> objects;  // "ns/name" or "name"
  };
  struct Locator {
    ResourceKey key;
    std::string storage_key;
  };
  struct HistoryEntry {
    uint64_t rv;
    WatchEventType type;
    ResourceKey key;
    std::string storage_key;
    ObjectPtr object;  // new state (DELETED: last state at the deletion RV)
    ObjectPtr prev;    // state before (null for ADDED)
  };
  struct Registration {
    std::shared_ptr<Watch> watch;
    ResourceKey key;
    std::string api_version, kind;
    std::string ns;
    LabelSelector labels;
    FieldSelector fields;
    bool allow_bookmarks;
  };

  const ResourceType* typeLocked(const ResourceKey& key) const;
  static std::string storageKey(const std::string& ns, const std::string& name);
  ApiResult<ObjectPtr> updateLocked(const ResourceType& type, const std::string& ns,
                                    const std::string& name, nlohmann::json obj, Subresource sub,
                                    ObjectPtr existing, const WriteOptions& options = {});
  ApiResult<DeleteResult> removeLocked(const ResourceType& type, ObjectPtr existing,
                                       const DeleteOptions& options);
  // Writes `obj` (or removes the key when obj is null) at the next RV and tells watchers.
  ObjectPtr commitLocked(const ResourceKey& key, const std::string& storage_key, nlohmann::json obj,
                         WatchEventType type, ObjectPtr prev);
  ObjectPtr deleteNowLocked(const ResourceKey& key, ObjectPtr existing);
  void dispatchLocked(const HistoryEntry& entry);
  std::optional<WatchEvent> filterEvent(const Registration& reg, const HistoryEntry& entry) const;
  bool matches(const Registration& reg, const ObjectPtr& obj) const;
  std::vector<std::pair<ResourceKey, ObjectPtr>> dependentsLocked(const std::string& uid) const;
  bool uidExistsLocked(const std::string& uid) const;
  size_t gcPassLocked();
  // Whether committing `object` may have made garbage: it is being deleted, or one of its owner
  // references names a uid that does not exist.
  bool mayMakeGarbageLocked(const nlohmann::json& object) const;
  ObjectPtr bookmarkObject(const Registration& reg) const;
  std::string nowText() const;
  std::string snapshotTextLocked() const;
  core::Status loadLocked(const std::filesystem::path& dir, size_t* wal_bytes);
  core::Status applyLogRecordLocked(std::string_view line);
  void resetLocked();

  ObjectStoreOptions options_;
  mutable std::mutex mu_;
  mutable RandomSource random_;
  std::map<ResourceKey, ResourceType> types_;
  std::map<ResourceKey, Bucket> buckets_;
  std::unordered_map<std::string, Locator> by_uid_;
  uint64_t rv_ = 0;
  // A write since the last garbage-collection fixed point may have made garbage (commitLocked
  // says when); the store scans only then, not every second over every object.
  bool gc_due_ = true;
  uint64_t gc_scans_ = 0;
  std::deque<HistoryEntry> history_;
  uint64_t history_floor_ = 0;  // every event with rv > floor is in history_
  size_t history_bytes_ = 0;    // serialized bytes of the objects in history_
  std::vector<Registration> watchers_;
  std::function<void(const ResourceKey&)> commit_listener_;  // guarded by mu_
  // persistence
  std::filesystem::path dir_;
  AppendLog log_;
  size_t log_records_ = 0;
  core::Status log_error_;
};

}  // namespace ringmaster::local
