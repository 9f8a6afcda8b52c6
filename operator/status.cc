#include "operator/status.h"

#include <cctype>

#include "operator/builders.h"
#include "operator/validate.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/utf8.h"

namespace ringmaster::op {

bool podReady(const kube::Pod& pod) {
  for (const kube::Condition& c : pod.status.conditions) {
    if (c.type == "Ready") return c.status == "True";
  }
  return false;
}

bool podScheduled(const kube::Pod& pod) {
  if (!pod.spec.node_name.empty()) return true;
  for (const kube::Condition& c : pod.status.conditions) {
    if (c.type == "PodScheduled") return c.status == "True";
  }
  return false;
}

std::optional<int32_t> exitCodeOf(const kube::Pod& pod) {
  std::optional<int32_t> any;
  for (const kube::ContainerStatus& cs : pod.status.container_statuses) {
    if (!cs.state || !cs.state->terminated) continue;
    if (cs.name == kWorkerContainer) return cs.state->terminated->exit_code;
    if (!any) any = cs.state->terminated->exit_code;
  }
  return any;
}

int firstFailedReplica(const std::vector<const WorkerPod*>& pods) {
  // Smaller is more likely the cause: (consequence?, finishedAt, index).
  auto rank = [](const WorkerPod& pod) {
    const std::optional<int32_t>& code = pod.exit_code;
    const bool consequence = !code || *code < 1 || *code > 127;
    return std::make_pair(consequence, pod.finished_at);
  };
  int best = -1;
  std::pair<bool, std::optional<kube::Time>> best_rank;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i] == nullptr || pods[i]->phase != "Failed") continue;
    auto r = rank(*pods[i]);
    // An unknown finishedAt sorts last among equals.
    const bool better = best < 0 || r.first < best_rank.first ||
                        (r.first == best_rank.first && r.second &&
                         (!best_rank.second || *r.second < *best_rank.second));
    if (better) {
      best = static_cast<int>(i);
      best_rank = r;
    }
  }
  return best;
}

std::optional<std::string> terminationMessageOf(const kube::Pod& pod) {
  std::optional<std::string> any;
  for (const kube::ContainerStatus& cs : pod.status.container_statuses) {
    if (!cs.state || !cs.state->terminated || !cs.state->terminated->message) continue;
    if (cs.name == kWorkerContainer) return cs.state->terminated->message;
    if (!any) any = cs.state->terminated->message;
  }
  return any;
}

namespace {

std::string_view trimmed(std::string_view s) {
  const char* space = " \t\r\n";
  const size_t first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

}  // namespace

std::string foldMessage(std::string_view message, size_t max_bytes) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    std::string_view line = trimmed(message.substr(start, end - start));
    if (!line.empty()) lines.push_back(line);
    start = end + 1;
  }
  static constexpr std::string_view kJoin = " | ", kCut = "...";
  std::string out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const size_t needed = it->size() + (out.empty() ? 0 : kJoin.size());
    if (out.size() + needed <= max_bytes) {
      out.insert(0, std::string(*it) + (out.empty() ? "" : std::string(kJoin)));
      continue;
    }
    if (out.empty() && max_bytes > kCut.size()) {
      out = std::string(core::utf8Prefix(*it, max_bytes - kCut.size())) + std::string(kCut);
    }
    break;
  }
  return out;
}

int attemptOf(const kube::Pod& pod) {
  auto it = pod.metadata.labels.find(kAttemptLabel);
  if (it == pod.metadata.labels.end()) return -1;
  core::Result<int64_t> n = core::parseInt(it->second);
  return n.ok() && *n >= 0 && *n < (1 << 30) ? static_cast<int>(*n) : -1;
}

const kube::Condition* findCondition(const std::vector<kube::Condition>& conditions,
                                     std::string_view type) {
  for (const kube::Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

const kube::Condition* findCondition(const kube::TrainingJobStatus& status, std::string_view type) {
  return findCondition(status.conditions, type);
}

bool isTrue(const kube::TrainingJobStatus& status, std::string_view type) {
  const kube::Condition* c = findCondition(status, type);
  return c != nullptr && c->status == "True";
}

bool isFinished(const kube::TrainingJobStatus& status) {
  return isTrue(status, kSucceeded) || isTrue(status, kFailed);
}

// metav1.Condition's reason: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1024.
std::string conditionReason(std::string reason) {
  auto allowed = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (char c : reason) {
    if (allowed(c) && (!out.empty() || std::isalpha(static_cast<unsigned char>(c)))) out += c;
  }
  if (out.size() > kMaxConditionReason) out.resize(kMaxConditionReason);
  return out.empty() ? "Unknown" : out;
}

// metav1.Condition's message: at most 32768 bytes, cut where a UTF-8 character starts.
std::string conditionMessage(std::string message) {
  if (message.size() <= kMaxConditionMessage) return message;
  return std::string(core::utf8Prefix(message, kMaxConditionMessage));
}

void setCondition(kube::TrainingJobStatus& status, std::string_view type, bool value,
                  std::string reason, std::string message, int64_t generation, kube::Time now) {
  setCondition(status.conditions, type, value, std::move(reason), std::move(message), generation,
               now);
}

void setCondition(std::vector<kube::Condition>& conditions, std::string_view type, bool value,
                  std::string reason, std::string message, int64_t generation, kube::Time now) {
  const std::string text = value ? "True" : "False";
  kube::Condition* c = nullptr;
  for (kube::Condition& existing : conditions) {
    if (existing.type == type) c = &existing;
  }
  if (c == nullptr) {
    conditions.emplace_back();
    c = &conditions.back();
    c->type = std::string(type);
  }
  if (c->status != text || !c->last_transition_time) c->last_transition_time = now;
  c->status = text;
  c->reason = conditionReason(std::move(reason));
  c->message = conditionMessage(std::move(message));
  c->observed_generation = generation;
}

std::string phaseOf(const kube::TrainingJobStatus& status) {
  if (isTrue(status, kFailed)) return "Failed";
  if (isTrue(status, kSucceeded)) return "Succeeded";
  if (isTrue(status, kSuspended)) return "Suspended";
  if (isTrue(status, kRunning)) return "Running";
  if (isTrue(status, kRestarting)) return "Restarting";
  return "Pending";
}

std::optional<std::string> reasonOf(const kube::TrainingJobStatus& status) {
  const std::string phase = phaseOf(status);
  if (phase == "Failed") return findCondition(status, kFailed)->reason;
  if (phase != "Pending" && phase != "Restarting") return std::nullopt;
  const kube::Condition* created = findCondition(status, kCreated);
  if (created != nullptr && created->status == "False") return created->reason;
  const kube::Condition* running = findCondition(status, kRunning);
  if (running != nullptr && running->status == "False" &&
      running->reason != reason::kRanksNotReady) {
    return running->reason;
  }
  return std::nullopt;
}

std::optional<PodProblem> podProblem(const kube::Pod& pod) {
  for (const kube::Condition& c : pod.status.conditions) {
    if (c.type == "PodScheduled" && c.status == "False" && c.reason == "Unschedulable") {
      return PodProblem{"Unschedulable",
                        "pod " + pod.metadata.name + ": " + c.message.value_or("unschedulable")};
    }
  }
  for (const auto* statuses :
       {&pod.status.init_container_statuses, &pod.status.container_statuses}) {
    for (const kube::ContainerStatus& cs : *statuses) {
      if (!cs.state || !cs.state->waiting || !cs.state->waiting->reason) continue;
      const kube::ContainerStateWaiting& waiting = *cs.state->waiting;
      const std::string& why = *waiting.reason;
      if (why.empty() || why == "ContainerCreating" || why == "PodInitializing") continue;
      std::string message = "pod " + pod.metadata.name + " container " + cs.name + ": " + why;
      if (waiting.message && !waiting.message->empty()) message += ": " + *waiting.message;
      return PodProblem{why, foldMessage(message)};
    }
  }
  return std::nullopt;
}

RoleCounts zeroCounts() {
  RoleCounts none;
  for (kube::ReplicaStatus* c : {&none.workers, &none.ps, &none.chief, &none.evaluator}) {
    c->active = 0;
    c->ready = 0;
    c->succeeded = 0;
    c->failed = 0;
  }
  return none;
}

void setReplicaCounts(const kube::TrainingJob& job, const RoleCounts& counts,
                      kube::TrainingJobStatus& status) {
  const JobSettings settings = settingsOf(job.spec);
  const int procs = settings.procs_per_replica;
  // The ranks of the current world (a job that scales its workers: those whose slots are filled).
  const int world = settings.podsWith(settings.replicas) * procs;
  status.replicas = counts.workers;
  kube::RoleStatuses roles = status.roles.value_or(kube::RoleStatuses{});
  roles.ps = settings.ps_pods > 0 ? std::optional(counts.ps) : std::nullopt;
  roles.chief = settings.chief_pods > 0 ? std::optional(counts.chief) : std::nullopt;
  roles.evaluator = settings.evaluator_pods > 0 ? std::optional(counts.evaluator) : std::nullopt;
  status.roles = roles;
  if (!roles.ps && !roles.chief && !roles.evaluator &&
      (roles.extra.is_null() || roles.extra.empty())) {
    status.roles.reset();
  }
  const int ready = counts.workers.ready.value_or(0) + counts.ps.ready.value_or(0) +
                    counts.chief.ready.value_or(0) + counts.evaluator.ready.value_or(0);
  status.world_size = world;
  status.world = std::to_string(ready * procs) + "/" + std::to_string(world);
}

void observePods(const kube::TrainingJob& job, const std::vector<const WorkerPod*>& pods,
                 kube::Time now, kube::TrainingJobStatus& status) {
  const JobSettings settings = settingsOf(job.spec);
  const int replicas = settings.podsWith(settings.replicas);  // the current world's pods
  const int procs = settings.procs_per_replica;
  const int64_t generation = job.metadata.generation.value_or(0);
  RoleCounts by_role = zeroCounts();
  kube::ReplicaStatus counts = by_role.workers;  // every role's together
  int existing = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    const WorkerPod* pod = pods[i];
    if (pod == nullptr) continue;
    ++existing;
    const Role r = settings.roleOf(static_cast<int32_t>(i));
    kube::ReplicaStatus& role = r == Role::kPs          ? by_role.ps
                                : r == Role::kChief     ? by_role.chief
                                : r == Role::kEvaluator ? by_role.evaluator
                                                        : by_role.workers;
    for (kube::ReplicaStatus* c : {&counts, &role}) {
      if (pod->phase == "Succeeded") {
        ++*c->succeeded;
      } else if (pod->phase == "Failed") {
        ++*c->failed;
      } else {
        ++*c->active;
        if (pod->phase == "Running" && pod->ready) ++*c->ready;
      }
    }
  }
  setReplicaCounts(job, by_role, status);
  if (!status.restarts) status.restarts = 0;
  // Every pod, not some: a quota that admitted only part of the gang leaves Created False.
  if (existing == replicas && !isTrue(status, kCreated)) {
    setCondition(
        status, kCreated, true, reason::kWorkersCreated,
        "created " + std::to_string(settings.replicas) + " worker pods" +
            (settings.ps_pods > 0 ? ", " + std::to_string(settings.ps_pods) + " ps pods" : "") +
            (settings.chief_pods > 0 ? ", the chief pod" : "") +
            (settings.evaluator_pods > 0 ? ", the evaluator pod" : ""),
        generation, now);
  }
  // A rank that finished first still joined: the job stays Running while the others finish
  // (instead of flapping to Pending for the last seconds of a successful run).
  const bool all_ready =
      *counts.ready == replicas || (isTrue(status, kRunning) && *counts.failed == 0 &&
                                    *counts.ready + *counts.succeeded == replicas);
  // A parameter-server job's worker pods replaced alone rejoin while the others train on: the
  // job stays Running, and says so.
  int replacing = 0;
  bool others_in = isTrue(status, kRunning) && !all_ready;
  for (int i = 0; i < settings.gangPods() && others_in; ++i) {
    if (!settings.slotFilled(i)) continue;
    const WorkerPod* pod =
        i < static_cast<int>(pods.size()) ? pods[static_cast<size_t>(i)] : nullptr;
    const bool in =
        pod != nullptr && (pod->phase == "Succeeded" || (pod->phase == "Running" && pod->ready));
    if (in) continue;
    if (settings.replacedAlone(i)) {
      ++replacing;
    } else {
      others_in = false;
    }
  }
  if (others_in && replacing > 0) {
    setCondition(status, kRunning, true, reason::kAllRanksJoined,
                 std::to_string(replacing) + " worker pod(s) out of the rendezvous (replaced, or " +
                     "done after worker 0) while the other ranks train on",
                 generation, now);
  } else if (all_ready) {
    setCondition(status, kRunning, true, reason::kAllRanksJoined,
                 "all " + std::to_string(replicas * procs) + " ranks joined the rendezvous",
                 generation, now);
    if (isTrue(status, kRestarting)) {
      setCondition(status, kRestarting, false, reason::kAllRanksJoined,
                   "attempt " + std::to_string(*status.restarts) + " is running", generation, now);
    }
  } else if (findCondition(status, kRunning) != nullptr || existing > 0) {
    std::optional<PodProblem> problem;
    int gated = 0;
    std::string gate;
    for (const WorkerPod* pod : pods) {
      if (pod != nullptr && !problem) problem = pod->problem;
      if (pod != nullptr && !pod->scheduling_gate.empty()) {
        ++gated;
        gate = pod->scheduling_gate;
      }
    }
    if (problem) {
      setCondition(status, kRunning, false, problem->reason, problem->message, generation, now);
    } else if (gated > 0) {
      setCondition(status, kRunning, false, reason::kSchedulingGated,
                   std::to_string(gated) + "/" + std::to_string(replicas) +
                       " pods wait for their scheduling gates to be removed (" + gate +
                       "): a queue has not admitted the job yet",
                   generation, now);
    } else {
      setCondition(status, kRunning, false, reason::kRanksNotReady,
                   std::to_string(*counts.ready * procs) + "/" + std::to_string(replicas * procs) +
                       " ranks joined the rendezvous",
                   generation, now);
    }
  }
  status.phase = phaseOf(status);
}

}  // namespace ringmaster::op
