#pragma once
// Where the kubelet may touch the file system for a pod. Every path it derives from API content
// (namespace and pod names, container names, volume names, configMap/secret `items[].path`,
// `subPath`) must lie inside the directory it belongs to: R/pods/<ns>/<pod>_<uid>/ for the pod's
// own files and volumes, R/volumes/<ns>/ for persistentVolumeClaims. The API server validates
// names, but the kubelet does not rely on it: a path that would leave its directory fails the pod
// before anything is created or removed.
//
// Thread-safety: isInside and the path builders are pure; checkInside reads the file system
// (symlinks). Failure: InvalidArgument naming the field and both paths.

#include <filesystem>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

// Whether `path` lies strictly below `base` once both are lexically normalised ("." and ".."
// folded, no file system access): "/r/a/../b" is inside "/r", "/r/a/../../x" and "/r" are not.
// Both must be absolute (a relative one is never inside).
bool isInside(const std::filesystem::path& base, const std::filesystem::path& path);

// isInside, then the same with the symlinks of the existing part of both paths resolved: a
// symlink under `base` that points out of it is refused too. `what` names the field.
core::Status checkInside(const std::filesystem::path& base, const std::filesystem::path& path,
                         const std::string& what);

// R/pods/<ns>/<name>_<uid>.
std::filesystem::path podDir(const std::filesystem::path& root_dir, const kube::ObjectMeta& meta);

// The files of one container under the pod's directory.
struct ContainerFiles {
  std::filesystem::path log;              // <dir>/<name>.log
  std::filesystem::path previous_log;     // <dir>/<name>.previous.log
  std::filesystem::path pid;              // <dir>/<name>.pid
  std::filesystem::path termination_log;  // <dir>/<name>.termination-log
  std::filesystem::path work_dir;         // <dir>/work/<name>
  std::filesystem::path conmon_pid;       // <dir>/<name>.conmon.pid (in an image: podman's)
};
ContainerFiles containerFiles(const std::filesystem::path& pod_dir, const std::string& name);

// Every path the kubelet would derive from `pod` under `root_dir` (claims under `claims_dir`),
// checked: the pod directory,
// each container's files, each volume's directory and its items, each mount's subPath. The
// first that leaves its directory is the error ("spec.volumes[0].name: ..."). hostPath volumes
// name host paths on purpose; only their form is checked (absolute, no "..").
core::Status checkPodPaths(const kube::Pod& pod, const std::filesystem::path& root_dir,
                           const std::filesystem::path& claims_dir);

}  // namespace ringmaster::local::kubelet
