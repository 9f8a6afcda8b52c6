#include "operator/decide.h"

#include <algorithm>

#include "operator/builders.h"
#include "operator/progress.h"
#include "operator/status.h"
#include "operator/validate.h"

namespace ringmaster::op {

using std::chrono::milliseconds;

milliseconds timeUntil(kube::Time now, kube::Time due) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(due.timePoint() - now.timePoint()));
}

kube::Time plusSeconds(kube::Time t, int64_t seconds) {
  return kube::Time::fromUnixSeconds(t.unixSeconds() + seconds);
}

void failJob(kube::TrainingJobStatus& status, const std::string& reason, const std::string& message,
             int64_t generation, kube::Time now) {
  setCondition(status, kFailed, true, reason, message, generation, now);
  if (isTrue(status, kRunning)) {
    setCondition(status, kRunning, false, reason::kJobFailed, "the job failed", generation, now);
  }
  if (isTrue(status, kRestarting)) {
    setCondition(status, kRestarting, false, reason::kJobFailed, "the job failed", generation, now);
  }
  if (!status.completion_time) status.completion_time = now;
  status.phase = phaseOf(status);
}

namespace {

void minDelay(std::optional<milliseconds>& current, milliseconds d) {
  if (!current || d < *current) current = d;
}

// Restarting True for `reason`; the plan releases the pods once this status is written.
void gangRestart(Plan& plan, const std::string& reason, const std::string& message,
                 bool count_restart, int attempt, int64_t generation, kube::Time now) {
  kube::TrainingJobStatus& status = plan.status;
  if (count_restart) status.restarts = attempt + 1;
  status.last_restart_time = now;
  setCondition(status, kRestarting, true, reason, message, generation, now);
  if (findCondition(status, kRunning) != nullptr) {
    setCondition(status, kRunning, false, reason, message, generation, now);
  }
  status.phase = phaseOf(status);
  plan.release_pods = true;
}

// An elastic job restarts its gang at `world` worker pods (not counted as a restart): every pod
// goes, and the next passes create the new world's.
void resize(Plan& plan, int from, int world, const std::string& why, int attempt,
            int64_t generation, kube::Time now) {
  const bool down = world < from;
  const std::string message = std::to_string(from) + " -> " + std::to_string(world) +
                              " worker pods: " + why + "; restarting from the newest checkpoint";
  plan.status.current_replicas = world;
  setCondition(plan.status, kResized, true, down ? reason::kScaledDown : reason::kScaledUp, message,
               generation, now);
  gangRestart(plan, kResized, message, false, attempt, generation, now);
}

// status.progress from rank 0's summary (its termination message). A missing or bad one keeps the
// last progress: a user's command may leave any text there, never a reason to fail the job.
void foldFinalSummary(Plan& plan, const WorkerPod& rank0) {
  const std::optional<std::string>& message = rank0.termination_message;
  if (!message || message->empty()) {
    plan.notes.push_back({false, "pod " + rank0.metadata.name +
                                     " succeeded without a summary; keeping the last progress"});
    return;
  }
  core::Result<kube::TrainingProgress> summary = parseTrainerSummary(*message);
  if (!summary.ok()) {
    plan.notes.push_back({true, "pod " + rank0.metadata.name +
                                    ": termination message is not a trainer summary (" +
                                    summary.status().message() + "); keeping the last progress"});
    return;
  }
  plan.status.progress = mergeProgress(plan.status.progress, *summary);
}

// The worker that succeeded first and when (nullptr: none yet, or none says when).
std::pair<const WorkerPod*, int> firstSucceeded(const std::vector<const WorkerPod*>& pods) {
  std::pair<const WorkerPod*, int> first{nullptr, -1};
  for (size_t i = 0; i < pods.size(); ++i) {
    const WorkerPod* pod = pods[i];
    if (pod == nullptr || pod->phase != "Succeeded" || !pod->finished_at) continue;
    if (first.first == nullptr || *pod->finished_at < *first.first->finished_at) {
      first = {pod, static_cast<int>(i)};
    }
  }
  return first;
}

// Whether `pod`'s failure is one restartPolicy ExitCode makes permanent (exit codes 1-127).
bool permanentFailure(const JobSettings& spec, const WorkerPod& pod) {
  const std::optional<int32_t>& code = pod.exit_code;
  return spec.restart_policy == RestartPolicy::kExitCode && code && *code >= 1 && *code <= 127;
}

// Why the failed pod failed, in its own words where it left some, on one bounded line.
std::string describeFailure(const WorkerPod& pod, int index) {
  const std::optional<int32_t>& code = pod.exit_code;
  std::string what = "pod " + pod.metadata.name + " (replica " + std::to_string(index) + ") failed";
  if (code) what += " with exit code " + std::to_string(*code);
  // The pod's own reason says what happened around the exit (Evicted, Terminated by a node
  // shutdown, ...).
  if (!pod.reason.empty()) what += " (" + pod.reason + ")";
  if (const std::optional<std::string>& message = pod.termination_message) {
    if (std::string folded = foldMessage(*message); !folded.empty()) what += ": " + folded;
  }
  return what;
}

// One decision in progress: what every phase reads, and the plan they write. A phase returns
// true when the plan is final and the later phases must not run.
struct Decision {
  Decision(const kube::TrainingJob& job, const kube::TrainingJobStatus& status,
           const Observed& seen, kube::Time at_time, const DecideOptions& opts)
      : spec(settingsOf(job.spec)),
        replicas(spec.scalesWorkers() ? spec.gangPods()
                                      : spec.podsWith(currentReplicas(spec, status))),
        world_pods(spec.podsWith(currentReplicas(spec, status))),
        slots(spec.podSlots()),
        generation(job.metadata.generation.value_or(0)),
        attempt(status.restarts.value_or(0)),
        now(at_time),
        observed(seen),
        options(opts) {
    plan.status = status;
    plan.status.current_replicas = currentReplicas(spec, status);
    plan.status.selector = workerSelector(job.metadata.name);
    if (!plan.status.restarts) plan.status.restarts = 0;
    at = atCurrentWorld(job, plan.status);
  }
  const WorkerPod* podAt(int i) const {
    const auto index = static_cast<size_t>(i);
    return index < observed.pods.size() ? observed.pods[index].get() : nullptr;
  }
  // The plan's final requeue: the soonest of what the phases asked for.
  Plan finish() {
    plan.requeue = requeue;
    return std::move(plan);
  }

  const JobSettings spec;
  // The current world's pods by index: its workers, then any other roles' (a job that scales its
  // workers: every slot, filled or not).
  const int replicas;
  const int world_pods;  // of them, those the current world has (spec.slotFilled)
  const int slots;       // pod indices the job may use (an elastic job's standby pods too)
  const int64_t generation;
  const int attempt;
  const kube::Time now;
  const Observed& observed;
  const DecideOptions& options;
  kube::TrainingJob at;  // the job at its current world
  Plan plan;
  std::optional<milliseconds> requeue;
  // Pods of the current attempt in their role (sortPods), and whether any pod is stale.
  std::vector<const WorkerPod*> current, standby;
  bool stale = false;
  bool have_pod_group = false;  // the gang scheduler's PodGroup holds the gang (schedule)
  // The training is done, whatever the others do: the chief pod succeeded, or a
  // parameter-server job's pod 0 and servers' pods did (TFJob's rule: the chief's success is the
  // job's), or every pod but the evaluator's did.
  bool trained = false;
  // The evaluator's pod of the current attempt; nullptr without one (or while it is replaced).
  const WorkerPod* evaluator() const {
    const int i = spec.evaluatorPod();
    return i >= 0 && i < replicas ? current[static_cast<size_t>(i)] : nullptr;
  }
};

bool succeeded(const WorkerPod* pod) { return pod != nullptr && pod->phase == "Succeeded"; }

bool trainingDone(const Decision& d) {
  if (const int chief = d.spec.chiefPod(); chief >= 0) {
    return chief < d.replicas && succeeded(d.current[static_cast<size_t>(chief)]);
  }
  for (int i = 0; i < d.replicas; ++i) {
    // A parameter-server job's workers other than pod 0 are not waited for.
    if (d.spec.roleOf(i) == Role::kEvaluator ||
        (d.spec.parameter_servers > 0 && d.spec.replacedAlone(i))) {
      continue;
    }
    if (!succeeded(d.current[static_cast<size_t>(i)])) return false;
  }
  return d.replicas > 0;
}

// A suspended job: every pod goes, the status is kept.
bool suspend(Decision& d) {
  kube::TrainingJobStatus& s = d.plan.status;
  if (!d.spec.suspend) {
    if (isTrue(s, kSuspended)) {
      setCondition(s, kSuspended, false, reason::kJobResumed, "the job was resumed", d.generation,
                   d.now);
    }
    return false;
  }
  d.plan.status_on_error = s;  // the deletions come first
  d.plan.delete_pods = PodDeletion::kAll;
  d.plan.delete_reason = "job suspended";
  setCondition(s, kSuspended, true, reason::kJobSuspended,
               "the job is suspended: its pods are deleted, its status kept", d.generation, d.now);
  // No rank runs while suspended, whatever the deleted pods still show as they terminate.
  setReplicaCounts(d.at, zeroCounts(), s);
  if (findCondition(s, kRunning) != nullptr) {
    setCondition(s, kRunning, false, reason::kJobSuspended, "the job is suspended", d.generation,
                 d.now);
  }
  return true;
}

// activeDeadlineSeconds: past it the job fails; before it the pass looks again when it falls.
bool deadline(Decision& d) {
  kube::TrainingJobStatus& s = d.plan.status;
  if (!d.spec.active_deadline_seconds || !s.start_time) return false;
  const kube::Time due = plusSeconds(*s.start_time, *d.spec.active_deadline_seconds);
  if (d.now < due) {
    minDelay(d.requeue, timeUntil(d.now, due));
    return false;
  }
  failJob(s, reason::kDeadlineExceeded,
          "the job ran longer than activeDeadlineSeconds (" +
              std::to_string(*d.spec.active_deadline_seconds) + " s)",
          d.generation, d.now);
  d.plan.status_on_error = s;
  d.plan.requeue = milliseconds(0);  // the finished pass stops the pods
  return true;
}

// A pod with a worker's name that another owner controls: the job is refused, no call made.
bool foreignPods(Decision& d) {
  d.plan.status_on_error = d.plan.status;
  if (d.observed.foreign.empty()) return false;
  d.plan.refusal = "pod " + d.observed.foreign.front();
  return true;
}

// Pods of the current attempt in their role: workers inside the world, an elastic job's standby
// pods beyond it. Anything else (older attempt, being deleted, wrong role, a standby pod that
// ended) is stale, and deleted.
void sortPods(Decision& d) {
  d.current.assign(static_cast<size_t>(d.replicas), nullptr);
  for (int i = 0; i < d.slots; ++i) {
    const WorkerPod* pod = d.podAt(i);
    if (pod == nullptr) continue;
    const bool beyond = i >= d.replicas;
    if (pod->terminating) {
      d.stale = true;
    } else if (!d.spec.slotFilled(i)) {
      // A job that scaled its workers down: the pods beyond its count go, and their ranks leave
      // the servers on SIGTERM.
      d.stale = true;
      d.plan.stale.push_back(pod->metadata.name);
    } else if (pod->attempt == d.attempt && pod->standby == beyond &&
               !(beyond && pod->finished())) {
      if (beyond) {
        d.standby.push_back(pod);
      } else {
        d.current[static_cast<size_t>(i)] = pod;
      }
    } else {
      d.stale = true;
      d.plan.stale.push_back(pod->metadata.name);
    }
  }
  if (!d.plan.stale.empty()) {
    d.plan.delete_pods = PodDeletion::kStale;
    d.plan.delete_reason = "left from an older attempt or world";
  }
}

// Failed pods that are replaced alone where the policy would restart the gang: a
// parameter-server job's worker pods (every rank on them a worker, not pod 0) while worker 0
// trains, since the servers dropped their ranks, the other workers train on, and the new pods'
// trainers rejoin at the servers' step; and the evaluator's pod, which no task talks to. The
// budget is backoffLimit per such pod on average; past it (or for a failure the policy makes
// permanent) the failure policy decides as for any job. A pod already on record (its uid in
// status.replacements: the cache still shows it) is deleted again, not counted again.
bool replaceAlone(Decision& d, bool evaluator_only) {
  if (d.spec.restart_policy == RestartPolicy::kNever || d.current.empty()) return false;
  const bool worker0_trains = d.current[0] != nullptr && !d.current[0]->finished();
  kube::TrainingJobStatus& s = d.plan.status;
  auto on_record = [&s](const WorkerPod& pod) {
    return std::any_of(s.replacements.begin(), s.replacements.end(),
                       [&pod](const kube::PodReplacement& r) { return r.uid == pod.uid; });
  };
  std::vector<int> failed;
  int fresh = 0;
  for (int i = 0; i < d.replicas; ++i) {
    const WorkerPod* pod = d.current[static_cast<size_t>(i)];
    if (pod == nullptr || pod->phase != "Failed") continue;
    const bool evaluator = d.spec.roleOf(i) == Role::kEvaluator;
    if (evaluator_only && !evaluator) continue;
    if (!d.spec.replacedAlone(i) || permanentFailure(d.spec, *pod)) return false;
    if (!evaluator && !worker0_trains) return false;
    failed.push_back(i);
    if (!on_record(*pod)) ++fresh;
  }
  if (failed.empty()) return false;
  int replaceable = 0;
  for (int i = 0; i < d.replicas; ++i) {
    replaceable += d.spec.replacedAlone(i) && d.spec.slotFilled(i) ? 1 : 0;
  }
  const int replaced = s.replaced_pods.value_or(0);
  if (replaced + fresh > int64_t{d.spec.backoff_limit} * replaceable) return false;
  std::string latest;
  int latest_index = 0;
  for (int i : failed) {
    const WorkerPod& pod = *d.current[static_cast<size_t>(i)];
    d.plan.stale.push_back(pod.metadata.name);
    if (on_record(pod)) continue;
    kube::PodReplacement record;
    record.pod = pod.metadata.name;
    record.uid = pod.uid;
    record.time = d.now;
    record.reason = describeFailure(pod, i);
    latest = *record.reason;
    latest_index = i;
    s.replacements.push_back(std::move(record));
  }
  constexpr size_t kKeptReplacements = 10;
  if (s.replacements.size() > kKeptReplacements) {
    s.replacements.erase(s.replacements.begin(),
                         s.replacements.end() - static_cast<ptrdiff_t>(kKeptReplacements));
  }
  d.plan.delete_pods = PodDeletion::kStale;
  d.plan.delete_reason = "a failed pod is replaced alone";
  if (fresh > 0) {
    s.replaced_pods = replaced + fresh;
    const bool evaluator = d.spec.roleOf(latest_index) == Role::kEvaluator;
    setCondition(s, kReplaced, true,
                 evaluator ? reason::kReplacedEvaluatorPod : reason::kReplacedWorkerPod,
                 latest + "; replaced alone while " +
                     (evaluator ? "the job trains on"
                                : "the parameter servers and the other workers go on") +
                     " (" + std::to_string(replaced + fresh) +
                     " pod(s) replaced so far, not counted against backoffLimit)",
                 d.generation, d.now);
  }
  d.plan.requeue = milliseconds(1'000);
  return true;
}

// The failure policy: a failed rank fails or restarts the whole gang; the message names the one
// that failed first.
bool failurePolicy(Decision& d) {
  std::vector<const WorkerPod*> judged = d.current;
  // Once worker 0 succeeded, a parameter-server job's other workers are done with: one that fails
  // then changes nothing (its servers drop it and finish), so it neither restarts the gang nor is
  // replaced.
  if (d.spec.parameter_servers > 0 && !judged.empty() && judged[0] != nullptr &&
      judged[0]->phase == "Succeeded") {
    for (int r = 0; r < d.replicas; ++r) {
      if (d.spec.replacedAlone(r)) judged[static_cast<size_t>(r)] = nullptr;
    }
  }
  const int i = firstFailedReplica(judged);
  if (i < 0) return false;
  kube::TrainingJobStatus& s = d.plan.status;
  const WorkerPod* pod = judged[static_cast<size_t>(i)];
  const std::string what = describeFailure(*pod, i);
  if (d.spec.restart_policy == RestartPolicy::kNever) {
    failJob(s, reason::kRankFailed, what + "; restartPolicy is Never", d.generation, d.now);
  } else if (permanentFailure(d.spec, *pod)) {
    failJob(s, reason::kRankFailed,
            what + "; exit codes 1-127 are permanent under restartPolicy ExitCode", d.generation,
            d.now);
  } else if (d.attempt >= d.spec.backoff_limit) {
    failJob(s, reason::kBackoffLimitExceeded,
            what + "; the gang was restarted " + std::to_string(d.attempt) +
                " times (backoffLimit " + std::to_string(d.spec.backoff_limit) + ")",
            d.generation, d.now);
  } else {
    gangRestart(d.plan, reason::kRankFailed,
                what + "; restarting all " + std::to_string(d.world_pods) + " pods as attempt " +
                    std::to_string(d.attempt + 1),
                true, d.attempt, d.generation, d.now);
  }
  d.plan.requeue = milliseconds(0);
  return true;
}

// Success: every rank succeeded; or one did and the others get finishTimeoutSeconds to follow.
bool success(Decision& d) {
  kube::TrainingJobStatus& s = d.plan.status;
  // Rank 0's final summary is the run's final progress, not the last scrape of its metrics.
  if (const WorkerPod* rank0 = d.current.empty() ? nullptr : d.current[0];
      rank0 != nullptr && rank0->phase == "Succeeded") {
    foldFinalSummary(d.plan, *rank0);
  }
  d.plan.status_on_error = s;
  const int done = static_cast<int>(std::count_if(d.current.begin(), d.current.end(), succeeded));
  if (d.trained) {
    std::string evaluation;  // what became of an evaluation that did not succeed
    if (const int e = d.spec.evaluatorPod(); e >= 0 && !succeeded(d.evaluator())) {
      const WorkerPod* pod = d.evaluator();
      if (pod != nullptr && pod->phase == "Failed") {
        evaluation = "; the evaluator pod " + pod->metadata.name + " failed";
      } else {
        // The evaluator gets finishTimeoutSeconds from the training's end to evaluate the
        // final model.
        std::optional<kube::Time> ended;
        for (int i = 0; i < d.replicas; ++i) {
          const WorkerPod* p = d.current[static_cast<size_t>(i)];
          if (i == e || !succeeded(p) || !p->finished_at) continue;
          if (!ended || *ended < *p->finished_at) ended = p->finished_at;
        }
        const int timeout = d.spec.finish_timeout_seconds;
        if (timeout <= 0 || (ended && d.now < plusSeconds(*ended, timeout))) {
          if (timeout > 0) minDelay(d.requeue, timeUntil(d.now, plusSeconds(*ended, timeout)));
          return false;
        }
        evaluation = "; the evaluator pod" + (pod != nullptr ? " " + pod->metadata.name : "") +
                     " had not succeeded " + std::to_string(timeout) +
                     " s after the training ended (finishTimeoutSeconds) and is stopped";
      }
    }
    observePods(d.at, d.current, d.now, s);
    const std::string of =
        " (" + std::to_string(done) + "/" + std::to_string(d.world_pods) + " pods succeeded)";
    if (done == d.world_pods) {
      setCondition(s, kSucceeded, true, reason::kAllRanksSucceeded,
                   "all " + std::to_string(d.world_pods) + " pods succeeded", d.generation, d.now);
    } else if (const int chief = d.spec.chiefPod(); chief >= 0) {
      setCondition(s, kSucceeded, true, reason::kChiefSucceeded,
                   "the chief pod " + d.current[static_cast<size_t>(chief)]->metadata.name +
                       " succeeded" + of + evaluation,
                   d.generation, d.now);
    } else if (d.spec.parameter_servers > 0) {
      setCondition(s, kSucceeded, true, reason::kChiefSucceeded,
                   "pod 0 and the parameter servers' pods succeeded" + of + evaluation,
                   d.generation, d.now);
    } else {
      setCondition(s, kSucceeded, true, reason::kAllRanksSucceeded,
                   "every pod but the evaluator's succeeded" + of + evaluation, d.generation,
                   d.now);
    }
    setCondition(s, kRunning, false, reason::kJobSucceeded, "the job succeeded", d.generation,
                 d.now);
    s.completion_time = d.now;
    s.phase = phaseOf(s);
    d.plan.requeue = milliseconds(0);  // cleanPodPolicy, ttl
    return true;
  }
  // The evaluator ending first says nothing about the others.
  std::vector<const WorkerPod*> training = d.current;
  if (const int e = d.spec.evaluatorPod(); e >= 0 && e < d.replicas) {
    training[static_cast<size_t>(e)] = nullptr;
  }
  const auto [first, done_index] = firstSucceeded(training);
  if (first == nullptr || d.spec.finish_timeout_seconds <= 0) return false;
  const kube::Time due = plusSeconds(*first->finished_at, d.spec.finish_timeout_seconds);
  if (d.now < due) {
    minDelay(d.requeue, timeUntil(d.now, due));
    return false;
  }
  std::string running;
  for (size_t i = 0; i < d.current.size(); ++i) {
    if (d.current[i] == nullptr || d.current[i]->finished()) continue;
    running += (running.empty() ? "pod " : ", pod ") + d.current[i]->metadata.name + " (replica " +
               std::to_string(i) + ")";
  }
  failJob(s, reason::kRanksDidNotFinish,
          (running.empty() ? std::string("a worker pod") : running) + " still running " +
              std::to_string(d.spec.finish_timeout_seconds) + " s after pod " +
              first->metadata.name + " (replica " + std::to_string(done_index) +
              ") succeeded (finishTimeoutSeconds): a rank that ends while others run "
              "usually means they hang",
          d.generation, d.now);
  d.plan.status_on_error = s;
  d.plan.requeue = milliseconds(0);  // the finished pass stops the pods (cleanPodPolicy)
  return true;
}

// Resize up: capacity came back for an elastic job's standby pods, and the world grows by those
// scheduled.
bool growElastic(Decision& d) {
  if (!d.spec.elastic || d.spec.scalesWorkers() || d.stale || d.replicas >= d.spec.max_replicas) {
    return false;
  }
  const int returned = static_cast<int>(std::count_if(
      d.standby.begin(), d.standby.end(), [](const WorkerPod* pod) { return pod->scheduled; }));
  if (returned == 0) return false;
  resize(d.plan, d.replicas, std::min(d.spec.max_replicas, d.replicas + returned),
         std::to_string(returned) + " standby pod" + (returned == 1 ? "" : "s") +
             " found room on a node",
         d.attempt, d.generation, d.now);
  d.plan.requeue = milliseconds(0);
  return true;
}

// A job that scales its workers: a changed spec.replicas is its new world, which the next steps
// make (pods beyond it are deleted, missing ones created) while the servers and the other
// workers go on: Resized, without a restart.
void scaleWorkers(Decision& d, const kube::TrainingJobStatus& before) {
  if (!d.spec.scalesWorkers() || !before.current_replicas) return;
  const int from = *before.current_replicas;
  const int to = d.plan.status.current_replicas.value_or(from);
  if (from == to) return;
  setCondition(d.plan.status, kResized, true, to < from ? reason::kScaledDown : reason::kScaledUp,
               std::to_string(from) + " -> " + std::to_string(to) +
                   " worker pods: spec.replicas changed; the parameter servers and the other "
                   "workers go on",
               d.generation, d.now);
}

// Creation: the missing pods are created once nothing holds them back (an old attempt's pods
// still going, the Unschedulable back-off, creations not yet seen).
void createMissing(Decision& d) {
  kube::TrainingJobStatus& s = d.plan.status;
  std::vector<int> missing;
  for (int i = 0; i < d.slots; ++i) {
    if (d.podAt(i) == nullptr && d.spec.slotFilled(i)) missing.push_back(i);
  }
  if (missing.empty()) {
    d.have_pod_group = d.observed.pod_group_served;
    return;
  }
  std::optional<milliseconds> wait;
  if (d.stale) {
    wait = milliseconds(1'000);  // the old attempt's pods must be gone first (their names)
  } else if (const kube::Condition* r = findCondition(s, kRestarting);
             r != nullptr && r->status == "True" && r->reason == reason::kUnschedulable &&
             s.last_restart_time) {
    const int retries = std::max(1, s.schedule_retries.value_or(1));
    auto backoff = d.options.unschedulable_backoff * (int64_t{1} << std::min(retries - 1, 20));
    backoff = std::min<std::chrono::seconds>(backoff, d.options.max_unschedulable_backoff);
    const kube::Time due = plusSeconds(*s.last_restart_time, backoff.count());
    if (d.now < due) wait = timeUntil(d.now, due);
  }
  if (!wait && !d.observed.expectations_met) wait = milliseconds(1'000);
  if (wait) {
    minDelay(d.requeue, *wait);
    return;
  }
  d.plan.ensure_pod_group = true;
  d.plan.create = std::move(missing);
  if (!s.start_time) s.start_time = d.now;
  minDelay(d.requeue, milliseconds(1'000));
}

// Gang scheduling without a gang scheduler: all pods scheduled within scheduleTimeoutSeconds,
// or none held (an elastic job shrinks to what was scheduled, when that is enough). A job that
// scales its workers holds only pod 0 and the servers' pods to it: its other workers are taken
// in whenever they come.
bool scheduleTimeout(Decision& d) {
  std::vector<const WorkerPod*> gang;
  for (int i = 0; i < d.replicas; ++i) {
    if (!d.spec.slotFilled(i) || (d.spec.scalesWorkers() && d.spec.replacedAlone(i))) continue;
    gang.push_back(d.current[static_cast<size_t>(i)]);
  }
  const bool all_exist =
      std::all_of(gang.begin(), gang.end(), [](const WorkerPod* pod) { return pod; });
  if (!all_exist || d.have_pod_group) return false;
  kube::TrainingJobStatus& s = d.plan.status;
  int scheduled = 0;
  std::optional<kube::Time> oldest;
  bool gated = false;
  for (const WorkerPod* pod : gang) {
    if (pod->scheduled || pod->finished()) ++scheduled;
    if (pod->created && (!oldest || *pod->created < *oldest)) oldest = pod->created;
    if (!pod->scheduling_gate.empty()) gated = true;
  }
  // Gated pods wait for a queue's admission, which may rightly take hours: the gang's timeout
  // starts once the queue let them go (the pod update that removes a gate wakes us).
  const int gang_pods = static_cast<int>(gang.size());
  if (scheduled >= gang_pods || !oldest || gated) return false;
  const int timeout = d.spec.schedule_timeout_seconds;
  const kube::Time start =
      d.observed.released && *oldest < *d.observed.released ? *d.observed.released : *oldest;
  const kube::Time due = plusSeconds(start, timeout);
  if (d.now < due) {
    minDelay(d.requeue, timeUntil(d.now, due));
    return false;
  }
  const std::string within = std::to_string(scheduled) + "/" + std::to_string(gang_pods) +
                             " pods scheduled within scheduleTimeoutSeconds (" +
                             std::to_string(timeout) + " s)";
  if (d.spec.elastic && !d.spec.scalesWorkers() && scheduled >= d.spec.min_replicas) {
    resize(d.plan, d.replicas, scheduled, within, d.attempt, d.generation, d.now);
  } else {
    const int retries = s.schedule_retries.value_or(0) + 1;
    s.schedule_retries = retries;
    gangRestart(d.plan, reason::kUnschedulable,
                within + ": released the gang, retry " + std::to_string(retries) + " after backoff",
                false, d.attempt, d.generation, d.now);
  }
  d.plan.requeue = milliseconds(1'000);
  return true;
}

// The counts and conditions the pods give, and rank 0's progress while it runs.
void countPods(Decision& d) {
  // The status to write once the creations succeeded counts the pods they made (Pending, as the
  // API server returns a new pod), so a job's first status already says its workers exist and
  // the next pass, seeing them in the cache, has nothing new to write.
  std::vector<const WorkerPod*> counted = d.current;
  WorkerPod placeholder;
  placeholder.phase = "Pending";
  placeholder.attempt = d.attempt;
  placeholder.created = d.now;
  for (int i : d.plan.create) {
    if (i < d.replicas) counted[static_cast<size_t>(i)] = &placeholder;
  }
  observePods(d.at, counted, d.now, d.plan.status);
  const WorkerPod* rank0 = d.current.empty() ? nullptr : d.current[0];
  if (d.options.read_progress && rank0 != nullptr && rank0->phase == "Running" &&
      !rank0->pod_ip.empty()) {
    d.plan.read_progress = true;
    if (d.options.progress_interval.count() > 0) minDelay(d.requeue, d.options.progress_interval);
  }
}

}  // namespace

Plan decide(const kube::TrainingJob& job, const kube::TrainingJobStatus& status,
            const Observed& observed, kube::Time now, const DecideOptions& options) {
  Decision d(job, status, observed, now, options);
  if (suspend(d)) return std::move(d.plan);
  if (deadline(d) || foreignPods(d)) return std::move(d.plan);
  d.plan.ensure_children = true;
  d.plan.ensure_ssh_secret = d.spec.launcher == contract::LauncherMode::kMpi;
  sortPods(d);
  scaleWorkers(d, status);
  d.trained = trainingDone(d);
  // Once the training is done only the evaluator's failures matter: it is replaced to evaluate
  // the final model, and the others' pods are done with.
  if (d.trained ? replaceAlone(d, true) : (replaceAlone(d, false) || failurePolicy(d))) {
    return std::move(d.plan);
  }
  if (success(d) || growElastic(d)) return std::move(d.plan);
  createMissing(d);
  if (scheduleTimeout(d)) return std::move(d.plan);
  countPods(d);
  return d.finish();
}

}  // namespace ringmaster::op
