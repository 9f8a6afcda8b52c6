#include "local/kubelet/volumes.h"

#include "local/kubelet/hosts_file.h"

namespace ringmaster::local::kubelet {

namespace fs = std::filesystem;

namespace {

bool safeRelative(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  for (const auto& part : fs::path(path)) {
    if (part == "..") return false;
  }
  return true;
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
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return core::internalError("create " + dir.string() + ": " + ec.message());
  for (const auto& f : files) {
    fs::path path = dir / f.path;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return core::internalError("create " + path.parent_path().string() + ": " + ec.message());
    RM_RETURN_IF_ERROR(writeFileAtomically(path, f.content, f.mode));
  }
  return core::Status::Ok();
}

core::Result<VolumeDir> volumeDir(const kube::Volume& volume, const std::string& namespace_name,
                                  const fs::path& pod_dir, const fs::path& root_dir) {
  const fs::path vols = pod_dir / "volumes";
  if (volume.empty_dir) return VolumeDir{vols / "empty-dir" / volume.name, false};
  if (volume.config_map) return VolumeDir{vols / "configmap" / volume.name, true};
  if (volume.secret) return VolumeDir{vols / "secret" / volume.name, true};
  if (volume.host_path) {
    if (volume.host_path->path.empty() || volume.host_path->path[0] != '/') {
      return core::invalidArgument("volume " + volume.name + ": hostPath.path must be absolute");
    }
    return VolumeDir{volume.host_path->path, false};
  }
  if (volume.persistent_volume_claim) {
    const std::string& claim = volume.persistent_volume_claim->claim_name;
    if (claim.empty() || claim.find('/') != std::string::npos || claim == "..") {
      return core::invalidArgument("volume " + volume.name + ": bad claimName \"" + claim + "\"");
    }
    return VolumeDir{root_dir / "volumes" / namespace_name / claim,
                     volume.persistent_volume_claim->read_only.value_or(false)};
  }
  return core::invalidArgument("volume " + volume.name +
                               ": unsupported volume source (supported: emptyDir, hostPath, "
                               "configMap, secret, persistentVolumeClaim)");
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
    }
    out.push_back({source.string(), fs::path(vm.mount_path).lexically_normal().string(),
                   it->second.read_only || vm.read_only.value_or(false)});
  }
  return out;
}

}  // namespace ringmaster::local::kubelet
