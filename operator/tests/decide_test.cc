#include "operator/decide.h"

#include <gtest/gtest.h>

#include <ostream>

#include "operator/builders.h"
#include "operator/queue_admission.h"
#include "operator/status.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using std::chrono::milliseconds;
using testing::defaulted;
using testing::makeJob;

const kube::Time kNow = kube::Time::fromUnixSeconds(1795312800);

kube::Time ago(int seconds) { return plusSeconds(kNow, -seconds); }

// The table's input: spec fields, status, observed pods.
struct Spec {
  int replicas = 2;
  bool suspend = false;
  std::string restart_policy{};  // "" = the default
  std::optional<int32_t> backoff_limit{};
  std::optional<int64_t> active_deadline_seconds{};
  std::optional<int32_t> finish_timeout_seconds{};
  std::string launcher{};                 // "" = the default
  std::optional<int32_t> min_replicas{};  // set: spec.elastic
  std::optional<int32_t> max_replicas{};
  int servers = 0;         // spec.trainer.parallelism.parameterServer.servers
  int ps_pods = 0;         // spec.roles.ps.replicas: pods of their own after the workers
  bool chief = false;      // spec.roles.chief: a user program's chief pod, after the ps pods
  bool evaluator = false;  // spec.roles.evaluator: a user program's evaluator pod, last
};

struct Cond {
  std::string type{};
  bool value = true;
  std::string reason{};
};

struct Status {
  std::optional<int32_t> restarts{};
  std::optional<int> started_ago{};  // startTime, seconds before now
  std::vector<Cond> conditions{};
  std::optional<int32_t> schedule_retries{};
  std::optional<int> last_restart_ago{};
  std::optional<int32_t> current_replicas{};
  std::optional<int32_t> replaced_pods{};
  std::vector<int> replaced{};  // status.replacements: the pods at these indices (attempt 0)
};

struct PodIn {
  int index = 0;
  std::string phase = "Running";
  int attempt = 0;
  bool ready = true;
  bool scheduled = true;
  std::optional<int32_t> exit_code{};
  bool terminating = false;
  std::string pod_ip{};
  int created_ago = 10;
  bool foreign = false;
  bool gated = false;                 // held by a queue's scheduling gate (implies not scheduled)
  std::optional<bool> standby{};      // its standby label, when not what its index implies
  std::optional<int> finished_ago{};  // its container's finishedAt, seconds before now
};

// The plan's essentials.
struct Expect {
  std::string phase{};
  std::string condition{};  // "<type>=<True|False>/<reason>", "" = not checked
  std::vector<int> create{};
  PodDeletion deletion = PodDeletion::kNone;
  bool release = false;
  std::optional<milliseconds> requeue{};
  bool ensure_children = true;
  bool read_progress = false;
  std::string refusal{};
  // Status fields checked when set.
  std::optional<int32_t> restarts{};
  std::optional<int32_t> schedule_retries{};
  std::string world{};
  bool start_time = false;       // status.startTime is now (set by this pass)
  bool completion_time = false;  // status.completionTime is now
  std::optional<int32_t> current_replicas{};
  std::string resized{};   // the Resized condition, as `condition`
  std::string replaced{};  // the Replaced condition, as `condition`
  std::optional<int32_t> replaced_pods{};
  std::vector<std::string> stale{};  // Plan::stale, checked with deletion kStale
};

struct Row {
  std::string name{};
  Spec spec{};
  Status status{};
  std::vector<PodIn> pods{};
  bool expectations_met = true;
  bool pod_group_served = false;
  std::optional<int> released_ago{};  // Observed::released, seconds before now
  Expect want{};
};

std::ostream& operator<<(std::ostream& os, const Row& row) { return os << row.name; }

kube::TrainingJob jobOf(const Spec& spec) {
  kube::TrainingJob job = makeJob("fmnist", spec.replicas);
  if (spec.suspend) job.spec.suspend = true;
  if (!spec.restart_policy.empty()) job.spec.restart_policy = spec.restart_policy;
  if (spec.backoff_limit) job.spec.backoff_limit = *spec.backoff_limit;
  if (spec.active_deadline_seconds)
    job.spec.active_deadline_seconds = *spec.active_deadline_seconds;
  if (spec.finish_timeout_seconds) job.spec.finish_timeout_seconds = *spec.finish_timeout_seconds;
  if (!spec.launcher.empty()) job.spec.launcher = spec.launcher;
  if (spec.servers > 0) {
    job.spec.trainer = kube::TrainerSpec{};
    job.spec.trainer->parallelism = kube::ParallelismSpec{};
    job.spec.trainer->parallelism->parameter_server = kube::ParameterServerSpec{};
    job.spec.trainer->parallelism->parameter_server->servers = spec.servers;
  }
  if (spec.ps_pods > 0) {
    job.spec.roles.emplace().ps.emplace().replicas = spec.ps_pods;
    job.spec.trainer.emplace().parallelism.emplace().parameter_server.emplace();
  }
  if (spec.chief) {
    job.spec.roles.emplace(job.spec.roles.value_or(kube::Roles{})).chief.emplace().replicas = 1;
    job.spec.command = {"python3", "train.py"};
    job.spec.trainer.reset();
  }
  if (spec.evaluator) {
    job.spec.roles.emplace(job.spec.roles.value_or(kube::Roles{})).evaluator.emplace().replicas = 1;
    job.spec.command = {"python3", "train.py"};
    job.spec.trainer.reset();
  }
  if (spec.min_replicas) {
    job.spec.elastic = kube::ElasticPolicy{};
    job.spec.elastic->min_replicas = spec.min_replicas;
    job.spec.elastic->max_replicas = spec.max_replicas;
  }
  return defaulted(job);
}

// The uid the table gives the pod at `index` of `attempt`.
std::string uidOf(int index, int attempt) {
  return "pod-uid-" + std::to_string(index) + "-" + std::to_string(attempt);
}

kube::TrainingJobStatus statusOf(const Status& in) {
  kube::TrainingJobStatus status;
  status.restarts = in.restarts;
  if (in.started_ago) status.start_time = ago(*in.started_ago);
  for (const Cond& c : in.conditions) {
    setCondition(status, c.type, c.value, c.reason, "", 1, ago(60));
  }
  status.schedule_retries = in.schedule_retries;
  if (in.last_restart_ago) status.last_restart_time = ago(*in.last_restart_ago);
  status.current_replicas = in.current_replicas;
  status.replaced_pods = in.replaced_pods;
  for (int index : in.replaced) {
    kube::PodReplacement r;
    r.pod = workerName("fmnist", index);
    r.uid = uidOf(index, 0);
    status.replacements.push_back(r);
  }
  return status;
}

kube::Pod podOf(const kube::TrainingJob& job, const PodIn& in) {
  kube::Pod pod = buildWorkerPod(job, in.index, in.attempt, "store-secret-for-tests");
  pod.metadata.uid = uidOf(in.index, in.attempt);
  if (in.foreign) pod.metadata.owner_references.clear();
  pod.metadata.creation_timestamp = ago(in.created_ago);
  if (in.terminating) pod.metadata.deletion_timestamp = kNow;
  if (in.standby) {
    if (*in.standby) {
      pod.metadata.labels[kStandbyLabel] = "true";
    } else {
      pod.metadata.labels.erase(kStandbyLabel);
    }
  }
  pod.status.phase = in.phase;
  pod.status.pod_ip = in.pod_ip;
  kube::Condition ready;
  ready.type = "Ready";
  ready.status = in.ready ? "True" : "False";
  pod.status.conditions.push_back(ready);
  if (in.gated) {
    pod.spec.scheduling_gates.push_back({kAdmissionGate, {}});
    kube::Condition scheduled;
    scheduled.type = "PodScheduled";
    scheduled.status = "False";
    scheduled.reason = "SchedulingGated";
    pod.status.conditions.push_back(scheduled);
  } else if (in.scheduled) {
    pod.spec.node_name = "node-1";
  } else {
    kube::Condition scheduled;
    scheduled.type = "PodScheduled";
    scheduled.status = "False";
    scheduled.reason = "Unschedulable";
    scheduled.message = "0/3 nodes are available";
    pod.status.conditions.push_back(scheduled);
  }
  if (in.exit_code) {
    kube::ContainerStatus cs;
    cs.name = kWorkerContainer;
    cs.state = kube::ContainerState{};
    cs.state->terminated = kube::ContainerStateTerminated{};
    cs.state->terminated->exit_code = *in.exit_code;
    if (in.finished_ago) cs.state->terminated->finished_at = ago(*in.finished_ago);
    pod.status.container_statuses.push_back(cs);
  }
  return pod;
}

Observed observedOf(const kube::TrainingJob& spec_job, const Row& row) {
  const kube::TrainingJob job = atCurrentWorld(spec_job, statusOf(row.status));
  Observed observed;
  observed.pods.assign(static_cast<size_t>(settingsOf(spec_job.spec).podSlots()), nullptr);
  for (const PodIn& in : row.pods) {
    if (in.foreign) {
      observed.foreign.push_back(workerName("fmnist", in.index));
    } else {
      observed.pods[static_cast<size_t>(in.index)] =
          std::make_shared<WorkerPod>(workerPodOf(podOf(job, in)));
    }
  }
  observed.expectations_met = row.expectations_met;
  observed.pod_group_served = row.pod_group_served;
  if (row.released_ago) observed.released = ago(*row.released_ago);
  return observed;
}

std::string conditionText(const kube::TrainingJobStatus& status, const std::string& type) {
  const kube::Condition* c = findCondition(status, type);
  if (c == nullptr) return "";
  return c->type + "=" + c->status + "/" + c->reason.value_or("");
}

class Decide : public ::testing::TestWithParam<Row> {};

TEST_P(Decide, PlansTheTransition) {
  const Row& row = GetParam();
  const kube::TrainingJob job = jobOf(row.spec);
  const Plan plan = decide(job, statusOf(row.status), observedOf(job, row), kNow, DecideOptions{});
  const Expect& want = row.want;

  EXPECT_EQ(phaseOf(plan.status), want.phase);
  // Every plan's status names the worker pods for the scale subresource.
  EXPECT_EQ(plan.status.selector, workerSelector(job.metadata.name));
  if (!want.condition.empty()) {
    const std::string type = want.condition.substr(0, want.condition.find('='));
    EXPECT_EQ(conditionText(plan.status, type), want.condition);
  }
  EXPECT_EQ(plan.create, want.create);
  EXPECT_EQ(plan.ensure_pod_group, !want.create.empty());
  EXPECT_EQ(plan.delete_pods, want.deletion);
  EXPECT_EQ(plan.release_pods, want.release);
  EXPECT_EQ(plan.requeue, want.requeue);
  EXPECT_EQ(plan.ensure_children, want.ensure_children);
  EXPECT_EQ(plan.read_progress, want.read_progress);
  EXPECT_EQ(plan.refusal.value_or(""), want.refusal);
  if (want.restarts) {
    EXPECT_EQ(plan.status.restarts, want.restarts);
  }
  if (want.schedule_retries) {
    EXPECT_EQ(plan.status.schedule_retries, want.schedule_retries);
  }
  if (!want.world.empty()) {
    EXPECT_EQ(plan.status.world, want.world);
  }
  if (want.current_replicas) {
    EXPECT_EQ(plan.status.current_replicas, want.current_replicas);
  }
  EXPECT_EQ(conditionText(plan.status, kResized), want.resized);
  EXPECT_EQ(conditionText(plan.status, kReplaced), want.replaced);
  if (want.replaced_pods) {
    EXPECT_EQ(plan.status.replaced_pods, want.replaced_pods);
  }
  if (want.deletion == PodDeletion::kStale && !want.stale.empty()) {
    EXPECT_EQ(plan.stale, want.stale);
  }
  if (want.start_time) {
    EXPECT_EQ(plan.status.start_time, kNow);
  }
  if (want.completion_time) {
    EXPECT_EQ(plan.status.completion_time, kNow);
  }
  // Creating pods is the only plan that starts the job's clock; a failed call does not.
  EXPECT_EQ(plan.status_on_error.start_time, statusOf(row.status).start_time);
}

const PodIn kRunning0{.index = 0};
const PodIn kRunning1{.index = 1};

PodIn failed(int index, int32_t exit_code, int attempt = 0) {
  return {.index = index,
          .phase = "Failed",
          .attempt = attempt,
          .ready = false,
          .exit_code = exit_code};
}

PodIn succeeded(int index) {
  return {.index = index, .phase = "Succeeded", .ready = false, .exit_code = 0};
}

PodIn gatedByQueue(int index, int created_ago) {
  return {.index = index,
          .phase = "Pending",
          .ready = false,
          .scheduled = false,
          .created_ago = created_ago,
          .gated = true};
}

PodIn unscheduled(int index, int created_ago) {
  return {.index = index,
          .phase = "Pending",
          .ready = false,
          .scheduled = false,
          .created_ago = created_ago};
}

const milliseconds kSecond{1'000};

// One row per transition of an active job.
const Row kRows[] = {
    {.name = "FreshJobCreatesEveryPodAndEnsuresItsChildren",
     .want = {.phase = "Pending",
              .condition = "Created=True/WorkersCreated",
              .create = {0, 1},
              .requeue = kSecond,
              .restarts = 0,
              .start_time = true}},
    {.name = "SuspendedDeletesEveryPodAndCountsNoRank",
     .spec = {.suspend = true},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, kRunning1},
     .want = {.phase = "Suspended",
              .condition = "Suspended=True/JobSuspended",
              .deletion = PodDeletion::kAll,
              .ensure_children = false,
              .world = "0/2"}},
    {.name = "SuspendedJobsRunningConditionSaysWhy",
     .spec = {.suspend = true},
     .status = {.conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, kRunning1},
     .want = {.phase = "Suspended",
              .condition = "Running=False/JobSuspended",
              .deletion = PodDeletion::kAll,
              .ensure_children = false}},
    {.name = "ResumedJobCreatesItsPodsAgain",
     .status = {.restarts = 0, .conditions = {{"Suspended", true, "JobSuspended"}}},
     .want = {.phase = "Pending",
              .condition = "Suspended=False/JobResumed",
              .create = {0, 1},
              .requeue = kSecond,
              .start_time = true}},
    {.name = "ActiveDeadlinePassedFailsTheJob",
     .spec = {.active_deadline_seconds = 60},
     .status = {.started_ago = 100},
     .pods = {kRunning0, kRunning1},
     .want = {.phase = "Failed",
              .condition = "Failed=True/DeadlineExceeded",
              .requeue = milliseconds(0),
              .ensure_children = false,
              .completion_time = true}},
    {.name = "ActiveDeadlineAheadRequeuesForIt",
     .spec = {.active_deadline_seconds = 600},
     .status = {.started_ago = 100},
     .pods = {kRunning0, kRunning1},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .requeue = milliseconds(500'000)}},
    {.name = "OlderAttemptsPodsAreDeletedAndCreationWaits",
     .status = {.restarts = 1},
     .pods = {{.index = 0, .attempt = 0}},
     .want = {.phase = "Pending", .deletion = PodDeletion::kStale, .requeue = kSecond}},
    {.name = "ATerminatingPodsNameIsNotReusedUntilItIsGone",
     .pods = {{.index = 0, .terminating = true}},
     .want = {.phase = "Pending", .requeue = kSecond}},
    {.name = "RestartPolicyNeverFailsOnTheFirstFailedRank",
     .spec = {.restart_policy = "Never"},
     .pods = {kRunning0, failed(1, 1)},
     .want = {.phase = "Failed",
              .condition = "Failed=True/RankFailed",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "RestartPolicyExitCodeFailsOnExitCode1To127",
     .spec = {.restart_policy = "ExitCode"},
     .pods = {kRunning0, failed(1, 127)},
     .want = {.phase = "Failed",
              .condition = "Failed=True/RankFailed",
              .requeue = milliseconds(0)}},
    {.name = "RestartPolicyExitCodeRetriesASignal",
     .spec = {.restart_policy = "ExitCode"},
     .pods = {kRunning0, failed(1, 137)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
    {.name = "RestartPolicyOnFailureRestartsTheGangUnderBackoffLimit",
     .spec = {.restart_policy = "OnFailure", .backoff_limit = 3},
     .status = {.restarts = 2},
     .pods = {failed(0, 1, 2), {.index = 1, .attempt = 2}},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 3}},
    {.name = "RestartPolicyOnFailureFailsAtBackoffLimit",
     .spec = {.restart_policy = "OnFailure", .backoff_limit = 3},
     .status = {.restarts = 3},
     .pods = {failed(0, 1, 3), {.index = 1, .attempt = 3}},
     .want = {.phase = "Failed",
              .condition = "Failed=True/BackoffLimitExceeded",
              .requeue = milliseconds(0),
              .restarts = 3}},
    {.name = "AllRanksSucceededSucceedsTheJob",
     .status = {.started_ago = 100, .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {succeeded(0), succeeded(1)},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/AllRanksSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "OneRankSucceededKeepsTheJobRunning",
     .status = {.started_ago = 100, .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {succeeded(0), kRunning1},
     .want = {.phase = "Running", .condition = "Running=True/AllRanksJoined", .world = "1/2"}},
    // A rank that ended while others run: they get finishTimeoutSeconds (600 by default) to
    // follow, then the job fails naming them (cleanPodPolicy stops them).
    {.name = "ARankThatSucceededGivesTheOthersTheFinishTimeout",
     .status = {.started_ago = 1000, .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods =
         {{.index = 0, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 100},
          kRunning1},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .requeue = milliseconds(500'000),
              .world = "1/2"}},
    {.name = "RanksStillRunningAfterTheFinishTimeoutFailTheJob",
     .status = {.started_ago = 1000, .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods =
         {{.index = 0, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 700},
          kRunning1},
     .want = {.phase = "Failed",
              .condition = "Failed=True/RanksDidNotFinish",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "FinishTimeoutZeroWaitsWithoutBound",
     .spec = {.finish_timeout_seconds = 0},
     .status = {.started_ago = 9000, .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods =
         {{.index = 0, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 5000},
          kRunning1},
     .want = {.phase = "Running", .condition = "Running=True/AllRanksJoined", .world = "1/2"}},
    {.name = "AMissingPodWaitsWhileExpectationsAreUnmet",
     .status = {.started_ago = 5},
     .pods = {kRunning0},
     .expectations_met = false,
     .want = {.phase = "Pending", .requeue = kSecond}},
    {.name = "AMissingPodIsCreatedOnceExpectationsAreMet",
     .status = {.started_ago = 5},
     .pods = {kRunning0},
     .want = {.phase = "Pending",
              .condition = "Created=True/WorkersCreated",
              .create = {1},
              .requeue = kSecond}},
    {.name = "PodsToCreateCountAsPendingInTheStatusToWrite",
     .status = {.started_ago = 5},
     .pods = {kRunning0},
     .want = {.phase = "Pending",
              .condition = "Running=False/RanksNotReady",
              .create = {1},
              .requeue = kSecond,
              .world = "1/2"}},
    {.name = "UnschedulableGangWaitsOutItsBackoff",
     .status = {.restarts = 0,
                .conditions = {{"Restarting", true, "Unschedulable"}},
                .schedule_retries = 1,
                .last_restart_ago = 4},
     .want = {.phase = "Restarting", .requeue = milliseconds(6'000)}},
    {.name = "UnschedulableGangsBackoffDoublesPerRetry",
     .status = {.conditions = {{"Restarting", true, "Unschedulable"}},
                .schedule_retries = 2,
                .last_restart_ago = 15},
     .want = {.phase = "Restarting", .requeue = milliseconds(5'000)}},
    {.name = "UnschedulableGangIsCreatedAgainAfterItsBackoff",
     .status = {.conditions = {{"Restarting", true, "Unschedulable"}},
                .schedule_retries = 1,
                .last_restart_ago = 11},
     .want = {.phase = "Restarting", .create = {0, 1}, .requeue = kSecond, .start_time = true}},
    {.name = "GangScheduleTimeoutReleasesTheGang",
     .status = {.started_ago = 400},
     .pods = {{.index = 0, .phase = "Pending", .ready = false, .created_ago = 400},
              unscheduled(1, 400)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/Unschedulable",
              .release = true,
              .requeue = kSecond,
              .restarts = 0,
              .schedule_retries = 1}},
    {.name = "GangScheduleTimeoutCountsTheRetries",
     .status = {.started_ago = 400, .schedule_retries = 2},
     .pods = {unscheduled(0, 400), unscheduled(1, 400)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/Unschedulable",
              .release = true,
              .requeue = kSecond,
              .schedule_retries = 3}},
    {.name = "GangScheduleTimeoutAheadRequeuesForIt",
     .status = {.started_ago = 100},
     .pods = {kRunning0, unscheduled(1, 100)},
     .want = {.phase = "Pending",
              .condition = "Running=False/Unschedulable",
              .requeue = milliseconds(200'000)}},
    {.name = "GangScheduleTimeoutIsTheGangSchedulersWhenItServesPodGroups",
     .status = {.started_ago = 400},
     .pods = {kRunning0, unscheduled(1, 400)},
     .pod_group_served = true,
     .want = {.phase = "Pending", .condition = "Running=False/Unschedulable"}},
    {.name = "PodsAQueueHoldsWaitForItNotForTheGangTimeout",
     .status = {.started_ago = 4000},
     .pods = {gatedByQueue(0, 4000), gatedByQueue(1, 4000)},
     .want = {.phase = "Pending", .condition = "Running=False/SchedulingGated"}},
    {.name = "ReleasedByItsQueueTheGangTimeoutCountsFromTheRelease",
     .status = {.started_ago = 4000},
     .pods = {unscheduled(0, 4000), unscheduled(1, 4000)},
     .released_ago = 100,
     .want = {.phase = "Pending",
              .condition = "Running=False/Unschedulable",
              .requeue = milliseconds(200'000)}},
    {.name = "ReleasedByItsQueueLongerThanTheTimeoutAgoTheGangIsReleased",
     .status = {.started_ago = 4000},
     .pods = {unscheduled(0, 4000), unscheduled(1, 4000)},
     .released_ago = 400,
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/Unschedulable",
              .release = true,
              .requeue = kSecond,
              .schedule_retries = 1}},
    {.name = "OneGatedPodHoldsTheGangTimeoutToo",
     .status = {.started_ago = 400},
     .pods = {kRunning0, gatedByQueue(1, 400)},
     .want = {.phase = "Pending", .condition = "Running=False/SchedulingGated"}},
    {.name = "AForeignPodIsRefused",
     .pods = {kRunning0, {.index = 1, .foreign = true}},
     .want = {.phase = "Pending", .ensure_children = false, .refusal = "pod fmnist-worker-1"}},
    {.name = "RunningRankZeroWithAnAddressIsReadForProgress",
     .status = {.started_ago = 100},
     .pods = {{.index = 0, .pod_ip = "10.0.0.7"}, kRunning1},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .requeue = milliseconds(5'000),
              .read_progress = true,
              .world = "2/2"}},
    {.name = "RankZeroWithoutAnAddressIsNotRead",
     .status = {.started_ago = 100},
     .pods = {kRunning0, {.index = 1, .pod_ip = "10.0.0.8"}},
     .want = {.phase = "Running", .condition = "Running=True/AllRanksJoined"}},
    // Elastic jobs (spec.elastic): standby pods beyond the world, resizes.
    {.name = "ElasticStartsAtReplicasWithStandbyPodsUpToMax",
     .spec = {.replicas = 2, .min_replicas = 1, .max_replicas = 3},
     .want = {.phase = "Pending",
              .create = {0, 1, 2},
              .requeue = kSecond,
              .start_time = true,
              .current_replicas = 2}},
    {.name = "ElasticWorldComesFromTheStatus",
     .spec = {.replicas = 2, .min_replicas = 1, .max_replicas = 2},
     .status = {.current_replicas = 1},
     .want = {.phase = "Pending",
              .create = {0, 1},
              .requeue = kSecond,
              .start_time = true,
              .current_replicas = 1}},
    {.name = "ElasticUnscheduledStandbyPodChangesNothing",
     .spec = {.replicas = 2, .min_replicas = 1, .max_replicas = 3},
     .status = {.started_ago = 100, .current_replicas = 2},
     .pods = {kRunning0, kRunning1, unscheduled(2, 400)},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .world = "2/2",
              .current_replicas = 2}},
    {.name = "ElasticScheduledStandbyPodGrowsTheWorld",
     .spec = {.replicas = 2, .min_replicas = 1, .max_replicas = 3},
     .status = {.restarts = 1, .started_ago = 100, .current_replicas = 2},
     .pods = {{.index = 0, .attempt = 1},
              {.index = 1, .attempt = 1},
              {.index = 2, .attempt = 1, .ready = false}},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/Resized",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1,
              .current_replicas = 3,
              .resized = "Resized=True/ScaledUp"}},
    {.name = "ElasticShrinksToTheScheduledPodsAfterScheduleTimeout",
     .spec = {.replicas = 3, .min_replicas = 2, .max_replicas = 3},
     .status = {.started_ago = 400, .current_replicas = 3},
     .pods = {{.index = 0, .created_ago = 400},
              {.index = 1, .created_ago = 400},
              unscheduled(2, 400)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/Resized",
              .release = true,
              .requeue = kSecond,
              .restarts = 0,
              .current_replicas = 2,
              .resized = "Resized=True/ScaledDown"}},
    {.name = "ElasticBelowMinReleasesTheGangAsUnschedulable",
     .spec = {.replicas = 3, .min_replicas = 3, .max_replicas = 4},
     .status = {.started_ago = 400, .current_replicas = 3},
     .pods = {{.index = 0, .created_ago = 400},
              {.index = 1, .created_ago = 400},
              unscheduled(2, 400),
              unscheduled(3, 400)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/Unschedulable",
              .release = true,
              .requeue = kSecond,
              .schedule_retries = 1,
              .current_replicas = 3}},
    {.name = "ElasticWorkerBeyondTheWorldIsStale",
     .spec = {.replicas = 3, .min_replicas = 2, .max_replicas = 3},
     .status = {.current_replicas = 2},
     .pods = {kRunning0, kRunning1, {.index = 2, .standby = false}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .current_replicas = 2}},
    {.name = "ElasticStandbyPodThatEndedIsStale",
     .spec = {.replicas = 2, .min_replicas = 1, .max_replicas = 3},
     .status = {.current_replicas = 2},
     .pods = {kRunning0, kRunning1, {.index = 2, .phase = "Failed", .ready = false}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .current_replicas = 2}},
    // Parameter servers: 3 pods, the last one the server's. Pod 1 is a worker's and not pod 0,
    // which hosts the store: it is replaced alone.
    {.name = "PsFailedWorkerPodIsReplacedAlone",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, failed(1, 137), {.index = 2}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .requeue = kSecond,
              .restarts = 0,
              .replaced = "Replaced=True/ReplacedWorkerPod",
              .replaced_pods = 1,
              .stale = {"fmnist-worker-1"}}},
    {.name = "PsReplacedPodStillInTheCacheIsDeletedNotCountedAgain",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"},
                               {"Replaced", true, "ReplacedWorkerPod"}},
                .replaced_pods = 1,
                .replaced = {1}},
     .pods = {kRunning0, failed(1, 137), {.index = 2}},
     .want = {.phase = "Running",
              .deletion = PodDeletion::kStale,
              .requeue = kSecond,
              .restarts = 0,
              .replaced = "Replaced=True/ReplacedWorkerPod",
              .replaced_pods = 1,
              .stale = {"fmnist-worker-1"}}},
    {.name = "PsWorkerPodBeingReplacedKeepsTheJobRunning",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}},
                .replaced_pods = 1},
     .pods = {kRunning0, {.index = 1, .phase = "Pending", .ready = false}, {.index = 2}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .world = "2/3",
              .replaced_pods = 1}},
    {.name = "PsPodZeroFailedRestartsTheGang",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {failed(0, 137), kRunning1, {.index = 2}},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
    {.name = "PsServerPodFailedRestartsTheGang",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, kRunning1, failed(2, 137)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
    {.name = "PsReplacementsPastBackoffLimitPerPodRestartTheGang",
     .spec = {.replicas = 3, .backoff_limit = 1, .servers = 1},
     .status = {.restarts = 0, .started_ago = 100, .replaced_pods = 1},
     .pods = {kRunning0, failed(1, 137), {.index = 2}},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1,
              .replaced_pods = 1}},
    {.name = "PsPermanentExitCodeFailsTheJob",
     .spec = {.replicas = 3, .restart_policy = "ExitCode", .servers = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, failed(1, 1), {.index = 2}},
     .want = {.phase = "Failed",
              .condition = "Failed=True/RankFailed",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "PsUnderRestartPolicyNeverAFailedWorkerFailsTheJob",
     .spec = {.replicas = 3, .restart_policy = "Never", .servers = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, failed(1, 137), {.index = 2}},
     .want = {.phase = "Failed",
              .condition = "Failed=True/RankFailed",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "PsPodZeroAndServersSucceededSucceedsWhateverAWorkerDoes",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {succeeded(0), failed(1, 137), succeeded(2)},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/ChiefSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    // Worker 0 is done: a worker failing now changes nothing; the servers finish without it.
    {.name = "PsWorkerFailingAfterWorkerZeroSucceededIsLeftAlone",
     .spec = {.replicas = 3, .servers = 1},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {succeeded(0), failed(1, 137), {.index = 2}},
     .want = {.phase = "Running", .condition = "Running=True/AllRanksJoined", .restarts = 0}},
    // The same with the server in a pod of its own (spec.roles.ps): 2 worker pods, then
    // fmnist-ps-0 at index 2, created with the workers and counted apart from them.
    {.name = "PsPodsOfTheirOwnAreCreatedWithTheWorkers",
     .spec = {.ps_pods = 1},
     .want = {.phase = "Pending",
              .condition = "Created=True/WorkersCreated",
              .create = {0, 1, 2},
              .requeue = kSecond,
              .restarts = 0,
              .world = "0/3",
              .start_time = true}},
    {.name = "PsPodsOfTheirOwnJoinTheWorld",
     .spec = {.ps_pods = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, kRunning1, {.index = 2}},
     .want = {.phase = "Running", .condition = "Running=True/AllRanksJoined", .world = "3/3"}},
    {.name = "PsPodOfItsOwnFailedRestartsTheGang",
     .spec = {.ps_pods = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, kRunning1, failed(2, 137)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
    {.name = "PsPodsOfTheirOwnLeaveAFailedWorkerToBeReplacedAlone",
     .spec = {.replicas = 3, .ps_pods = 2},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, failed(1, 137), {.index = 2}, {.index = 3}, {.index = 4}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .requeue = kSecond,
              .restarts = 0,
              .replaced = "Replaced=True/ReplacedWorkerPod",
              .replaced_pods = 1,
              .stale = {"fmnist-worker-1"}}},
    {.name = "PsPodsOfTheirOwnAndWorkerZeroSucceededSucceedTheJob",
     .spec = {.ps_pods = 1},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {succeeded(0), failed(1, 137), succeeded(2)},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/ChiefSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    // A user program's chief (spec.roles.chief) in the last pod, here after a ps pod: its
    // success is the job's, whatever the others do (TensorFlow's servers never exit).
    {.name = "ChiefPodIsCreatedAfterTheWorkersAndServers",
     .spec = {.ps_pods = 1, .chief = true},
     .want = {.phase = "Pending",
              .condition = "Created=True/WorkersCreated",
              .create = {0, 1, 2, 3},
              .requeue = kSecond,
              .restarts = 0,
              .world = "0/4",
              .start_time = true}},
    {.name = "ChiefSucceededSucceedsTheJobWhateverTheOthersDo",
     .spec = {.ps_pods = 1, .chief = true},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, failed(1, 137), {.index = 2}, succeeded(3)},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/ChiefSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "ChiefFailedRestartsTheGang",
     .spec = {.ps_pods = 1, .chief = true},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, kRunning1, {.index = 2}, failed(3, 1)},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
    {.name = "ChiefJobsWorkerFailedIsReplacedAloneBesideServers",
     .spec = {.ps_pods = 1, .chief = true},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, failed(1, 137), {.index = 2}, {.index = 3}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .requeue = kSecond,
              .restarts = 0,
              .replaced = "Replaced=True/ReplacedWorkerPod",
              .replaced_pods = 1,
              .stale = {"fmnist-worker-1"}}},
    {.name = "ChiefWithoutServersAFailedWorkerRestartsTheGang",
     .spec = {.chief = true},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, failed(1, 137), {.index = 2}},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
    // A user program's evaluator (spec.roles.evaluator): the last pod, replaced alone when it
    // fails, and given finishTimeoutSeconds after the training to evaluate the final model.
    {.name = "EvaluatorPodIsCreatedLast",
     .spec = {.ps_pods = 1, .chief = true, .evaluator = true},
     .want = {.phase = "Pending",
              .condition = "Created=True/WorkersCreated",
              .create = {0, 1, 2, 3, 4},
              .requeue = kSecond,
              .restarts = 0,
              .world = "0/5",
              .start_time = true}},
    {.name = "EvaluatorFailedIsReplacedAloneWhileTheJobTrains",
     .spec = {.evaluator = true},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, kRunning1, failed(2, 1)},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .requeue = kSecond,
              .restarts = 0,
              .replaced = "Replaced=True/ReplacedEvaluatorPod",
              .replaced_pods = 1,
              .stale = {"fmnist-evaluator-0"}}},
    {.name = "EvaluatorFailedUnderRestartPolicyNeverFailsTheJob",
     .spec = {.restart_policy = "Never", .evaluator = true},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, kRunning1, failed(2, 1)},
     .want = {.phase = "Failed",
              .condition = "Failed=True/RankFailed",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "TrainedJobWaitsForItsEvaluatorWithinTheFinishTimeout",
     .spec = {.evaluator = true},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods =
         {{.index = 0, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 20},
          {.index = 1, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 10},
          {.index = 2}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .requeue = milliseconds(590'000),
              .restarts = 0}},
    {.name = "TrainedJobWhoseEvaluatorSucceededSucceeds",
     .spec = {.evaluator = true},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {succeeded(0), succeeded(1), succeeded(2)},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/AllRanksSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "TrainedJobSucceedsPastTheFinishTimeoutWhateverItsEvaluatorDoes",
     .spec = {.evaluator = true},
     .status = {.restarts = 0, .started_ago = 1000},
     .pods =
         {{.index = 0, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 700},
          {.index = 1, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 650},
          {.index = 2}},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/AllRanksSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "ChiefSucceededAndTheEvaluatorFailedIsReplacedToEvaluateTheFinalModel",
     .spec = {.ps_pods = 1, .chief = true, .evaluator = true},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods = {kRunning0, kRunning1, {.index = 2}, succeeded(3), failed(4, 1)},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .requeue = kSecond,
              .restarts = 0,
              .replaced = "Replaced=True/ReplacedEvaluatorPod",
              .replaced_pods = 1,
              .stale = {"fmnist-evaluator-0"}}},
    {.name = "ChiefSucceededAndTheEvaluatorFailedUnderNeverSucceedsTheJob",
     .spec = {.restart_policy = "Never", .ps_pods = 1, .chief = true, .evaluator = true},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, kRunning1, {.index = 2}, succeeded(3), failed(4, 1)},
     .want = {.phase = "Succeeded",
              .condition = "Succeeded=True/ChiefSucceeded",
              .requeue = milliseconds(0),
              .completion_time = true}},
    {.name = "AnEvaluatorThatSucceededFirstStartsNoFinishTimeout",
     .spec = {.evaluator = true},
     .status = {.restarts = 0,
                .started_ago = 1000,
                .conditions = {{"Running", true, "AllRanksJoined"}}},
     .pods =
         {kRunning0,
          kRunning1,
          {.index = 2, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 700}},
     .want = {.phase = "Running", .condition = "Running=True/AllRanksJoined", .restarts = 0}},
    // An elastic job whose servers have pods of their own: its worker count follows
    // spec.replicas in slots of their own (here 3 before the ps pod), without a restart.
    {.name = "ScalingJobFillsItsFirstWorkerSlotsAndItsServers",
     .spec = {.replicas = 2, .min_replicas = 1, .max_replicas = 3, .ps_pods = 1},
     .want = {.phase = "Pending",
              .condition = "Created=True/WorkersCreated",
              .create = {0, 1, 3},
              .requeue = kSecond,
              .restarts = 0,
              .world = "0/3",
              .start_time = true,
              .current_replicas = 2}},
    {.name = "ScaledUpJobCreatesTheNewWorkerWithoutARestart",
     .spec = {.replicas = 3, .min_replicas = 1, .max_replicas = 3, .ps_pods = 1},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}},
                .current_replicas = 2},
     .pods = {kRunning0, kRunning1, {.index = 3}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .create = {2},
              .requeue = kSecond,
              .restarts = 0,
              .world = "3/4",
              .current_replicas = 3,
              .resized = "Resized=True/ScaledUp"}},
    {.name = "ScaledDownJobDeletesTheWorkersBeyondItsCount",
     .spec = {.replicas = 1, .min_replicas = 1, .max_replicas = 3, .ps_pods = 1},
     .status = {.restarts = 0,
                .started_ago = 100,
                .conditions = {{"Running", true, "AllRanksJoined"}},
                .current_replicas = 3},
     .pods = {kRunning0, kRunning1, {.index = 2}, {.index = 3}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .deletion = PodDeletion::kStale,
              .restarts = 0,
              .world = "2/2",
              .current_replicas = 1,
              .resized = "Resized=True/ScaledDown",
              .stale = {"fmnist-worker-1", "fmnist-worker-2"}}},
    {.name = "ScalingJobsWorkerWithoutRoomWaitsWithoutReleasingTheGang",
     .spec = {.replicas = 3, .min_replicas = 1, .max_replicas = 3, .ps_pods = 1},
     .status = {.restarts = 0,
                .started_ago = 1000,
                .conditions = {{"Running", true, "AllRanksJoined"}},
                .current_replicas = 3},
     .pods = {kRunning0, kRunning1, unscheduled(2, 900), {.index = 3}},
     .want = {.phase = "Running",
              .condition = "Running=True/AllRanksJoined",
              .restarts = 0,
              .world = "3/4",
              .current_replicas = 3}},
    {.name = "PsWithoutServersAFailedWorkerStillRestartsTheGang",
     .spec = {.replicas = 3},
     .status = {.restarts = 0, .started_ago = 100},
     .pods = {kRunning0, failed(1, 137), {.index = 2}},
     .want = {.phase = "Restarting",
              .condition = "Restarting=True/RankFailed",
              .release = true,
              .requeue = milliseconds(0),
              .restarts = 1}},
};

INSTANTIATE_TEST_SUITE_P(Transitions, Decide, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// Beyond the table: what a row's essentials leave out.

TEST(DecideTest, MpiJobsAlsoEnsureTheirSshSecret) {
  Row row{.name = "mpi", .spec = {.launcher = "mpi"}};
  const kube::TrainingJob job = jobOf(row.spec);
  EXPECT_TRUE(decide(job, {}, observedOf(job, row), kNow, {}).ensure_ssh_secret);
  row.spec.launcher = "";
  const kube::TrainingJob plain = jobOf(row.spec);
  EXPECT_FALSE(decide(plain, {}, observedOf(plain, row), kNow, {}).ensure_ssh_secret);
}

TEST(DecideTest, RanksThatDidNotFinishAreNamed) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 3));
  job.spec.finish_timeout_seconds = 60;
  Row row;
  row.spec.replicas = 3;
  row.pods = {
      {.index = 0, .phase = "Running"},
      {.index = 1, .phase = "Succeeded", .ready = false, .exit_code = 0, .finished_ago = 61},
      {.index = 2, .phase = "Running"}};
  const Plan plan = decide(job, statusOf(row.status), observedOf(job, row), kNow, DecideOptions{});
  const kube::Condition* failed = findCondition(plan.status, kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->message.value_or(""),
            "pod fmnist-worker-0 (replica 0), pod fmnist-worker-2 (replica 2) still running 60 s "
            "after pod fmnist-worker-1 (replica 1) succeeded (finishTimeoutSeconds): a rank that "
            "ends while others run usually means they hang");
}

TEST(DecideTest, TheFailedRanksMessageNamesItsExitCode) {
  Row row{.name = "never", .spec = {.restart_policy = "Never"}, .pods = {kRunning0, failed(1, 3)}};
  const kube::TrainingJob job = jobOf(row.spec);
  const Plan plan = decide(job, {}, observedOf(job, row), kNow, {});
  const kube::Condition* c = findCondition(plan.status, kFailed);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->message,
            "pod fmnist-worker-1 (replica 1) failed with exit code 3; restartPolicy is Never");
}

// A node that shut down ended its pods Failed with reason Terminated: the message says so.
// status.replicas counts the worker pods and status.roles.ps the ps pods; the world both.
TEST(DecideTest, EachRoleIsCountedOnItsOwn) {
  Row row{
      .name = "roles",
      .spec = {.replicas = 2, .ps_pods = 2},
      .status = {.restarts = 0, .started_ago = 100},
      .pods = {
          kRunning0, {.index = 1, .phase = "Pending", .ready = false}, {.index = 2}, succeeded(3)}};
  const kube::TrainingJob job = jobOf(row.spec);
  const Plan plan = decide(job, statusOf(row.status), observedOf(job, row), kNow, {});
  ASSERT_TRUE(plan.status.replicas && plan.status.roles && plan.status.roles->ps);
  EXPECT_EQ(plan.status.replicas->active, 2);
  EXPECT_EQ(plan.status.replicas->ready, 1);
  EXPECT_EQ(plan.status.roles->ps->active, 1);
  EXPECT_EQ(plan.status.roles->ps->ready, 1);
  EXPECT_EQ(plan.status.roles->ps->succeeded, 1);
  EXPECT_EQ(plan.status.world, "2/4");
  EXPECT_EQ(plan.status.current_replicas, 2);  // the workers, as spec.replicas counts them
  EXPECT_FALSE(plan.status.roles->evaluator.has_value());
  // The evaluator's pod on its own line, and in the world.
  Row with_evaluator{.name = "evaluator",
                     .spec = {.replicas = 2, .evaluator = true},
                     .status = {.restarts = 0, .started_ago = 100},
                     .pods = {kRunning0, kRunning1, {.index = 2}}};
  const kube::TrainingJob evaluated = jobOf(with_evaluator.spec);
  const Plan counted = decide(evaluated, statusOf(with_evaluator.status),
                              observedOf(evaluated, with_evaluator), kNow, {});
  ASSERT_TRUE(counted.status.roles && counted.status.roles->evaluator);
  EXPECT_EQ(counted.status.roles->evaluator->active, 1);
  EXPECT_EQ(counted.status.roles->evaluator->ready, 1);
  EXPECT_EQ(counted.status.replicas->active, 2);
  EXPECT_EQ(counted.status.world, "3/3");
  // Without ps pods the status has no roles.
  row.spec.ps_pods = 0;
  row.pods = {kRunning0, kRunning1};
  const kube::TrainingJob plain = jobOf(row.spec);
  EXPECT_FALSE(decide(plain, statusOf(row.status), observedOf(plain, row), kNow, {})
                   .status.roles.has_value());
}

TEST(DecideTest, TheFailedRanksMessageAddsThePodsReason) {
  Row row{.name = "shutdown", .spec = {.restart_policy = "Never"}, .pods = {kRunning0}};
  const kube::TrainingJob job = jobOf(row.spec);
  Observed observed = observedOf(job, row);
  kube::Pod pod = podOf(job, failed(1, 143));
  pod.status.reason = "Terminated";
  observed.pods[1] = std::make_shared<WorkerPod>(workerPodOf(pod));
  const Plan plan = decide(job, {}, observed, kNow, {});
  const kube::Condition* c = findCondition(plan.status, kFailed);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->message,
            "pod fmnist-worker-1 (replica 1) failed with exit code 143 (Terminated); "
            "restartPolicy is Never");
}

TEST(DecideTest, ProgressIsNotReadWhenTheOptionIsOff) {
  Row row{.name = "off", .pods = {{.index = 0, .pod_ip = "10.0.0.7"}, kRunning1}};
  const kube::TrainingJob job = jobOf(row.spec);
  DecideOptions options;
  options.read_progress = false;
  const Plan plan = decide(job, {}, observedOf(job, row), kNow, options);
  EXPECT_FALSE(plan.read_progress);
  EXPECT_EQ(plan.requeue, std::nullopt);
}

// A source that tells of changes (progress_interval 0) needs no timer to refresh progress.
TEST(DecideTest, ProgressIsReadWithoutARequeueWhenTheSourceTellsOfChanges) {
  Row row{.name = "pushed",
          .status = {.started_ago = 100},
          .pods = {{.index = 0, .pod_ip = "10.0.0.7"}, kRunning1}};
  const kube::TrainingJob job = jobOf(row.spec);
  DecideOptions options;
  options.progress_interval = milliseconds(0);
  const Plan plan = decide(job, statusOf(row.status), observedOf(job, row), kNow, options);
  EXPECT_TRUE(plan.read_progress);
  EXPECT_EQ(plan.requeue, std::nullopt);
}

TEST(DecideTest, AFailedCallWritesNeitherStartTimeNorNewCounts) {
  Row row{.name = "fresh", .status = {.conditions = {{"Suspended", true, "JobSuspended"}}}};
  const kube::TrainingJob job = jobOf(row.spec);
  const Plan plan = decide(job, statusOf(row.status), observedOf(job, row), kNow, {});
  EXPECT_EQ(plan.status.start_time, kNow);
  EXPECT_EQ(plan.status_on_error.start_time, std::nullopt);
  EXPECT_EQ(plan.status_on_error.replicas, std::nullopt);
  EXPECT_EQ(conditionText(plan.status_on_error, kCreated), "");
  // Once the creations succeeded, the pods they made exist, Pending.
  EXPECT_EQ(conditionText(plan.status, kCreated), "Created=True/WorkersCreated");
  ASSERT_TRUE(plan.status.replicas.has_value());
  EXPECT_EQ(plan.status.replicas->active, 2);
  // What needs no call is news either way.
  EXPECT_EQ(conditionText(plan.status_on_error, kSuspended), "Suspended=False/JobResumed");
}

TEST(DecideTest, RankZerosMissingOrUnreadableSummaryIsANoteNotAFailure) {
  Row row{.name = "summary", .pods = {succeeded(0), kRunning1}};
  const kube::TrainingJob job = jobOf(row.spec);
  Observed observed = observedOf(job, row);
  Plan plan = decide(job, {}, observed, kNow, {});
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_FALSE(plan.notes[0].warning);

  WorkerPod rank0 = *observed.pods[0];
  rank0.termination_message = "not a summary";
  observed.pods[0] = std::make_shared<WorkerPod>(rank0);
  plan = decide(job, {}, observed, kNow, {});
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_TRUE(plan.notes[0].warning);
  EXPECT_EQ(plan.status.progress, std::nullopt);
}

}  // namespace
}  // namespace ringmaster::op
