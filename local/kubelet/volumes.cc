#include "local/kubelet/volumes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "local/kubelet/hosts_file.h"
#include "local/kubelet/pod_paths.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::local::kubelet {

namespace fs = std::filesystem;

namespace {

bool safeRelative(const std::string& path) {
  return !path.empty() && path[0] != '/' && !kube::hasBackstep(path);
}

}  // namespace

core::Result<std::vector<ProjectedFile>> projectKeys(const std::map<std::string, std::string>& data,
                                                     const std::vector<kube::KeyToPath>& items,
                                                     std::optional<int32_t> default_mode,
                                                     bool optional, const std::string& what) {
  const int mode = default_mode.value_or(0644);
  std::vector<ProjectedFile> out;
  if (items.empty()) {
    for (const auto& [key, value] : data) out.push_back({key, value, mode});
    return out;
  }
  for (const auto& item : items) {
    if (!safeRelative(item.path)) {
      return core::invalidArgument(what + ": items path \"" + item.path +
                                   "\" must be relative and must not contain \"..\"");
    }
    auto it = data.find(item.key);
    if (it == data.end()) {
      if (optional) continue;
      return core::notFound(what + ": key \"" + item.key + "\" not found");
    }
    out.push_back({item.path, it->second, item.mode.value_or(mode)});
  }
  return out;
}

core::Status writeProjection(const fs::path& dir, const std::vector<ProjectedFile>& files) {
  for (const auto& f : files) {
    if (!isInside(dir, dir / f.path)) {
      return core::invalidArgument("items path \"" + f.path + "\" leaves " + dir.string());
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return core::internalError("create " + dir.string() + ": " + ec.message());
  for (const auto& f : files) {
    fs::path path = dir / f.path;
    RM_RETURN_IF_ERROR(checkInside(dir, path, "items path \"" + f.path + "\""));
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return core::internalError("create " + path.parent_path().string() + ": " + ec.message());
    RM_RETURN_IF_ERROR(writeFileAtomically(path, f.content, f.mode));
  }
  return core::Status::Ok();
}

std::optional<fs::path> volumeBase(const kube::Volume& volume, const std::string& namespace_name,
                                   const fs::path& pod_dir, const fs::path& claims_dir) {
  const fs::path vols = pod_dir / "volumes";
  if (volume.empty_dir) return vols / "empty-dir";
  if (volume.config_map) return vols / "configmap";
  if (volume.secret) return vols / "secret";
  if (volume.downward_api) return vols / "downward-api";
  if (volume.projected) return vols / "projected";
  if (volume.persistent_volume_claim) return claims_dir / namespace_name;
  return std::nullopt;
}

core::Result<VolumeDir> volumeDir(const kube::Volume& volume, const std::string& namespace_name,
                                  const fs::path& pod_dir, const fs::path& claims_dir) {
  if (volume.host_path) {
    const std::string& path = volume.host_path->path;
    if (path.empty() || path[0] != '/' || kube::hasBackstep(path)) {
      return core::invalidArgument("volume " + volume.name +
                                   ": hostPath.path must be absolute without '..'");
    }
    return VolumeDir{path, false};
  }
  const std::optional<fs::path> base = volumeBase(volume, namespace_name, pod_dir, claims_dir);
  if (!base) {
    return core::invalidArgument("volume " + volume.name +
                                 ": unsupported volume source (supported: emptyDir, hostPath, "
                                 "configMap, secret, downwardAPI, projected, "
                                 "persistentVolumeClaim)");
  }
  const auto& pvc = volume.persistent_volume_claim;
  const std::string& leaf = pvc ? pvc->claim_name : volume.name;
  // One directory entry of its base: never "", ".", ".." or a path.
  if (leaf.find('/') != std::string::npos || !isInside(*base, *base / leaf)) {
    return core::invalidArgument("volume " + volume.name + ": " +
                                 (pvc ? "bad claimName \"" : "bad volume name \"") + leaf +
                                 "\": its directory would not lie inside " + base->string());
  }
  const bool written_by_kubelet =
      volume.config_map || volume.secret || volume.downward_api || volume.projected;
  return VolumeDir{*base / leaf, pvc ? pvc->read_only.value_or(false) : written_by_kubelet};
}

namespace {

// The files of a downwardAPI volume or projection.
core::Status appendDownwardFiles(const kube::DownwardApiVolumeSource& source, int default_mode,
                                 const PodSources& sources, const std::string& what,
                                 std::vector<ProjectedFile>& out) {
  for (const auto& item : source.items) {
    if (!safeRelative(item.path)) {
      return core::invalidArgument(what + ": downwardAPI path \"" + item.path +
                                   "\" must be relative and must not contain \"..\"");
    }
    if (!item.field_ref) {
      return core::invalidArgument(what + ": downwardAPI item \"" + item.path +
                                   "\": only fieldRef is supported");
    }
    if (!sources.field) return core::invalidArgument(what + ": no pod fields to project");
    core::Result<std::string> value = sources.field(item.field_ref->field_path);
    if (!value.ok()) return value.status().withContext(what + ": " + item.path);
    out.push_back({item.path, *value, item.mode.value_or(default_mode)});
  }
  return core::Status::Ok();
}

// The files of a configMap or secret (projected or a volume of its own); none for an optional
// source that does not exist.
core::Status appendKeyFiles(bool secret, const std::string& name,
                            const std::vector<kube::KeyToPath>& items,
                            std::optional<int32_t> default_mode, bool optional,
                            const PodSources& sources, const std::string& what,
                            std::vector<ProjectedFile>& out) {
  RM_ASSIGN_OR_RETURN(auto data, sources.data(secret, name));
  if (!data && !optional) {
    return core::notFound(std::string(secret ? "secret" : "configmap") + " \"" + name +
                          "\" not found");
  }
  RM_ASSIGN_OR_RETURN(auto files, projectKeys(data.value_or(std::map<std::string, std::string>{}),
                                              items, default_mode, optional, what));
  out.insert(out.end(), files.begin(), files.end());
  return core::Status::Ok();
}

core::Result<std::vector<ProjectedFile>> projectedFiles(const kube::ProjectedVolumeSource& p,
                                                        const PodSources& sources,
                                                        const std::string& what) {
  const int mode = p.default_mode.value_or(0644);
  std::vector<ProjectedFile> files;
  for (const auto& source : p.sources) {
    if (source.config_map || source.secret) {
      const kube::KeyProjection& k = source.config_map ? *source.config_map : *source.secret;
      RM_RETURN_IF_ERROR(appendKeyFiles(source.secret.has_value(), k.name, k.items, mode,
                                        k.optional.value_or(false), sources, what, files));
    } else if (source.downward_api) {
      RM_RETURN_IF_ERROR(appendDownwardFiles(*source.downward_api, mode, sources, what, files));
    } else if (source.service_account_token) {
      const kube::ServiceAccountTokenProjection& t = *source.service_account_token;
      if (!safeRelative(t.path)) {
        return core::invalidArgument(what + ": serviceAccountToken path \"" + t.path +
                                     "\" must be relative and must not contain \"..\"");
      }
      if (!sources.token) return core::invalidArgument(what + ": no ServiceAccount tokens here");
      core::Result<std::string> token = sources.token(t);
      if (!token.ok()) return token.status().withContext(what + ": serviceAccountToken");
      files.push_back({t.path, *token, mode});
    } else {
      return core::invalidArgument(what +
                                   ": unsupported projected source (supported: "
                                   "configMap, secret, downwardAPI, serviceAccountToken)");
    }
  }
  return files;
}

}  // namespace

core::Status applyFsGroup(const kube::Volume& volume, const VolumeDir& dir, int64_t fs_group) {
  if (volume.host_path || fs_group < 0) return core::Status::Ok();
  const bool writable = !volume.config_map && !volume.secret && !dir.read_only;
  auto own = [&](const fs::path& path, bool is_dir) -> core::Status {
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return core::Status::Ok();
    if (lchown(path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(fs_group)) != 0) {
      return core::internalError("fsGroup: chown " + path.string() + ": " + std::strerror(errno));
    }
    mode_t mode = st.st_mode & 07777;
    mode |= S_IRGRP | (is_dir ? S_IXGRP | S_ISGID : 0) | (writable ? S_IWGRP : 0);
    if (chmod(path.c_str(), mode) != 0) {
      return core::internalError("fsGroup: chmod " + path.string() + ": " + std::strerror(errno));
    }
    return core::Status::Ok();
  };
  std::error_code ec;
  if (!fs::is_directory(dir.path, ec)) return core::Status::Ok();
  RM_RETURN_IF_ERROR(own(dir.path, true));
  for (auto it = fs::recursive_directory_iterator(dir.path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    RM_RETURN_IF_ERROR(own(it->path(), it->is_directory(ec) && !it->is_symlink(ec)));
  }
  return core::Status::Ok();
}

core::Result<VolumeDir> setUpVolume(const kube::Volume& v, const std::string& ns,
                                    const fs::path& pod_dir, const fs::path& claims_dir,
                                    const PodSources& sources) {
  const std::string what = "volume " + v.name;
  RM_ASSIGN_OR_RETURN(VolumeDir dir, volumeDir(v, ns, pod_dir, claims_dir));
  if (auto base = volumeBase(v, ns, pod_dir, claims_dir)) {
    RM_RETURN_IF_ERROR(checkInside(*base, dir.path, what));
  }
  if (v.config_map || v.secret) {
    std::vector<ProjectedFile> files;
    RM_RETURN_IF_ERROR(appendKeyFiles(
        v.secret.has_value(), v.config_map ? v.config_map->name : v.secret->secret_name,
        v.config_map ? v.config_map->items : v.secret->items,
        v.config_map ? v.config_map->default_mode : v.secret->default_mode,
        v.config_map ? v.config_map->optional.value_or(false) : v.secret->optional.value_or(false),
        sources, what, files));
    RM_RETURN_IF_ERROR(writeProjection(dir.path, files));
  } else if (v.downward_api) {
    std::vector<ProjectedFile> files;
    RM_RETURN_IF_ERROR(appendDownwardFiles(
        *v.downward_api, v.downward_api->default_mode.value_or(0644), sources, what, files));
    RM_RETURN_IF_ERROR(writeProjection(dir.path, files));
  } else if (v.projected) {
    RM_ASSIGN_OR_RETURN(auto files, projectedFiles(*v.projected, sources, what));
    RM_RETURN_IF_ERROR(writeProjection(dir.path, files));
  } else if (!v.host_path || v.host_path->type.value_or("") == "" ||
             v.host_path->type.value_or("") == "DirectoryOrCreate") {
    std::error_code ec;
    fs::create_directories(dir.path, ec);
    if (ec)
      return core::internalError(what + ": create " + dir.path.string() + ": " + ec.message());
  }
  return dir;
}

core::Result<std::vector<Mount>> containerMounts(const kube::Container& container,
                                                 const std::map<std::string, VolumeDir>& dirs) {
  std::vector<Mount> out;
  for (const auto& vm : container.volume_mounts) {
    auto it = dirs.find(vm.name);
    if (it == dirs.end()) {
      return core::invalidArgument("container " + container.name + ": volumeMount \"" + vm.name +
                                   "\" names no volume of the pod");
    }
    if (vm.mount_path.empty() || vm.mount_path[0] != '/') {
      return core::invalidArgument("container " + container.name + ": mountPath \"" +
                                   vm.mount_path + "\" must be absolute");
    }
    fs::path source = it->second.path;
    if (vm.sub_path && !vm.sub_path->empty()) {
      if (!safeRelative(*vm.sub_path)) {
        return core::invalidArgument("container " + container.name + ": bad subPath \"" +
                                     *vm.sub_path + "\"");
      }
      source /= *vm.sub_path;
      // A symlink inside the volume (a container may make one) must not lead out of it.
      RM_RETURN_IF_ERROR(
          checkInside(it->second.path, source,
                      "container " + container.name + ": subPath \"" + *vm.sub_path + "\""));
    }
    out.push_back({source.string(), fs::path(vm.mount_path).lexically_normal().string(),
                   it->second.read_only || vm.read_only.value_or(false)});
  }
  return out;
}

}  // namespace ringmaster::local::kubelet
