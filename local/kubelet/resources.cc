#include "local/kubelet/resources.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace ringmaster::local::kubelet {
namespace {

// The request of one container, else its limit.
int64_t amount(const kube::Container& c, const std::string& name, bool milli) {
  if (!c.resources) return 0;
  for (const auto* m : {&c.resources->requests, &c.resources->limits}) {
    auto it = m->find(name);
    if (it != m->end()) return milli ? it->second.milliValue() : it->second.value();
  }
  return 0;
}

Resources containerRequests(const kube::Container& c) {
  Resources r;
  r.cpu_milli = amount(c, "cpu", true);
  r.memory_bytes = amount(c, "memory", false);
  if (c.resources) {
    for (const auto* m : {&c.resources->requests, &c.resources->limits}) {
      for (const auto& [name, q] : *m) {
        if (isExtendedResource(name) && !r.extended.count(name)) {
          r.extended[name] = amount(c, name, false);
        }
      }
    }
  }
  return r;
}

int64_t quantityOr0(const std::map<std::string, kube::Quantity>& m, const std::string& name,
                    bool milli) {
  auto it = m.find(name);
  if (it == m.end()) return 0;
  return milli ? it->second.milliValue() : it->second.value();
}

}  // namespace

Resources& Resources::operator+=(const Resources& other) {
  cpu_milli += other.cpu_milli;
  memory_bytes += other.memory_bytes;
  for (const auto& [name, n] : other.extended) extended[name] += n;
  pods += other.pods;
  return *this;
}

Resources podRequests(const kube::PodSpec& pod) {
  Resources sum;
  for (const auto& c : pod.containers) sum += containerRequests(c);
  for (const auto& c : pod.init_containers) {
    Resources init = containerRequests(c);
    sum.cpu_milli = std::max(sum.cpu_milli, init.cpu_milli);
    sum.memory_bytes = std::max(sum.memory_bytes, init.memory_bytes);
    for (const auto& [name, n] : init.extended)
      sum.extended[name] = std::max(sum.extended[name], n);
  }
  sum.pods = 1;
  return sum;
}

Resources allocatableOf(const kube::NodeStatus& node) {
  Resources r;
  r.cpu_milli = quantityOr0(node.allocatable, "cpu", true);
  r.memory_bytes = quantityOr0(node.allocatable, "memory", false);
  for (const auto& [name, q] : node.allocatable) {
    if (isExtendedResource(name)) r.extended[name] = q.value();
  }
  r.pods = quantityOr0(node.allocatable, "pods", false);
  return r;
}

std::vector<std::string> insufficient(const Resources& used, const Resources& request,
                                      const Resources& allocatable) {
  std::vector<std::string> out;
  // A zero request always fits, even on an overcommitted node (kube-scheduler's rule).
  auto check = [&](int64_t u, int64_t r, int64_t a, const char* name) {
    if (r > 0 && u + r > a) out.push_back(name);
  };
  check(used.cpu_milli, request.cpu_milli, allocatable.cpu_milli, "cpu");
  check(used.memory_bytes, request.memory_bytes, allocatable.memory_bytes, "memory");
  for (const auto& [name, r] : request.extended) {
    auto u = used.extended.find(name);
    auto a = allocatable.extended.find(name);
    check(u == used.extended.end() ? 0 : u->second, r,
          a == allocatable.extended.end() ? 0 : a->second, name.c_str());
  }
  check(used.pods, request.pods, allocatable.pods, "pods");
  return out;
}

bool isExtendedResource(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0) return false;
  const std::string domain = name.substr(0, slash);
  if (domain == "kubernetes.io" ||
      (domain.size() > 14 && domain.compare(domain.size() - 14, 14, ".kubernetes.io") == 0)) {
    return false;
  }
  return name.rfind("requests.", 0) != 0;
}

std::string unschedulableNodeMessage(const std::string& problem) {
  return "0/1 nodes are available: 1 " + problem + ".";
}

std::string unschedulableMessage(const std::vector<std::string>& missing) {
  std::vector<std::string> reasons;
  for (const auto& m : missing) {
    reasons.push_back(m == "pods" ? "1 Too many pods" : "1 Insufficient " + m);
  }
  std::sort(reasons.begin(), reasons.end());
  std::string out = "0/1 nodes are available: ";
  for (size_t i = 0; i < reasons.size(); ++i) out += (i ? ", " : "") + reasons[i];
  return out + ".";
}

int64_t gpuDeviceCount(const std::vector<std::string>& dev_entries) {
  int64_t count = 0;
  for (const std::string& name : dev_entries) {
    const std::string_view prefix = "nvidia";
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (std::all_of(name.begin() + prefix.size(), name.end(),
                    [](unsigned char c) { return std::isdigit(c); })) {
      ++count;
    }
  }
  return count;
}

}  // namespace ringmaster::local::kubelet
