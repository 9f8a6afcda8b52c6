#include "local/kubelet/hosts_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <tuple>

namespace ringmaster::local::kubelet {

std::string renderHosts(std::vector<HostsEntry> entries) {
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
      out += e.ip + " " + fq + ".svc.cluster.local " + fq + ".svc " + fq + "\n";
      const std::string svc = e.subdomain + "." + ns + ".svc";
      services += e.ip + " " + svc + ".cluster.local " + svc + "\n";
    }
    out += e.ip + " " + e.pod_name + "." + ns + ".pod\n";
  }
  return out + services;
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
