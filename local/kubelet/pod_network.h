#pragma once
// The pod network: the address each pod gets, and the network namespace its containers share.
//   cni       the way a real node does it: each pod in a network namespace of its own
//             (/run/netns/rm-<pod uid>), attached by the standard CNI plugins (containernetworking:
//             `bridge` with `host-local` addresses, `loopback` for lo) to one host bridge. Pod
//             addresses (default 10.244.0.0/16) are routable from the host and between pods,
//             as a real API server requires of them (it refuses loopback pod IPs in
//             EndpointSlices). The host's kubelets share the bridge and the address pool.
//             Needs root and the plugins (Debian's containernetworking-plugins).
//   loopback  no namespaces: every pod gets its own loopback address 127.1.x.y in the host's
//             network (ip_allocator.h), so that pods can bind the same ports. Works anywhere,
//             unprivileged; what `--simulate` uses.
// `auto` picks cni when this host allows it (it tries once at start-up) and says why not
// otherwise.
//
// Ownership: a CNI network records each attachment in its state directory, so that a kubelet
// killed with its pods still attached has them detached by the next one (release of leftovers
// at start-up). Thread-safety: not synchronized (the kubelet's sync thread owns it). Failure:
// attach() returns the plugin's or the tool's words, naming the pod.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "local/https/local_network.h"
#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

enum class PodNetworkMode { kAuto, kCni, kLoopback };
// "auto" | "cni" | "loopback".
core::Result<PodNetworkMode> parsePodNetworkMode(const std::string& text);

struct PodAddress {
  std::string ip;
  std::string netns;  // the namespace the pod's containers join; "" -> the host's
};

class PodNetwork {
 public:
  virtual ~PodNetwork() = default;
  // One line for the kubelet's start-up log ("cni: bridge rm-pods0, 10.244.0.0/16").
  virtual std::string describe() const = 0;
  // A new address for pod `uid`.
  virtual core::Result<PodAddress> attach(const std::string& uid) = 0;
  // The address a previous kubelet gave pod `uid` (`ip`, from its status), when this network can
  // keep it; nullopt: the pod gets a new one.
  virtual std::optional<PodAddress> reclaim(const std::string& uid, const std::string& ip) = 0;
  // Gives `uid`'s address back (and removes its namespace); errors are logged, not returned.
  virtual void detach(const std::string& uid, const std::string& ip) = 0;
};

struct CniOptions {
  std::filesystem::path plugin_dir = "/usr/lib/cni";
  std::string bridge = "rm-pods0";
  std::string subnet = kDefaultPodCidr;
  // host-local's allocations: shared by every kubelet of the host, so none hands out another's.
  std::filesystem::path ipam_dir = "/run/ringmaster/cni";
  // This kubelet's records of its attachments (under its root dir).
  std::filesystem::path state_dir;
};

std::unique_ptr<PodNetwork> makeLoopbackNetwork();
// Detaches what a previous kubelet with the same state dir left attached, then checks that this
// host can attach a pod (root, the plugins, a network namespace); the reason when it cannot.
core::Result<std::unique_ptr<PodNetwork>> makeCniNetwork(CniOptions options);

}  // namespace ringmaster::local::kubelet
