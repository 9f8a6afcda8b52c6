#pragma once
// Resource accounting for the kubelet's built-in scheduler: what a pod asks for and whether it
// fits next to the pods already on the node, with kube-scheduler's wording when it does not.
//
// A container's amount of a resource is its request, else its limit (the API server defaults
// requests from limits). A pod's amount is max(sum over containers, max over init containers),
// as kube-scheduler computes it. Tracked: cpu (millicores), memory (bytes), nvidia.com/gpu and
// the pod count.
//
// Thread-safety: plain values and pure functions. Failure: none (unparsable amounts never reach
// here: the Quantity codec rejects them).

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/kube/node.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t gpus = 0;
  int64_t pods = 0;
  Resources& operator+=(const Resources& other);
  bool operator==(const Resources&) const = default;
};

// What `pod` asks for (pods = 1).
Resources podRequests(const kube::PodSpec& pod);
// The node's allocatable amounts (missing entries are 0).
Resources allocatableOf(const kube::NodeStatus& node);

// The resources `request` lacks when added to `used` on a node with `allocatable`, named as
// kube-scheduler names them ("cpu", "memory", "nvidia.com/gpu", "pods"); empty when it fits.
std::vector<std::string> insufficient(const Resources& used, const Resources& request,
                                      const Resources& allocatable);

// kube-scheduler's FailedScheduling message for a one-node cluster:
// "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu."
// ("1 Too many pods" for the pod count).
std::string unschedulableMessage(const std::vector<std::string>& missing);

// How many NVIDIA GPUs a machine has, from the names in its /dev: the driver makes one
// nvidiaN per GPU beside nvidiactl, nvidia-uvm and the like, which are not GPUs.
int64_t gpuDeviceCount(const std::vector<std::string>& dev_entries);

}  // namespace ringmaster::local::kubelet
