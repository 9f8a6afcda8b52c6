#pragma once
// The hosts file that containers resolve names from (LD_PRELOAD=libnss_wrapper.so with
// NSS_WRAPPER_HOSTS=<root>/hosts; nss_wrapper re-reads the file when it changes, so running
// pods see new peers). For a pod with an IP, spec.hostname and spec.subdomain in namespace ns:
//   <ip> <hostname>.<subdomain>.<ns>.svc.cluster.local <hostname>.<subdomain>.<ns>.svc
//        <hostname>.<subdomain>.<ns>
// and, standing in for the headless Service named like the subdomain (the operator's layout,
// publishNotReadyAddresses), one line per such pod:
//   <ip> <subdomain>.<ns>.svc.cluster.local <subdomain>.<ns>.svc
// Every pod with an IP also gets "<ip> <pod-name>.<ns>.pod" (for humans).
//
// Thread-safety: pure rendering; writeFileAtomically is safe against concurrent readers
// (tmp + rename). Failure: writeFileAtomically returns the errno with the path.

#include <filesystem>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

struct HostsEntry {
  std::string ip;
  std::string namespace_name;
  std::string pod_name;
  std::string hostname;   // spec.hostname ("" when unset)
  std::string subdomain;  // spec.subdomain
  bool operator==(const HostsEntry&) const = default;
};

// Sorted, deterministic text (no comments: nss_wrapper refuses a file with a comment line).
std::string renderHosts(std::vector<HostsEntry> entries);

core::Status writeFileAtomically(const std::filesystem::path& path, const std::string& content,
                                 int mode = 0644);

}  // namespace ringmaster::local::kubelet
