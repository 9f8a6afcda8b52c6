#include "operator/decide.h"

#include <algorithm>

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
    setCondition(status, kRunning, false, "JobFailed", "the job failed", generation, now);
  }
  if (isTrue(status, kRestarting)) {
    setCondition(status, kRestarting, false, "JobFailed", "the job failed", generation, now);
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
  setCondition(plan.status, kResized, true, down ? "ScaledDown" : "ScaledUp", message, generation,
               now);
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

}  // namespace

Plan decide(const kube::TrainingJob& job, const kube::TrainingJobStatus& status,
            const Observed& observed, kube::Time now, const DecideOptions& options) {
  Plan plan;
  plan.status = status;
  kube::TrainingJobStatus& s = plan.status;
  const JobSettings spec = settingsOf(job.spec);
  const int replicas = currentReplicas(spec, status);
  s.current_replicas = replicas;
  const kube::TrainingJob at = atCurrentWorld(job, s);
  const int slots = spec.podSlots();
  const int64_t generation = job.metadata.generation.value_or(0);
  const int attempt = status.restarts.value_or(0);
  if (!s.restarts) s.restarts = 0;
  auto podAt = [&](int i) -> const WorkerPod* {
    const auto index = static_cast<size_t>(i);
    return index < observed.pods.size() ? observed.pods[index].get() : nullptr;
  };

  if (spec.suspend) {
    plan.status_on_error = s;  // the deletions come first
    plan.delete_pods = PodDeletion::kAll;
    plan.delete_reason = "job suspended";
    setCondition(s, kSuspended, true, "JobSuspended",
                 "the job is suspended: its pods are deleted, its status kept", generation, now);
    // No rank runs while suspended, whatever the deleted pods still show as they terminate.
    kube::ReplicaStatus none;
    none.active = 0;
    none.ready = 0;
    none.succeeded = 0;
    none.failed = 0;
    setReplicaCounts(at, none, s);
    if (findCondition(s, kRunning) != nullptr) {
      setCondition(s, kRunning, false, "JobSuspended", "the job is suspended", generation, now);
    }
    return plan;
  }
  if (isTrue(s, kSuspended)) {
    setCondition(s, kSuspended, false, "JobResumed", "the job was resumed", generation, now);
  }

  std::optional<milliseconds> requeue;
  if (spec.active_deadline_seconds && s.start_time) {
    kube::Time due = plusSeconds(*s.start_time, *spec.active_deadline_seconds);
    if (now >= due) {
      failJob(s, "DeadlineExceeded",
              "the job ran longer than activeDeadlineSeconds (" +
                  std::to_string(*spec.active_deadline_seconds) + " s)",
              generation, now);
      plan.status_on_error = s;
      plan.requeue = milliseconds(0);  // the finished pass stops the pods
      return plan;
    }
    minDelay(requeue, timeUntil(now, due));
  }

  plan.status_on_error = s;
  if (!observed.foreign.empty()) {
    plan.refusal = "pod " + observed.foreign.front();
    return plan;
  }
  plan.ensure_children = true;
  plan.ensure_ssh_secret = spec.launcher == contract::LauncherMode::kMpi;

  // Pods of the current attempt in their role: workers inside the world, an elastic job's
  // standby pods beyond it. Anything else (older attempt, being deleted, wrong role, a standby
  // pod that ended) is stale.
  std::vector<const WorkerPod*> current(static_cast<size_t>(replicas), nullptr);
  std::vector<const WorkerPod*> standby;
  bool stale = false;
  for (int i = 0; i < slots; ++i) {
    const WorkerPod* pod = podAt(i);
    if (pod == nullptr) continue;
    const bool beyond = i >= replicas;
    if (pod->terminating) {
      stale = true;
    } else if (pod->attempt == attempt && pod->standby == beyond && !(beyond && pod->finished())) {
      if (beyond) {
        standby.push_back(pod);
      } else {
        current[static_cast<size_t>(i)] = pod;
      }
    } else {
      stale = true;
      plan.stale.push_back(pod->metadata.name);
    }
  }
  if (!plan.stale.empty()) {
    plan.delete_pods = PodDeletion::kStale;
    plan.delete_reason = "left from an older attempt or world";
  }

  // A failed rank fails or restarts the whole gang; the message names the one that failed first.
  if (const int i = firstFailedReplica(current); i >= 0) {
    const WorkerPod* pod = current[static_cast<size_t>(i)];
    const std::optional<int32_t> code = pod->exit_code;
    const std::string what = describeFailure(*pod, i);
    if (spec.restart_policy == RestartPolicy::kNever) {
      failJob(s, "RankFailed", what + "; restartPolicy is Never", generation, now);
    } else if (spec.restart_policy == RestartPolicy::kExitCode && code && *code >= 1 &&
               *code <= 127) {
      failJob(s, "RankFailed",
              what + "; exit codes 1-127 are permanent under restartPolicy ExitCode", generation,
              now);
    } else if (attempt >= spec.backoff_limit) {
      failJob(s, "BackoffLimitExceeded",
              what + "; the gang was restarted " + std::to_string(attempt) +
                  " times (backoffLimit " + std::to_string(spec.backoff_limit) + ")",
              generation, now);
    } else {
      gangRestart(plan, "RankFailed",
                  what + "; restarting all " + std::to_string(replicas) + " pods as attempt " +
                      std::to_string(attempt + 1),
                  true, attempt, generation, now);
    }
    plan.requeue = milliseconds(0);
    return plan;
  }

  // Rank 0's final summary is the run's final progress, not the last scrape of its metrics.
  if (const WorkerPod* rank0 = current.empty() ? nullptr : current[0];
      rank0 != nullptr && rank0->phase == "Succeeded") {
    foldFinalSummary(plan, *rank0);
  }
  plan.status_on_error = s;

  const bool all_succeeded = std::all_of(current.begin(), current.end(), [](const WorkerPod* pod) {
    return pod != nullptr && pod->phase == "Succeeded";
  });
  if (all_succeeded) {
    observePods(at, current, now, s);
    setCondition(s, kSucceeded, true, "AllRanksSucceeded",
                 "all " + std::to_string(replicas) + " worker pods succeeded", generation, now);
    setCondition(s, kRunning, false, "JobSucceeded", "the job succeeded", generation, now);
    s.completion_time = now;
    s.phase = phaseOf(s);
    plan.requeue = milliseconds(0);  // cleanPodPolicy, ttl
    return plan;
  }

  // A rank that succeeded while others still run: they get finishTimeoutSeconds to follow.
  if (const auto [done, done_index] = firstSucceeded(current);
      done != nullptr && spec.finish_timeout_seconds > 0) {
    const kube::Time due = plusSeconds(*done->finished_at, spec.finish_timeout_seconds);
    if (now >= due) {
      std::string running;
      for (size_t i = 0; i < current.size(); ++i) {
        if (current[i] == nullptr || current[i]->finished()) continue;
        running += (running.empty() ? "pod " : ", pod ") + current[i]->metadata.name +
                   " (replica " + std::to_string(i) + ")";
      }
      failJob(s, "RanksDidNotFinish",
              (running.empty() ? std::string("a worker pod") : running) + " still running " +
                  std::to_string(spec.finish_timeout_seconds) + " s after pod " +
                  done->metadata.name + " (replica " + std::to_string(done_index) +
                  ") succeeded (finishTimeoutSeconds): a rank that ends while others run "
                  "usually means they hang",
              generation, now);
      plan.status_on_error = s;
      plan.requeue = milliseconds(0);  // the finished pass stops the pods (cleanPodPolicy)
      return plan;
    }
    minDelay(requeue, timeUntil(now, due));
  }

  // Capacity came back for an elastic job's standby pods: the world grows by those scheduled.
  if (spec.elastic && !stale && replicas < spec.max_replicas) {
    const int returned = static_cast<int>(std::count_if(
        standby.begin(), standby.end(), [](const WorkerPod* pod) { return pod->scheduled; }));
    if (returned > 0) {
      resize(plan, replicas, std::min(spec.max_replicas, replicas + returned),
             std::to_string(returned) + " standby pod" + (returned == 1 ? "" : "s") +
                 " found room on a node",
             attempt, generation, now);
      plan.requeue = milliseconds(0);
      return plan;
    }
  }

  std::vector<int> missing;
  for (int i = 0; i < slots; ++i) {
    if (podAt(i) == nullptr) missing.push_back(i);
  }
  bool have_pod_group = false;
  if (!missing.empty()) {
    std::optional<milliseconds> wait;
    if (stale) {
      wait = milliseconds(1'000);  // the old attempt's pods must be gone first (their names)
    } else if (const kube::Condition* r = findCondition(s, kRestarting);
               r != nullptr && r->status == "True" && r->reason == "Unschedulable" &&
               s.last_restart_time) {
      int retries = std::max(1, s.schedule_retries.value_or(1));
      auto backoff = options.unschedulable_backoff * (int64_t{1} << std::min(retries - 1, 20));
      backoff = std::min<std::chrono::seconds>(backoff, options.max_unschedulable_backoff);
      kube::Time due = plusSeconds(*s.last_restart_time, backoff.count());
      if (now < due) wait = timeUntil(now, due);
    }
    if (!wait && !observed.expectations_met) wait = milliseconds(1'000);
    if (wait) {
      minDelay(requeue, *wait);
    } else {
      plan.ensure_pod_group = true;
      plan.create = std::move(missing);
      if (!s.start_time) s.start_time = now;
      minDelay(requeue, milliseconds(1'000));
    }
  } else {
    have_pod_group = observed.pod_group_served;
  }

  // Gang scheduling without a gang scheduler: all pods scheduled in time, or none held.
  const bool all_exist =
      std::all_of(current.begin(), current.end(), [](const WorkerPod* pod) { return pod; });
  if (all_exist && !have_pod_group) {
    int scheduled = 0;
    std::optional<kube::Time> oldest;
    bool gated = false;
    for (const WorkerPod* pod : current) {
      if (pod->scheduled || pod->finished()) ++scheduled;
      if (pod->created && (!oldest || *pod->created < *oldest)) oldest = pod->created;
      if (!pod->scheduling_gate.empty()) gated = true;
    }
    // Gated pods wait for a queue's admission, which may rightly take hours: the gang's
    // timeout starts once the queue let them go (the pod update that removes a gate wakes us).
    if (scheduled < replicas && oldest && !gated) {
      const int timeout = spec.schedule_timeout_seconds;
      const kube::Time start =
          observed.released && *oldest < *observed.released ? *observed.released : *oldest;
      kube::Time due = plusSeconds(start, timeout);
      if (now >= due && spec.elastic && scheduled >= spec.min_replicas) {
        resize(plan, replicas, scheduled,
               std::to_string(scheduled) + "/" + std::to_string(replicas) +
                   " pods scheduled within scheduleTimeoutSeconds (" + std::to_string(timeout) +
                   " s)",
               attempt, generation, now);
        plan.requeue = milliseconds(1'000);
        return plan;
      }
      if (now >= due) {
        const int retries = s.schedule_retries.value_or(0) + 1;
        s.schedule_retries = retries;
        gangRestart(plan, "Unschedulable",
                    std::to_string(scheduled) + "/" + std::to_string(replicas) +
                        " pods scheduled within scheduleTimeoutSeconds (" +
                        std::to_string(timeout) + " s): released the gang, retry " +
                        std::to_string(retries) + " after backoff",
                    false, attempt, generation, now);
        plan.requeue = milliseconds(1'000);
        return plan;
      }
      minDelay(requeue, timeUntil(now, due));
    }
  }

  // The status to write once the creations succeeded counts the pods they made (Pending, as the
  // API server returns a new pod), so a job's first status already says its workers exist and
  // the next pass, seeing them in the cache, has nothing new to write.
  std::vector<const WorkerPod*> counted = current;
  WorkerPod placeholder;
  placeholder.phase = "Pending";
  placeholder.attempt = attempt;
  placeholder.created = now;
  for (int i : plan.create) {
    if (i < replicas) counted[static_cast<size_t>(i)] = &placeholder;
  }
  observePods(at, counted, now, s);
  const WorkerPod* rank0 = current.empty() ? nullptr : current[0];
  if (options.read_progress && rank0 != nullptr && rank0->phase == "Running" &&
      !rank0->pod_ip.empty()) {
    plan.read_progress = true;
    minDelay(requeue, options.progress_interval);
  }
  plan.requeue = requeue;
  return plan;
}

}  // namespace ringmaster::op
