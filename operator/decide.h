#pragma once
// decide(): the decisions of one reconcile pass over an active TrainingJob, as a pure function of
// what the pass observed. The Reconciler observes (caches, its own memory), calls decide(), and
// applies the Plan with API calls; decide() itself does no I/O, reads no clock and logs nothing,
// so every transition is testable as a table row (decide_test.cc).
//
// Thread-safety: pure functions. Failure: none; a foreign pod is a refusal in the Plan.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/worker_pod.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// What one pass read before deciding.
struct Observed {
  // Our pods by replica index (nullptr: none), of any attempt, terminating or not.
  std::vector<std::shared_ptr<const WorkerPod>> pods;
  // Names of pods with a worker's name that another owner controls.
  std::vector<std::string> foreign;
  // Every pod created by an earlier pass is in the cache (or waiting for it timed out): a
  // missing pod is really missing, not merely not yet seen.
  bool expectations_met = true;
  // Discovery found the gang scheduler's PodGroup API served (false while unknown): the
  // scheduler, not the operator, then enforces scheduleTimeoutSeconds.
  bool pod_group_served = false;
  // When the reconciler first saw the current attempt's pods without a scheduling gate, having
  // seen one hold them (a queue's admission): the gang's scheduleTimeoutSeconds counts from
  // there, not from the pods' creation. Empty when no gate was seen (or the operator restarted
  // since: the timeout then counts from creation, as for pods never gated).
  std::optional<kube::Time> released;
};

struct DecideOptions {
  std::chrono::seconds unschedulable_backoff{10};  // doubles per retry
  std::chrono::seconds max_unschedulable_backoff{300};
  // Status refresh while running: a requeue this long; 0 when the progress source says when a
  // reading changed (ProgressSource::onChange) and a timer would only repeat unchanged passes.
  std::chrono::milliseconds progress_interval{5'000};
  bool read_progress = true;
};

// Which owned, not yet terminating pods a plan deletes.
enum class PodDeletion {
  kNone,
  kAll,  // suspended
  // Plan::stale: an older attempt's pods, and pods in the wrong role for the current world (a
  // standby pod inside it, a worker beyond it, a standby pod that ended).
  kStale,
};

struct Plan {
  // The status to write once the plan's calls succeeded (before stampStatus; progress is the
  // reader's to fill in when read_progress).
  kube::TrainingJobStatus status;
  // The status to write instead when a call fails: what the pass learned before its calls
  // (resumed, rank 0's summary), nothing that assumes they succeeded (startTime, new counts).
  kube::TrainingJobStatus status_on_error;
  // "pod <name>": a pod with a worker's name that another owner controls. The pass refuses the
  // job (Warning Event, error) and makes no call.
  std::optional<std::string> refusal;

  PodDeletion delete_pods = PodDeletion::kNone;
  std::vector<std::string> stale;  // pod names, for kStale
  std::string delete_reason;       // for the log
  bool ensure_children = false;    // Service and ConfigMap
  bool ensure_ssh_secret = false;  // MPI
  // The gang scheduler's PodGroup, ensured right before pods are created (none for schedulers
  // without one).
  bool ensure_pod_group = false;
  // Replica indices to create (after the PodGroup and the NetworkPolicy); those at or beyond
  // status.currentReplicas are an elastic job's standby pods.
  std::vector<int> create;
  // Delete every pod once the status is written: the gang is restarted or released, and the new
  // attempt number must be on record before its old pods go.
  bool release_pods = false;
  bool read_progress = false;                        // from rank 0 (Running, with a pod IP)
  std::optional<std::chrono::milliseconds> requeue;  // nullopt: done until an event

  // What the pass should log (decide() does not).
  struct Note {
    bool warning = false;  // else debug
    std::string text;
  };
  std::vector<Note> notes;
};

// The plan for an active job (not finished; spec defaulted and valid) with status `status` at
// `now`.
Plan decide(const kube::TrainingJob& job, const kube::TrainingJobStatus& status,
            const Observed& observed, kube::Time now, const DecideOptions& options);

// Marks the job Failed for `reason` (Running and Restarting False, completionTime, phase).
void failJob(kube::TrainingJobStatus& status, const std::string& reason, const std::string& message,
             int64_t generation, kube::Time now);

// How long from `now` until `due`; zero once it passed.
std::chrono::milliseconds timeUntil(kube::Time now, kube::Time due);
kube::Time plusSeconds(kube::Time t, int64_t seconds);

}  // namespace ringmaster::op
