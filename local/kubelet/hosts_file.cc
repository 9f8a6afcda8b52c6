#include "local/kubelet/hosts_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <tuple>

namespace ringmaster::local::kubelet {

namespace {

std::string render(std::vector<HostsEntry> entries, const std::string& short_names_namespace) {
  std::sort(entries.begin(), entries.end(), [](const HostsEntry& a, const HostsEntry& b) {
    return std::tie(a.namespace_name, a.pod_name, a.ip) <
           std::tie(b.namespace_name, b.pod_name, b.ip);
  });
  // No comment lines: nss_wrapper rejects the whole file when it meets one.
  std::string out;
  std::string services;
  for (const HostsEntry& e : entries) {
    if (e.ip.empty()) continue;
    const std::string ns = e.namespace_name;
    if (!e.hostname.empty() && !e.subdomain.empty()) {
      const std::string fq = e.hostname + "." + e.subdomain + "." + ns;
      out += e.ip + " " + fq + ".svc.cluster.local " + fq + ".svc " + fq;
      if (ns == short_names_namespace) out += " " + e.hostname + "." + e.subdomain;
      out += "\n";
      const std::string svc = e.subdomain + "." + ns + ".svc";
      services += e.ip + " " + svc + ".cluster.local " + svc + "\n";
    }
    out += e.ip + " " + e.pod_name + "." + ns + ".pod\n";
  }
  return out + services;
}

}  // namespace

std::string renderHosts(std::vector<HostsEntry> entries) { return render(std::move(entries), ""); }

std::string podHostname(const HostsEntry& pod) {
  return (pod.hostname.empty() ? pod.pod_name : pod.hostname).substr(0, 63);
}

std::string renderPodHosts(const HostsEntry& self, const std::vector<HostsEntry>& cluster) {
  // Kubernetes' own header and lines (kubelet_pods.go's managedHostsHeader and defaults).
  std::string out =
      "# Kubernetes-managed hosts file.\n"
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "fe00::0\tip6-localnet\n"
      "fe00::0\tip6-mcastprefix\n"
      "fe00::1\tip6-allnodes\n"
      "fe00::2\tip6-allrouters\n";
  const std::string hostname = podHostname(self);
  if (!self.ip.empty()) {
    out += self.ip + "\t";
    if (!self.subdomain.empty()) {
      out += hostname + "." + self.subdomain + "." + self.namespace_name + ".svc.cluster.local\t";
    }
    out += hostname + "\n";
  }
  out += "# The cluster's pods (ringmaster local has no cluster DNS).\n";
  return out + render(cluster, self.namespace_name);
}

core::Status writeFileInPlace(const std::filesystem::path& path, const std::string& content) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return core::errnoError("open " + path.string(), errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return core::errnoError("stat " + path.string(), err);
  }
  std::string text = content;
  const auto old_size = static_cast<size_t>(st.st_size);
  // Blank padding: resolvers skip whitespace-only lines.
  if (text.size() < old_size) text += std::string(old_size - text.size() - 1, ' ') + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return core::errnoError("write " + path.string(), err);
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return core::errnoError("close " + path.string(), errno);
  return core::Status::Ok();
}

core::Status writeFileAtomically(const std::filesystem::path& path, const std::string& content,
                                 int mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return core::errnoError("open " + tmp.string(), errno);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return core::errnoError("write " + tmp.string(), err);
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, static_cast<mode_t>(mode));  // O_CREAT's mode is filtered by the umask
  if (close(fd) != 0) return core::errnoError("close " + tmp.string(), errno);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return core::errnoError("rename " + tmp.string() + " -> " + path.string(), err);
  }
  return core::Status::Ok();
}

}  // namespace ringmaster::local::kubelet
