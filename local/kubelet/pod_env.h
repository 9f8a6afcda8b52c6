#pragma once
// A container's environment and command line, as the kubelet computes them:
//   base     PATH (the directory of the `ringmaster` binary first, then kImagePath: what a
//            Debian image's PATH holds, never the PATH of whoever started the kubelet, so that
//            `python3` is the system's as in the image), HOME, LANG, the sanitizer and
//            OMP_NUM_THREADS variables passed through from the kubelet's own environment, and,
//            only where the kubelet may not give pods their own /etc/hosts, the
//            name-resolution preload (LD_PRELOAD=libnss_wrapper.so, NSS_WRAPPER_HOSTS).
//   pod env  spec.containers[].env in order: value with $(VAR) expansion against the variables
//            defined before it ($$(VAR) is a literal $(VAR); unknown $(VAR) stays as written),
//            valueFrom.fieldRef / configMapKeyRef / secretKeyRef.
// The pod's variables override the base ones; command and args are expanded against the result.
//
// Thread-safety: pure functions (KeyLookup is called on the caller's thread).
// Failure: InvalidArgument naming the variable for an unsupported fieldRef, NotFound for a
// missing ConfigMap/Secret key that is not optional (the container cannot start).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Kubernetes' $(VAR) expansion; `lookup` returns nullptr for an unknown name.
std::string expandVars(std::string_view text,
                       const std::function<const std::string*(const std::string&)>& lookup);

// metadata.name, metadata.namespace, metadata.uid, metadata.labels['k'],
// metadata.annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP,
// status.podIPs, status.hostIP.
struct PodFacts {
  std::string pod_ip;
  std::string host_ip;
  std::string node_name;
};
core::Result<std::string> fieldRefValue(const kube::Pod& pod, const std::string& field_path,
                                        const PodFacts& facts);
// A downward API volume file's content: what fieldRefValue gives, and also the whole
// metadata.labels or metadata.annotations as sorted key="value" lines (values quoted as Go's %q).
core::Result<std::string> downwardApiValue(const kube::Pod& pod, const std::string& field_path,
                                           const PodFacts& facts);

// Reads key `key` of ConfigMap (secret == false) or Secret `name` in the pod's namespace;
// nullopt when the object or key does not exist.
using KeyLookup = std::function<core::Result<std::optional<std::string>>(
    bool secret, const std::string& name, const std::string& key)>;

// nss_wrapper keeps every name of the hosts file in a fixed-size table (100 names by default,
// which ~20 pods fill: each pod has up to six names). 32768 holds well over 1,000 pods' names.
inline constexpr int kNssWrapperMaxHostEntries = 32768;

// The PATH of Debian's (and Docker's default) images.
inline constexpr char kImagePath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct BaseEnvOptions {
  std::string self_dir;             // directory of the running ringmaster binary
  std::string inherited_path;       // PATH after self_dir ("" -> kImagePath)
  std::string home;                 // HOME for containers
  EnvList passthrough;              // ASAN_OPTIONS, ... as found in the kubelet's environment
  std::string nss_wrapper_library;  // "" disables the preload
  std::string hosts_file;           // NSS_WRAPPER_HOSTS
};
// The variables passed through from the kubelet's environment when set. LD_LIBRARY_PATH is
// among them: pods are host processes and load the host's libraries (CUDA's too) as it does.
std::vector<std::string> passthroughNames();
EnvList baseEnv(const BaseEnvOptions& options);

// Sets (or replaces, keeping its position) `name` in `env`.
void setEnv(EnvList& env, const std::string& name, std::string value);
const std::string* findEnv(const EnvList& env, const std::string& name);

// base + the container's env; errors name the container and variable.
core::Result<EnvList> containerEnv(const kube::Pod& pod, const kube::Container& container,
                                   const PodFacts& facts, const EnvList& base,
                                   const KeyLookup& lookup);

// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT: where a pod reaches the API server at
// `server_url` (https://HOST:PORT). A pod in a network namespace of its own cannot reach the
// host's loopback, so a loopback HOST becomes `pod_gateway` (the host's end of the pod bridge,
// where the local API server also listens); other hosts are kept. Empty for a URL without a host.
EnvList apiServerEnv(const std::string& server_url, bool own_network_namespace,
                     const std::string& pod_gateway);

// The first host address of an IPv4 CIDR ("10.244.0.0/16" -> "10.244.0.1"); "" when malformed.
std::string gatewayOf(const std::string& cidr);

// What a container without `command` runs: its image's entrypoint. Images are not pulled
// locally, so only the project's own images are known, by repository (any registry, tag or
// digest): .../ringmaster/operator runs ringmaster-operator, .../ringmaster/trainer runs
// ringmaster-launcher, as dockerfiles/ say. Empty for other images.
std::vector<std::string> imageEntrypoint(const std::string& image);

// command + args with $(VAR) expanded against `env`; without a command, the image's entrypoint.
std::vector<std::string> containerArgv(const kube::Container& container, const EnvList& env);
// Each of `words` (a container's command or args) with its $(VAR)s expanded from `env`.
std::vector<std::string> expandEach(const std::vector<std::string>& words, const EnvList& env);

// The first executable called `name` in the ':'-separated `path` ("" when none); a name with a
// '/' is returned as is.
std::string resolveExecutable(const std::string& name, const std::string& path);

}  // namespace ringmaster::local::kubelet
