#include "local/kubelet/pod_paths.h"

#include "local/kubelet/termination_message.h"
#include "local/kubelet/volumes.h"

namespace ringmaster::local::kubelet {

namespace fs = std::filesystem;

bool isInside(const fs::path& base, const fs::path& path) {
  if (!base.is_absolute() || !path.is_absolute()) return false;
  fs::path b = base.lexically_normal();
  const fs::path p = path.lexically_normal();
  if (!b.has_filename()) b = b.parent_path();  // "/r/" -> "/r" ("/" stays "/")
  auto bi = b.begin(), pi = p.begin();
  for (; bi != b.end(); ++bi, ++pi) {
    if (pi == p.end() || *pi != *bi) return false;
  }
  // Something below base, not base itself (a trailing separator is no entry).
  for (; pi != p.end(); ++pi) {
    if (!pi->empty()) return true;
  }
  return false;
}

core::Status checkInside(const fs::path& base, const fs::path& path, const std::string& what) {
  auto refuse = [&](const fs::path& b, const fs::path& p) {
    return core::invalidArgument(what + ": " + p.string() + " is outside " + b.string());
  };
  if (!isInside(base, path)) return refuse(base, path);
  std::error_code ec, ec2;
  const fs::path real_base = fs::weakly_canonical(base, ec);
  const fs::path real_path = fs::weakly_canonical(path, ec2);
  if (ec || ec2) {
    return core::invalidArgument(what + ": cannot resolve " + path.string() + ": " +
                                 (ec ? ec : ec2).message());
  }
  if (!isInside(real_base, real_path)) return refuse(real_base, real_path);
  return core::Status::Ok();
}

fs::path podDir(const fs::path& root_dir, const kube::ObjectMeta& meta) {
  return root_dir / "pods" / meta.namespace_name / (meta.name + "_" + meta.uid);
}

ContainerFiles containerFiles(const fs::path& pod_dir, const std::string& name) {
  return {pod_dir / (name + ".log"), pod_dir / (name + ".previous.log"),
          pod_dir / (name + ".pid"), messageFile(pod_dir, name),
          pod_dir / "work" / name,   pod_dir / (name + ".conmon.pid")};
}

namespace {

// A name used as one directory entry: no separator, not "." or "..".
core::Status oneEntry(const std::string& name, const std::string& field) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return core::invalidArgument(field + ": \"" + name + "\" cannot name a file");
  }
  return core::Status::Ok();
}

core::Status checkContainers(const std::vector<kube::Container>& list, const std::string& field,
                             const fs::path& dir) {
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    RM_RETURN_IF_ERROR(oneEntry(list[i].name, at + ".name"));
    const ContainerFiles f = containerFiles(dir, list[i].name);
    for (const fs::path& p : {f.log, f.previous_log, f.pid, f.termination_log, f.conmon_pid}) {
      RM_RETURN_IF_ERROR(checkInside(dir, p, at + ".name"));
    }
    RM_RETURN_IF_ERROR(checkInside(dir / "work", f.work_dir, at + ".name"));
    for (size_t m = 0; m < list[i].volume_mounts.size(); ++m) {
      const auto& sub = list[i].volume_mounts[m].sub_path;
      if (!sub || sub->empty()) continue;
      const fs::path base = "/volume";  // any absolute base: the subPath alone must stay below
      if (!isInside(base, base / *sub)) {
        return core::invalidArgument(at + ".volumeMounts[" + std::to_string(m) + "].subPath: \"" +
                                     *sub + "\" leaves its volume");
      }
    }
  }
  return core::Status::Ok();
}

}  // namespace

core::Status checkPodPaths(const kube::Pod& pod, const fs::path& root_dir,
                           const fs::path& claims_dir) {
  const kube::ObjectMeta& meta = pod.metadata;
  RM_RETURN_IF_ERROR(oneEntry(meta.namespace_name, "metadata.namespace"));
  RM_RETURN_IF_ERROR(oneEntry(meta.name + "_" + meta.uid, "metadata.name"));
  const fs::path dir = podDir(root_dir, meta);
  RM_RETURN_IF_ERROR(checkInside(root_dir / "pods", dir, "metadata.name"));
  RM_RETURN_IF_ERROR(checkContainers(pod.spec.init_containers, "spec.initContainers", dir));
  RM_RETURN_IF_ERROR(checkContainers(pod.spec.containers, "spec.containers", dir));
  for (size_t i = 0; i < pod.spec.volumes.size(); ++i) {
    const kube::Volume& v = pod.spec.volumes[i];
    const std::string at = "spec.volumes[" + std::to_string(i) + "]";
    RM_RETURN_IF_ERROR(oneEntry(v.name, at + ".name"));
    auto vd = volumeDir(v, meta.namespace_name, dir, claims_dir);
    if (!vd.ok()) return vd.status().withContext(at);
    const std::optional<fs::path> base = volumeBase(v, meta.namespace_name, dir, claims_dir);
    if (!base) continue;  // hostPath
    RM_RETURN_IF_ERROR(checkInside(
        *base, vd->path,
        at + (v.persistent_volume_claim ? ".persistentVolumeClaim.claimName" : ".name")));
    const auto* items = v.config_map ? &v.config_map->items : v.secret ? &v.secret->items : nullptr;
    for (size_t k = 0; items && k < items->size(); ++k) {
      RM_RETURN_IF_ERROR(checkInside(vd->path, vd->path / (*items)[k].path,
                                     at + (v.config_map ? ".configMap" : ".secret") + ".items[" +
                                         std::to_string(k) + "].path"));
    }
  }
  return core::Status::Ok();
}

}  // namespace ringmaster::local::kubelet
