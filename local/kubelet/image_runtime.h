#pragma once
// Running a container in its image: the kubelet's second way to run a container, beside a host
// process. The container's process is then `podman run` in the foreground (runc underneath), so
// the kubelet's machinery stays as it is: the process' session, its log file (podman copies the
// container's stdout and stderr to its own), its exit code (the container's; 125 when podman
// could not start it, 126/127 when the command cannot run), SIGTERM (podman passes it to the
// container). What a host process gets from process_launcher.h, podman gives the container: the
// pod's network namespace, the pod's hostname, the pod's /etc/hosts, its volumes and termination
// message file bind-mounted, and the securityContext enforced (runAsUser/runAsGroup, fsGroup and
// supplemental groups, readOnlyRootFilesystem, capabilities, allowPrivilegeEscalation,
// privileged), in the image's root filesystem, not the host's.
//
// Thread-safety: pure functions but runPodman (a child process). Failure: imageRunError() says
// why a container may not run; runPodman returns podman's error.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "local/kubelet/pod_env.h"
#include "local/kubelet/process_launcher.h"
#include "local/kubelet/volumes.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

// How the kubelet runs containers: host processes, or each in its image through podman; kAuto
// is a request only, which chooseContainerEngine turns into one of the two.
enum class ContainerEngine { kHost, kPodman, kAuto };
// "host" | "podman" | "auto".
core::Result<ContainerEngine> parseContainerEngine(const std::string& text);

// The engine a kubelet runs with, and why, for its start-up log line.
struct EngineChoice {
  ContainerEngine engine = ContainerEngine::kHost;
  std::string reason;
};

// What `requested` means on this machine: podman where it runs here (`podman` its path, ""
// when not on PATH; `probe_error` what `podman info` said when it failed, "" when it worked),
// else host processes; a simulating kubelet starts nothing, so it stays host. An explicit
// podman that cannot run is an error, not a quiet fallback.
core::Result<EngineChoice> chooseContainerEngine(ContainerEngine requested, bool simulate,
                                                 const std::string& podman,
                                                 const std::string& probe_error);

// The label every container the kubelet runs in an image carries: its pod's uid, so that a
// kubelet finds the containers a previous one left running.
inline constexpr const char* kPodUidLabel = "local.ringmaster.dev/pod-uid";
// And the root directory of the kubelet that runs it: kubelets of one host share podman.
inline constexpr const char* kKubeletRootLabel = "local.ringmaster.dev/kubelet-root";

// One container to run in its image.
struct ImageRun {
  std::string podman;           // podman's path
  std::string containers_conf;  // CONTAINERS_CONF for podman ("" none)
  std::string name;             // the container's name (containerName())
  std::string pod_uid;
  std::string kubelet_root;  // the root directory of the kubelet that runs it
  std::string image;
  std::vector<std::string> command;  // spec.command, $(VAR)s expanded; empty: the image's
  std::vector<std::string> args;     // spec.args, expanded
  std::string netns;                 // the pod's network namespace; "": the host's
  std::string hostname;              // the pod's hostname (with its own network namespace)
  std::string working_dir;           // spec.workingDir; "": the image's
  EnvList env;                       // the container's environment, none of the kubelet's
  std::string env_file;              // where envFileText(env) is written (the pod's directory)
  std::vector<Mount> mounts;         // volumes, /etc/hosts, the termination message file
  // The effective securityContext (the container's over the pod's).
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::vector<int64_t> extra_groups;  // fsGroup and supplementalGroups
  bool read_only_root = false;
  bool no_new_privileges = false;
  bool privileged = false;
  std::vector<std::string> cap_add, cap_drop;
  // seccomp: "" the runtime's default profile (RuntimeDefault), "unconfined" none (Unconfined,
  // and no profile at all: a kubelet's default without --seccomp-default), else a profile file
  // (Localhost: <kubelet root>/seccomp/<localhostProfile>, as under /var/lib/kubelet/seccomp).
  std::string seccomp = "unconfined";
  std::string log_path;
  std::string session_file;
  std::string conmon_pidfile;  // where podman's conmon writes its pid (cgroup_usage.h reads it)
};

// The name podman knows the container by: rm-<pod uid>-<container name>.
std::string containerName(const std::string& pod_uid, const std::string& container);

// Fills `run`'s securityContext fields from the pod's and the container's (the container's
// wins, as on a kubelet); `seccomp_dir` holds Localhost profiles.
void applySecurityContext(const kube::PodSpec& pod, const kube::Container& container,
                          const std::string& seccomp_dir, ImageRun& run);

// Whether the container must not run as root: its runAsNonRoot, else its pod's.
bool runsAsNonRoot(const kube::PodSpec& pod, const kube::Container& container);

// Why the container may not run (kubelet's CreateContainerConfigError message), or "": with
// runAsNonRoot it must run as a non-zero uid, given by runAsUser or by the image's numeric USER
// (`image_user`, as the image's config says it; "" is root).
std::string imageRunError(const kube::PodSpec& pod, const kube::Container& container,
                          const ImageRun& run, const std::string& image_user);

// The environment as podman's --env-file reads it: NAME=value lines. A value that holds a line
// break cannot be written so: it goes on podman's command line instead (podmanLaunchSpec).
std::string envFileText(const EnvList& env);

// The host process that runs `run`: `podman run` in the foreground, removed when it exits, its
// environment read from run.env_file (values stay off the command line, where any local user
// could read them). podman itself gets only PATH and CONTAINERS_CONF: nothing of the container's
// environment (LD_PRELOAD, say) reaches it.
LaunchSpec podmanLaunchSpec(const ImageRun& run);

// Runs `podman args...` to its end (at most `limit`), its output going to `output_file`; its
// output when it exits 0, else an error with the output's end. For the kubelet's few calls
// beside the containers (removing one, inspecting an image), from its sync thread.
core::Result<std::string> runPodman(const std::string& podman, const std::string& containers_conf,
                                    const std::vector<std::string>& args,
                                    const std::string& output_file,
                                    std::chrono::seconds limit = std::chrono::seconds(60));

}  // namespace ringmaster::local::kubelet
