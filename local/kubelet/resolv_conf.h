#pragma once
// A pod's /etc/resolv.conf, as a kubelet writes it (and bind-mounts into each container). This
// cluster has no DNS server: names of pods and Services are in the pod's /etc/hosts
// (hosts_file.h), so a ClusterFirst pod falls back to the node's resolver, as a kubelet without
// --cluster-dns does; `Default` is the node's resolver too; `None` starts empty. Then
// spec.dnsConfig is appended: its nameservers and searches after the base's (duplicates
// dropped), its options over the base's by name. At most 3 nameservers and 32 search domains
// stay, as a kubelet cuts them.
//
// Thread-safety: pure functions. Failure: none; a malformed host file yields what parses.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringmaster::local::kubelet {

struct ResolvConf {
  std::vector<std::string> nameservers;
  std::vector<std::string> searches;
  std::vector<std::string> options;  // "name" or "name:value"
  bool operator==(const ResolvConf&) const = default;
};

// resolv.conf(5)'s nameserver, search (or domain) and options lines; the last search or domain
// line wins, as the resolver reads them.
ResolvConf parseResolvConf(const std::string& text);

// The pod's resolver from the node's (`host`) and the pod's spec.dnsPolicy and spec.dnsConfig
// (JSON as the API has them; null when unset).
ResolvConf podResolvConf(const ResolvConf& host, const nlohmann::json& dns_policy,
                         const nlohmann::json& dns_config);

// The file: "search ...", "nameserver ..." lines, "options ...", each only when non-empty.
std::string renderResolvConf(const ResolvConf& conf);

}  // namespace ringmaster::local::kubelet
