#pragma once
// Starts a container as a local process and controls it:
//   - the child joins the pod's network namespace when it has one (setns), so that every
//     container of a pod shares its address and ports;
//   - with a hostname: a UTS namespace of its own, named so (as a pod's containers are; MPI
//     libraries tell nodes apart by it);
//   - the child leads its own session and process group (SIGTERM goes to the group; the end of
//     the container kills the whole session, session.h), with the signal mask and SIGPIPE reset
//     and no inherited descriptors;
//   - stdout and stderr are appended to the log file, stdin is /dev/null;
//   - with mounts: a private mount namespace (unshare(CLONE_NEWNS), / made rprivate) in which
//     each volume is bind-mounted at its mountPath (missing mountpoints are created; read-only
//     mounts are remounted ro), so the container sees its volumes where the pod spec says;
//     A file mount whose mountpoint does not exist (the termination message at
//     /dev/termination-log) is made without touching the host: the parent directory is covered
//     by a tmpfs that re-exposes each of its entries (directories and files bind-mounted from
//     the original, symlinks copied), and the mountpoint is created in that tmpfs;
//   - the working directory is entered after the mounts, then execve.
// A failure before execve (no such file, mount refused) comes back through a close-on-exec
// pipe as an error, and the child is reaped; launch() then returns that error.
//
// Ownership: the caller owns the child: it must reap it (reap()) and may signal it.
// Thread-safety: launch() may be called from several threads (the child runs only
// async-signal-safe calls between fork and exec). Failure: errno errors naming the step.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "local/kubelet/pod_env.h"
#include "local/kubelet/volumes.h"
#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

struct LaunchSpec {
  std::string executable;  // absolute or relative path (already resolved through PATH)
  std::vector<std::string> argv;
  EnvList env;
  std::string working_dir;
  std::string log_path;  // "" -> /dev/null
  std::vector<Mount> mounts;
  // A directory of the pod's own where launch() may make staging mountpoints ("" -> file
  // mounts without a mountpoint fail).
  std::string scratch_dir;
  // Where the child records its pid (= its session) before it does anything else ("" -> none).
  // Written by the child, not after launch() returns: a kubelet killed while its child still
  // sets up would otherwise leave a session no later kubelet knows of.
  std::string session_file;
  // A network namespace the child joins first (the pod's, e.g. /run/netns/NAME); "" -> the
  // kubelet's own.
  std::string netns;
  // The hostname the child sees, in a UTS namespace of its own; "" -> the host's.
  std::string hostname;
};

// Whether a file can be bind-mounted at `target` without creating anything on the host: it
// exists, or its parent is an existing directory other than "/".
bool canMountFileAt(const std::string& target);

// Returns the child's pid (= its process group and session id).
core::Result<pid_t> launch(const LaunchSpec& spec);

struct ExitInfo {
  int exit_code = 0;          // 128 + N when killed by signal N
  std::optional<int> signal;  // the signal that killed it
};
// Non-blocking waitpid; nullopt while it runs (or when it is not our child anymore).
std::optional<ExitInfo> reap(pid_t pid);
// kill(-pgid, sig); ESRCH is not an error.
void signalGroup(pid_t pgid, int sig);

// Whether this process may create mount namespaces and bind-mount (checked in a child).
bool mountNamespacesAvailable();

}  // namespace ringmaster::local::kubelet
