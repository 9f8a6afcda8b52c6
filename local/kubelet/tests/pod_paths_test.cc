// The kubelet's containment of every path it derives from a pod: the lexical check (table),
// symlinks, checkPodPaths naming the field, and the volume code leaving a sentinel directory
// outside the pod untouched when fed names that climb out (API validation bypassed).
#include "local/kubelet/pod_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <functional>

#include "local/kubelet/volumes.h"
#include "temp_dir.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

struct InsideCase {
  std::string base;
  std::string path;
  bool inside;
};

TEST(IsInside, LexicalNormalisationThenPrefix) {
  const std::vector<InsideCase> cases = {
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/a.log", true},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/volumes/configmap/cfg", true},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/./a/../b", true},
      {"/r/pods/ns/p_u/", "/r/pods/ns/p_u/b", true},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/..a", true},  // a name, not a step up
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u", false},     // the base itself
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/", false},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/.", false},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/a/..", false},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/../p_v/x", false},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u/../../../../sentinel", false},
      {"/r/pods/ns/p_u", "/r/pods/ns/p_u2/x", false},  // a sibling sharing the prefix
      {"/r/pods/ns/p_u", "/etc/passwd", false},
      {"/r/pods/ns/p_u", "relative/x", false},
      {"relative", "relative/x", false},
      {"/", "/x", true},
      {"/", "/", false},
  };
  for (const InsideCase& c : cases) {
    EXPECT_EQ(isInside(c.base, c.path), c.inside) << c.path << " in " << c.base;
  }
}

TEST(CheckInside, ASymlinkLeadingOutIsRefused) {
  TempDir tmp;
  const fs::path base = fs::path(tmp.path()) / "pod", outside = fs::path(tmp.path()) / "outside";
  fs::create_directories(base / "real");
  fs::create_directories(outside);
  fs::create_symlink(outside, base / "link");
  EXPECT_TRUE(checkInside(base, base / "real/x", "f").ok());
  EXPECT_TRUE(checkInside(base, base / "new/x", "f").ok());  // need not exist
  core::Status s = checkInside(base, base / "link/x", "spec.volumes[0].name");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("spec.volumes[0].name: ", 0), 0u) << s.message();
  EXPECT_FALSE(checkInside(base, base / "link", "f").ok());
}

kube::Pod goodPod() {
  kube::Pod pod;
  pod.metadata.name = "job-worker-0";
  pod.metadata.namespace_name = "default";
  pod.metadata.uid = "0d4e";
  kube::Container c;
  c.name = "worker";
  c.volume_mounts = {{"data", "/data", std::nullopt, std::string("set/v1"), {}}};
  pod.spec.containers = {c};
  kube::Volume data{"data", kube::EmptyDirVolumeSource{}, {}, {}, {}, {}, {}, {}, {}};
  kube::Volume cfg{"cfg", {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {},
                   {},    {}, {}};
  cfg.config_map->items = {{"k", "dir/k.yaml", {}, {}}};
  kube::Volume ckpt{
      "ckpt", {}, {}, {}, {}, kube::PersistentVolumeClaimVolumeSource{"claim", {}, {}}, {}, {}, {}};
  kube::Volume host{"host", {}, kube::HostPathVolumeSource{"/srv/data", {}, {}}, {}, {}, {}, {},
                    {},     {}};
  pod.spec.volumes = {data, cfg, ckpt, host};
  return pod;
}

struct BadPod {
  std::string what;
  std::function<void(kube::Pod&)> mutate;
  std::string field;
};

TEST(CheckPodPaths, RefusesEveryPathThatLeavesItsDirectoryNamingTheField) {
  ASSERT_TRUE(checkPodPaths(goodPod(), "/r", "/r/volumes").ok())
      << checkPodPaths(goodPod(), "/r", "/r/volumes").toString();
  const std::vector<BadPod> cases = {
      {"namespace ..", [](kube::Pod& p) { p.metadata.namespace_name = ".."; },
       "metadata.namespace"},
      {"pod name with slashes", [](kube::Pod& p) { p.metadata.name = "../../../tmp/x"; },
       "metadata.name"},
      {"container name climbing out",
       [](kube::Pod& p) { p.spec.containers[0].name = "../../../../etc/cron.d/x"; },
       "spec.containers[0].name"},
      {"init container ..",
       [](kube::Pod& p) {
         kube::Container c;
         c.name = "..";
         p.spec.init_containers = {c};
       },
       "spec.initContainers[0].name"},
      {"emptyDir name ../../sentinel",
       [](kube::Pod& p) { p.spec.volumes[0].name = "../../sentinel"; }, "spec.volumes[0].name"},
      {"configMap volume name ..", [](kube::Pod& p) { p.spec.volumes[1].name = ".."; },
       "spec.volumes[1].name"},
      {"configMap item path ../../sentinel",
       [](kube::Pod& p) { p.spec.volumes[1].config_map->items[0].path = "../../sentinel"; },
       "spec.volumes[1]"},
      {"configMap item path absolute",
       [](kube::Pod& p) { p.spec.volumes[1].config_map->items[0].path = "/etc/x"; },
       "spec.volumes[1]"},
      {"claimName climbing out",
       [](kube::Pod& p) { p.spec.volumes[2].persistent_volume_claim->claim_name = ".."; },
       "spec.volumes[2]"},
      {"hostPath with ..", [](kube::Pod& p) { p.spec.volumes[3].host_path->path = "/srv/../etc"; },
       "spec.volumes[3]"},
      {"subPath climbing out",
       [](kube::Pod& p) { p.spec.containers[0].volume_mounts[0].sub_path = "a/../../x"; },
       "spec.containers[0].volumeMounts[0].subPath"},
  };
  for (const BadPod& c : cases) {
    kube::Pod pod = goodPod();
    c.mutate(pod);
    core::Status s = checkPodPaths(pod, "/r", "/r/volumes");
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.message().rfind(c.field, 0), 0u) << c.what << ": " << s.message();
  }
}

// A pod directory under a root, and sentinel directories the climbing names would reach.
class VolumeContainment : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(tmp_.path()) / "kubelet";
    pod_dir_ = root_ / "pods" / "default" / "p_u";
    fs::create_directories(pod_dir_);
    for (const fs::path& s : {fs::path(tmp_.path()) / "sentinel", root_ / "sentinel",
                              pod_dir_ / "sentinel", root_ / "volumes" / "sentinel"}) {
      fs::create_directories(s);
      std::ofstream(s / "keep") << "x";
      sentinels_.push_back(s);
    }
  }
  void expectSentinelsSurvive() {
    for (const fs::path& s : sentinels_) EXPECT_TRUE(fs::exists(s / "keep")) << s;
  }
  TempDir tmp_;
  fs::path root_, pod_dir_;
  std::vector<fs::path> sentinels_;
  PodSources lookup_{[](bool, const std::string&) {
                       return core::Result<std::optional<std::map<std::string, std::string>>>(
                           std::map<std::string, std::string>{{"k", "v"}});
                     },
                     {},
                     {}};
};

TEST_F(VolumeContainment, ClimbingVolumeNamesTouchNothingOutside) {
  for (const std::string name : {"..", "../../sentinel", "../../../../../sentinel",
                                 "../../../../../../sentinel", "x/../../../sentinel"}) {
    kube::Volume cm{name, {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {},
                    {},   {}, {}};
    kube::Volume secret{name, {}, {}, {}, kube::SecretVolumeSource{"s", {}, {}, {}, {}},
                        {},   {}, {}, {}};
    kube::Volume empty{name, kube::EmptyDirVolumeSource{}, {}, {}, {}, {}, {}, {}, {}};
    for (const kube::Volume& v : {cm, secret, empty}) {
      EXPECT_FALSE(setUpVolume(v, "default", pod_dir_, root_ / "volumes", lookup_).ok()) << name;
    }
    kube::Volume pvc{"v", {}, {}, {}, {}, kube::PersistentVolumeClaimVolumeSource{name, {}, {}},
                     {},  {}, {}};
    EXPECT_FALSE(setUpVolume(pvc, "default", pod_dir_, root_ / "volumes", lookup_).ok()) << name;
  }
  expectSentinelsSurvive();
}

TEST_F(VolumeContainment, ClimbingItemPathsTouchNothingOutside) {
  for (const std::string path :
       {"../../sentinel/keep", "../../../../../../sentinel/keep", "/tmp/sentinel/keep"}) {
    kube::Volume cm{"cfg", {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {},
                    {},    {}, {}};
    cm.config_map->items = {{"k", path, {}, {}}};
    EXPECT_FALSE(setUpVolume(cm, "default", pod_dir_, root_ / "volumes", lookup_).ok()) << path;
  }
  expectSentinelsSurvive();
  for (const fs::path& s : sentinels_) {
    std::ifstream in(s / "keep");
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content, "x") << s;
  }
}

TEST_F(VolumeContainment, AVolumeDirectorySymlinkedOutIsNotFollowed) {
  // Something made the configMap volume's directory a symlink to the sentinel: the kubelet must
  // not empty the sentinel when it rewrites the volume.
  fs::create_directories(pod_dir_ / "volumes" / "configmap");
  fs::create_directory_symlink(root_ / "sentinel", pod_dir_ / "volumes" / "configmap" / "cfg");
  kube::Volume cm{"cfg", {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {},
                  {},    {}, {}};
  EXPECT_FALSE(setUpVolume(cm, "default", pod_dir_, root_ / "volumes", lookup_).ok());
  expectSentinelsSurvive();
}

TEST_F(VolumeContainment, WellFormedVolumesAreSetUpInsideThePod) {
  kube::Volume cm{"cfg", {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {},
                  {},    {}, {}};
  cm.config_map->items = {{"k", "dir/k.yaml", {}, {}}};
  auto dir = setUpVolume(cm, "default", pod_dir_, root_ / "volumes", lookup_);
  ASSERT_TRUE(dir.ok()) << dir.status().toString();
  EXPECT_EQ(dir->path, pod_dir_ / "volumes/configmap/cfg");
  EXPECT_TRUE(fs::exists(dir->path / "dir/k.yaml"));
  kube::Volume empty{"scratch", kube::EmptyDirVolumeSource{}, {}, {}, {}, {}, {}, {}, {}};
  auto e = setUpVolume(empty, "default", pod_dir_, root_ / "volumes", lookup_);
  ASSERT_TRUE(e.ok()) << e.status().toString();
  EXPECT_TRUE(fs::is_directory(pod_dir_ / "volumes/empty-dir/scratch"));
  expectSentinelsSurvive();
}

}  // namespace
}  // namespace ringmaster::local::kubelet
