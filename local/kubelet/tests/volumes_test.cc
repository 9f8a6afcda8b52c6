#include "local/kubelet/volumes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

TEST(ProjectKeys, AllKeysWithDefaultMode) {
  auto files = projectKeys({{"a", "1"}, {"b", "2"}}, {}, 0400, false, "volume v");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<ProjectedFile>{{"a", "1", 0400}, {"b", "2", 0400}}));
  auto plain = projectKeys({{"a", "1"}}, {}, std::nullopt, false, "volume v");
  EXPECT_EQ(plain->at(0).mode, 0644);
}

TEST(ProjectKeys, ItemsPickKeysPathsAndModes) {
  std::vector<kube::KeyToPath> items = {{"a", "dir/first.txt", 0600, {}}, {"b", "second", {}, {}}};
  auto files = projectKeys({{"a", "1"}, {"b", "2"}, {"c", "3"}}, items, 0440, false, "volume v");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files,
            (std::vector<ProjectedFile>{{"dir/first.txt", "1", 0600}, {"second", "2", 0440}}));
}

TEST(ProjectKeys, MissingKeyAndEscapingPathsFail) {
  std::vector<kube::KeyToPath> missing = {{"zz", "zz", {}, {}}};
  auto r = projectKeys({{"a", "1"}}, missing, std::nullopt, false, "volume v");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"zz\""), std::string::npos);
  EXPECT_TRUE(projectKeys({{"a", "1"}}, missing, std::nullopt, true, "volume v")->empty());
  std::vector<kube::KeyToPath> escape = {{"a", "../x", {}, {}}};
  EXPECT_FALSE(projectKeys({{"a", "1"}}, escape, std::nullopt, false, "volume v").ok());
}

TEST(WriteProjection, WritesFilesWithModesAndDropsOldOnes) {
  char tmpl[] = "/tmp/volumes_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  fs::path dir = fs::path(tmpl) / "cm";
  ASSERT_TRUE(writeProjection(dir, {{"old", "x", 0644}}).ok());
  ASSERT_TRUE(writeProjection(dir, {{"sub/key", "value", 0400}}).ok());
  EXPECT_FALSE(fs::exists(dir / "old"));
  std::stringstream content;
  content << std::ifstream(dir / "sub/key").rdbuf();
  EXPECT_EQ(content.str(), "value");
  struct stat st {};
  ASSERT_EQ(stat((dir / "sub/key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);
  fs::remove_all(tmpl);
}

TEST(VolumeDir, MapsEachSourceToItsDirectory) {
  const fs::path pod = "/r/pods/ns/p_u", root = "/r";
  kube::Volume empty{"scratch", kube::EmptyDirVolumeSource{}, {}, {}, {}, {}, {}};
  EXPECT_EQ(volumeDir(empty, "ns", pod, root)->path, pod / "volumes/empty-dir/scratch");
  kube::Volume pvc{
      "data", {}, {}, {}, {}, kube::PersistentVolumeClaimVolumeSource{"claim", true, {}}, {}};
  auto d = volumeDir(pvc, "ns", pod, root);
  EXPECT_EQ(d->path, root / "volumes/ns/claim");
  EXPECT_TRUE(d->read_only);
  kube::Volume cm{"cfg", {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {}, {}};
  EXPECT_TRUE(volumeDir(cm, "ns", pod, root)->read_only);
  kube::Volume host{"h", {}, kube::HostPathVolumeSource{"/data", {}, {}}, {}, {}, {}, {}};
  EXPECT_EQ(volumeDir(host, "ns", pod, root)->path, "/data");
  kube::Volume unknown{"x", {}, {}, {}, {}, {}, {}};
  EXPECT_FALSE(volumeDir(unknown, "ns", pod, root).ok());
}

TEST(ContainerMounts, ResolvesMountsWithSubPathAndReadOnly) {
  std::map<std::string, VolumeDir> dirs = {{"cfg", {"/v/cfg", true}}, {"data", {"/v/data", false}}};
  kube::Container c;
  c.name = "main";
  c.volume_mounts = {{"cfg", "/etc/app/", std::nullopt, std::nullopt, {}},
                     {"data", "/data", true, std::string("sub"), {}}};
  auto mounts = containerMounts(c, dirs);
  ASSERT_TRUE(mounts.ok()) << mounts.status().toString();
  EXPECT_EQ(*mounts,
            (std::vector<Mount>{{"/v/cfg", "/etc/app/", true}, {"/v/data/sub", "/data", true}}));
  c.volume_mounts.push_back({"nope", "/x", std::nullopt, std::nullopt, {}});
  EXPECT_FALSE(containerMounts(c, dirs).ok());
}

}  // namespace
}  // namespace ringmaster::local::kubelet
