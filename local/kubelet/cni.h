#pragma once
// The CNI protocol (containernetworking.org's spec, version 1.0.0) as a runtime speaks it to a
// plugin: the network configuration on stdin, the command and the container in environment
// variables, a result (or an error) as JSON on stdout. Pure: the kubelet's pod network
// (pod_network.h) runs the plugins.
//
// Thread-safety: pure functions. Failure: parseCniResult returns the plugin's own message
// (its error result's msg and details) or what is wrong with its output.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

inline constexpr char kCniVersion[] = "1.0.0";

// The pod network: a host bridge that is the pods' gateway (so the host reaches every pod), with
// host-local addresses from `subnet`, recorded under `ipam_dir`. No masquerading and no default
// route: pods reach each other and the host, nothing beyond. So a name the kubelet's hosts file
// lacks (a peer not yet started) fails to resolve at once (the DNS server is unreachable) instead
// of after the resolver's timeouts, 10 s with glibc's defaults.
nlohmann::json bridgeNetworkConfig(const std::string& bridge, const std::string& subnet,
                                   const std::string& ipam_dir);
// The loopback plugin's configuration: brings up lo in the pod's namespace.
nlohmann::json loopbackNetworkConfig();

enum class CniCommand { kAdd, kDel };
// CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH as "NAME=value".
std::vector<std::string> cniEnvironment(CniCommand command, const std::string& container_id,
                                        const std::string& netns_path, const std::string& ifname,
                                        const std::string& plugin_dir);

// The first IPv4 address of an ADD's result ("10.244.0.5" of "10.244.0.5/16"). `exit_code` is
// the plugin's: non-zero with an error result gives that error's words.
core::Result<std::string> parseCniResult(int exit_code, const std::string& stdout_text);

}  // namespace ringmaster::local::kubelet
