#pragma once
// A TrainingJob's condition types and the reasons the operator gives them, each spelled once.
// A reason is part of the API (kubectl's REASON column, Events, users' alerts): a test table
// holds what each transition writes (decide_test.cc, status_test.cc).
//
// Thread-safety: constants only.

namespace ringmaster::op {

// Condition types.
inline constexpr const char* kCreated = "Created";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kRestarting = "Restarting";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kSuspended = "Suspended";
// An elastic job changed its world (reason ScaledDown or ScaledUp; the message says from what
// to what, and why). Each resize is an Event. Restarting and Running give it as their reason
// while the new world starts.
inline constexpr const char* kResized = "Resized";
// A parameter-server job replaced failed worker pods alone (reason ReplacedWorkerPod; the message
// names the latest). Each replacement is an Event; the job stays Running meanwhile.
inline constexpr const char* kReplaced = "Replaced";

namespace reason {
// Created
inline constexpr const char* kWorkersCreated = "WorkersCreated";
inline constexpr const char* kFailedCreatePod = "FailedCreatePod";  // the API server refused one
inline constexpr const char* kNotOwned = "NotOwned";  // a child's name is taken by another owner
// Running
inline constexpr const char* kAllRanksJoined = "AllRanksJoined";
inline constexpr const char* kRanksNotReady = "RanksNotReady";
inline constexpr const char* kSchedulingGated = "SchedulingGated";
inline constexpr const char* kJobSucceeded = "JobSucceeded";
inline constexpr const char* kJobFailed = "JobFailed";
// Restarting (and Failed for the first two)
inline constexpr const char* kRankFailed = "RankFailed";
inline constexpr const char* kUnschedulable = "Unschedulable";
// Failed
inline constexpr const char* kInvalidSpec = "InvalidSpec";
inline constexpr const char* kDeadlineExceeded = "DeadlineExceeded";
inline constexpr const char* kBackoffLimitExceeded = "BackoffLimitExceeded";
inline constexpr const char* kRanksDidNotFinish = "RanksDidNotFinish";
// Succeeded
inline constexpr const char* kAllRanksSucceeded = "AllRanksSucceeded";
// The chief's success is the job's (TFJob's rule): the chief pod, or in a parameter-server job
// without one, pod 0 and the servers' pods.
inline constexpr const char* kChiefSucceeded = "ChiefSucceeded";
// Suspended (and Running while suspended)
inline constexpr const char* kJobSuspended = "JobSuspended";
inline constexpr const char* kJobResumed = "JobResumed";
// Resized
inline constexpr const char* kScaledDown = "ScaledDown";
inline constexpr const char* kScaledUp = "ScaledUp";
// Replaced
inline constexpr const char* kReplacedWorkerPod = "ReplacedWorkerPod";
inline constexpr const char* kReplacedEvaluatorPod = "ReplacedEvaluatorPod";
}  // namespace reason

}  // namespace ringmaster::op
