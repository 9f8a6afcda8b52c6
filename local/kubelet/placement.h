#pragma once
// Whether a pod may go onto this node at all, before its resources are counted: the filters
// kube-scheduler runs first, in its order (scheduling gates, then TaintToleration, then
// NodeAffinity for nodeSelector and required node affinity). Like kube-scheduler, the first
// filter a node fails is the one its message names.
//
// Thread-safety: pure functions. Failure: none; an affinity term this code cannot read (an
// operator it does not know) matches no node, as kube-scheduler treats an invalid one.

#include <optional>
#include <string>

#include "ringmaster/kube/node.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

// kube-scheduler's condition message for a pod held back by schedulingGates (reason
// SchedulingGated; no event).
inline constexpr const char* kSchedulingGatedMessage =
    "Scheduling is blocked due to non-empty scheduling gates";

// The taints a node lifecycle controller puts on a node it does not (yet) see Ready; the API
// server's TaintNodesByCondition adds not-ready to every new Node. The kubelet schedules onto
// its own node only while it reports that node Ready itself, so these say nothing it does not
// know better, and on a control plane without that controller nothing would ever remove them.
bool isNodeConditionTaint(const kube::Taint& taint);

// Whether some taint of `node` with effect NoSchedule or NoExecute, other than the condition
// taints above, has no toleration in `pod`; the first such taint, as "{key: value}", else
// nullopt.
std::optional<std::string> untoleratedTaint(const kube::PodSpec& pod, const kube::Node& node);

// Whether `node`'s labels satisfy the pod's nodeSelector and its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution: any term whose every matchExpressions and
// matchFields entry holds).
bool matchesNodeSelectorAndAffinity(const kube::PodSpec& pod, const kube::Node& node);

// Why `pod` cannot go onto `node` for a reason other than resources, in kube-scheduler's words
// for one node ("node(s) had untolerated taint {dedicated: gpu}", "node(s) didn't match Pod's
// node affinity/selector"); nullopt when it may.
std::optional<std::string> placementProblem(const kube::PodSpec& pod, const kube::Node& node);

// Whether a change from `before` to `after` may place a pod that did not fit: the fields the
// filters above and the resource count read (spec: taints, unschedulable; labels; allocatable).
// A heartbeat's conditions and times are not among them. kube-scheduler likewise moves
// unschedulable pods back to its active queue on such Node updates, not on every one.
bool placementInputsChanged(const kube::Node& before, const kube::Node& after);

}  // namespace ringmaster::local::kubelet
