#pragma once
// Pod status from what the kubelet knows about its containers, with the kubelet's rules:
//   phase     a pod the kubelet refused or ended -> Failed (status.reason/message say why);
//   otherwise
//             (kubelet getPhase) init containers unfinished -> Pending (an init container that
//             failed under restartPolicy Never -> Failed); a container waiting that never ran ->
//             Pending; one running -> Running; all stopped -> Succeeded if all exited 0, else
//             Running under Always/OnFailure-with-a-failure (they restart), else Failed.
//   conditions PodScheduled, Initialized, ContainersReady, Ready; lastTransitionTime is kept from
//             `previous` while a condition's status does not change.
//   containerStatuses  state, lastState, ready, started, restartCount, image, containerID.
// Pure: the caller compares the result with what it last wrote and writes only on change.
//
// Thread-safety: pure functions. Failure: none.

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

struct ContainerView {
  std::string name;
  std::string image;
  kube::ContainerState state;  // exactly one of waiting/running/terminated set
  std::optional<kube::ContainerStateTerminated> last_terminated;
  int32_t restart_count = 0;
  bool ready = false;
  std::string container_id;
};

struct PodView {
  std::string restart_policy;  // "" = Always
  std::vector<ContainerView> init_containers;
  std::vector<ContainerView> containers;
  std::string pod_ip;
  std::string host_ip;
  std::optional<kube::Time> start_time;
  kube::Time now;
  std::vector<kube::Condition> previous;  // the pod's current conditions
  // Set when the kubelet ends the pod itself: it refuses to run it (as its admission does) or
  // its node shut down. Phase Failed with status.reason and status.message.
  std::string ended_reason;
  std::string ended_message;
};

std::string podPhase(const PodView& view);
kube::PodStatus derivePodStatus(const PodView& view);

// Sets condition `type` in `conditions`, keeping lastTransitionTime when the status is unchanged.
void setCondition(std::vector<kube::Condition>& conditions,
                  const std::vector<kube::Condition>& previous, const std::string& type,
                  bool status, const std::string& reason, const std::string& message,
                  const kube::Time& now);

}  // namespace ringmaster::local::kubelet
