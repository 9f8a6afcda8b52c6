#pragma once
// The hosts files that containers resolve names from. There is no cluster DNS: every pod's
// /etc/hosts names every pod of the cluster, as cluster DNS would resolve them.
//   - renderPodHosts: a pod's own /etc/hosts (bind-mounted in each of its containers' mount
//     namespaces, as a kubelet mounts the etc-hosts file it writes): localhost, the pod's own
//     hostname first, then the cluster's names. The kubelet rewrites it in place
//     (writeFileInPlace) when pods come and go, since a bind mount pins the file's inode.
//   - renderHosts: the cluster's names alone, <root>/hosts, for kubelets that may not create
//     mount namespaces, whose containers resolve through LD_PRELOAD=libnss_wrapper.so with
//     NSS_WRAPPER_HOSTS=<root>/hosts (nss_wrapper re-reads the file when it changes).
// For a pod with an IP, spec.hostname and spec.subdomain in namespace ns:
//   <ip> <hostname>.<subdomain>.<ns>.svc.cluster.local <hostname>.<subdomain>.<ns>.svc
//        <hostname>.<subdomain>.<ns>
// and, standing in for the headless Service named like the subdomain (the operator's layout,
// publishNotReadyAddresses), one line per such pod:
//   <ip> <subdomain>.<ns>.svc.cluster.local <subdomain>.<ns>.svc
// Every pod with an IP also gets "<ip> <pod-name>.<ns>.pod" (for humans). In a pod's own file,
// the pods of its namespace are also "<hostname>.<subdomain>", as the DNS search path
// "<ns>.svc.cluster.local" resolves that name on a cluster (MPI hostfiles and TF_CONFIG use it).
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

// A pod's /etc/hosts: Kubernetes' header and localhost lines, "<ip> <fqdn> <hostname>" for the
// pod itself (its hostname is spec.hostname, else its name), then renderHosts' lines with the
// short names of `self`'s namespace.
std::string renderPodHosts(const HostsEntry& self, const std::vector<HostsEntry>& cluster);

// The hostname a pod's containers see: spec.hostname, else the pod's name, cut to 63 characters
// as a kubelet cuts it.
std::string podHostname(const HostsEntry& pod);

// Replaces `path`'s content without replacing the file (a bind mount of it stays valid): the
// new text from offset 0, padded with a blank line to the old length when shorter, so that a
// reader never meets a half-old tail. Creates the file when missing.
core::Status writeFileInPlace(const std::filesystem::path& path, const std::string& content);

core::Status writeFileAtomically(const std::filesystem::path& path, const std::string& content,
                                 int mode = 0644);

}  // namespace ringmaster::local::kubelet
