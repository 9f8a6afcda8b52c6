#pragma once
// Resource accounting for the kubelet's built-in scheduler: what a pod asks for and whether it
// fits next to the pods already on the node, with kube-scheduler's wording when it does not.
//
// A container's amount of a resource is its request, else its limit (the API server defaults
// requests from limits). A pod's amount is max(sum over containers, max over init containers),
// as kube-scheduler computes it. Tracked: cpu (millicores), memory (bytes), the pod count and
// every extended resource (a name with a domain outside kubernetes.io, e.g. nvidia.com/gpu):
// a node that does not advertise one has none of it.
//
// Thread-safety: plain values and pure functions. Failure: none (unparsable amounts never reach
// here: the Quantity codec rejects them).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ringmaster/kube/node.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, int64_t> extended;  // nvidia.com/gpu, ...
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

// Whether `name` is an extended resource (a domain-qualified name outside kubernetes.io).
bool isExtendedResource(const std::string& name);

// kube-scheduler's FailedScheduling message for a one-node cluster whose node failed for the
// resources `missing` ("0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient
// nvidia.com/gpu."; "1 Too many pods" for the pod count).
std::string unschedulableMessage(const std::vector<std::string>& missing);
// The same for a node that failed a filter before resources ("node(s) had untolerated taint
// {k: v}"): "0/1 nodes are available: 1 node(s) had untolerated taint {k: v}."
std::string unschedulableNodeMessage(const std::string& problem);

// How many NVIDIA GPUs a machine has, from the names in its /dev: the driver makes one
// nvidiaN per GPU beside nvidiactl, nvidia-uvm and the like, which are not GPUs.
int64_t gpuDeviceCount(const std::vector<std::string>& dev_entries);

}  // namespace ringmaster::local::kubelet
