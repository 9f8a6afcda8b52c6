#pragma once
// Pod volumes on the local machine (see README.md, "Volumes"):
//   emptyDir               <pod dir>/volumes/empty-dir/<volume>   (removed with the pod dir)
//   hostPath               the path itself (created for DirectoryOrCreate / unset type)
//   configMap, secret      <pod dir>/volumes/<configmap|secret>/<volume>: one file per key (or
//                          per `items` entry, at its path), mode item.mode, else defaultMode,
//                          else 0644; written at pod start
//   downwardAPI            <pod dir>/volumes/downward-api/<volume>: one file per item, the pod
//                          field it names (labels and annotations as key="value" lines)
//   projected              <pod dir>/volumes/projected/<volume>: the files of its configMap,
//                          secret and downwardAPI sources, and a ServiceAccount token bound to
//                          the pod (a TokenRequest), written at pod start and not refreshed
//   persistentVolumeClaim  <root>/volumes/<namespace>/<claimName> (outlives the pod)
// Containers see them at their mountPaths through bind mounts in a private mount namespace
// (process_launcher.h); configMap and secret mounts are read-only, as on Kubernetes.
//
// Thread-safety: pure functions plus file writes under the given directories.
// Failure: InvalidArgument/NotFound naming the volume and key; errno errors naming the path.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

struct ProjectedFile {
  std::string path;  // relative, may contain '/'
  std::string content;
  int mode = 0644;
  bool operator==(const ProjectedFile&) const = default;
};

// The files a configMap/secret volume holds. `items` empty: every key. A key named in `items`
// that `data` lacks is NotFound unless `optional`. Paths must be relative without "..".
core::Result<std::vector<ProjectedFile>> projectKeys(const std::map<std::string, std::string>& data,
                                                     const std::vector<kube::KeyToPath>& items,
                                                     std::optional<int32_t> default_mode,
                                                     bool optional, const std::string& what);

// Replaces `dir`'s content with `files`; a file whose path would leave `dir` is refused before
// anything is removed.
core::Status writeProjection(const std::filesystem::path& dir,
                             const std::vector<ProjectedFile>& files);

struct Mount {
  std::string source;  // host path
  std::string target;  // mountPath, absolute
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

// The host directory behind `volume` (not created here), and whether it is read-only.
struct VolumeDir {
  std::filesystem::path path;
  bool read_only = false;
};
// `claims_dir`: where persistentVolumeClaims' directories live (<claims_dir>/<namespace>/<claim>).
core::Result<VolumeDir> volumeDir(const kube::Volume& volume, const std::string& namespace_name,
                                  const std::filesystem::path& pod_dir,
                                  const std::filesystem::path& claims_dir);

// The directory `volume`'s own directory must lie in (pod_paths.h): <pod dir>/volumes/<kind>
// for emptyDir, configMap and secret, <claims dir>/<namespace> for a persistentVolumeClaim;
// nullopt for hostPath (a host path by design) and unsupported sources.
std::optional<std::filesystem::path> volumeBase(const kube::Volume& volume,
                                                const std::string& namespace_name,
                                                const std::filesystem::path& pod_dir,
                                                const std::filesystem::path& claims_dir);

// A configMap's or secret's data by name; nullopt when it does not exist.
using SourceLookup = std::function<core::Result<std::optional<std::map<std::string, std::string>>>(
    bool secret, const std::string& name)>;

// What volumes read beyond the pod spec: configMaps and secrets, the pod's own fields (downward
// API: downwardApiValue in pod_env.h), and ServiceAccount tokens.
struct PodSources {
  SourceLookup data;
  std::function<core::Result<std::string>(const std::string& field_path)> field;
  std::function<core::Result<std::string>(const kube::ServiceAccountTokenProjection&)> token;
};

// Makes `volume`'s host directory ready: checks that it lies inside its volumeBase (symlinks
// resolved) before anything is created or removed, then creates it (emptyDir, persistent
// volume claims, hostPath of type "" or DirectoryOrCreate) or writes its files (configMap,
// secret, downwardAPI, projected). NotFound while a non-optional configMap/secret is missing
// (the kubelet retries).
core::Result<VolumeDir> setUpVolume(const kube::Volume& volume, const std::string& namespace_name,
                                    const std::filesystem::path& pod_dir,
                                    const std::filesystem::path& claims_dir,
                                    const PodSources& sources);

// What a kubelet does for a pod with securityContext.fsGroup: every volume but a hostPath is
// made the group's, recursively: group `fs_group`, group-readable (and group-writable unless
// the volume is read-only: configMap, secret), directories setgid so that new files inherit the
// group. So a container running as another uid in that group can use it.
core::Status applyFsGroup(const kube::Volume& volume, const VolumeDir& dir, int64_t fs_group);

// The bind mounts of `container`: its volumeMounts resolved through `dirs` (volume name ->
// dir), subPath appended; InvalidArgument for an unknown volume or a relative mountPath.
core::Result<std::vector<Mount>> containerMounts(const kube::Container& container,
                                                 const std::map<std::string, VolumeDir>& dirs);

}  // namespace ringmaster::local::kubelet
