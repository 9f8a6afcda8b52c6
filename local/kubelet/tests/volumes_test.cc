#include "local/kubelet/volumes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

// fsGroup: a claim's and an emptyDir's tree become the group's, writable and setgid; a
// configMap's only readable by it; a hostPath is the node's and stays as it is.
TEST(ApplyFsGroup, GivesEveryVolumeButAHostPathToTheGroup) {
  if (geteuid() != 0) GTEST_SKIP() << "changing a file's group to another needs root";
  char tmpl[] = "/tmp/volumes_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path root(tmpl);
  struct Row {
    const char* what;
    kube::Volume volume;
    bool changed;
    bool group_writable;
  };
  kube::Volume claim, cm, host;
  claim.name = "ckpt";
  claim.persistent_volume_claim = kube::PersistentVolumeClaimVolumeSource{};
  cm.name = "cfg";
  cm.config_map = kube::ConfigMapVolumeSource{};
  host.name = "host";
  host.host_path = kube::HostPathVolumeSource{};
  const Row rows[] = {{"claim", claim, true, true},
                      {"configMap", cm, true, false},
                      {"hostPath", host, false, false}};
  for (const Row& row : rows) {
    const fs::path dir = root / row.what;
    fs::create_directories(dir / "sub");
    std::ofstream(dir / "sub" / "file") << "x";
    fs::permissions(dir / "sub" / "file", fs::perms::owner_read | fs::perms::owner_write);
    ASSERT_TRUE(applyFsGroup(row.volume, VolumeDir{dir, false}, 4321).ok()) << row.what;
    for (const fs::path& p : {dir, dir / "sub", dir / "sub" / "file"}) {
      struct stat st {};
      ASSERT_EQ(stat(p.c_str(), &st), 0);
      EXPECT_EQ(st.st_gid == 4321u, row.changed) << row.what << " " << p;
      if (!row.changed) continue;
      EXPECT_TRUE(st.st_mode & S_IRGRP) << p;
      EXPECT_EQ((st.st_mode & S_IWGRP) != 0, row.group_writable) << row.what << " " << p;
      if (S_ISDIR(st.st_mode)) {
        EXPECT_TRUE(st.st_mode & S_ISGID) << "new files inherit the group";
      }
    }
  }
  fs::remove_all(root);
}

TEST(VolumeDir, MapsEachSourceToItsDirectory) {
  const fs::path pod = "/r/pods/ns/p_u", root = "/r";
  kube::Volume empty{"scratch", kube::EmptyDirVolumeSource{}, {}, {}, {}, {}, {}, {}, {}};
  EXPECT_EQ(volumeDir(empty, "ns", pod, root / "volumes")->path, pod / "volumes/empty-dir/scratch");
  kube::Volume pvc{"data", {}, {},
                   {},     {}, kube::PersistentVolumeClaimVolumeSource{"claim", true, {}},
                   {},     {}, {}};
  auto d = volumeDir(pvc, "ns", pod, root / "volumes");
  EXPECT_EQ(d->path, root / "volumes/ns/claim");
  EXPECT_TRUE(d->read_only);
  kube::Volume cm{"cfg", {}, {}, kube::ConfigMapVolumeSource{"c", {}, {}, {}, {}}, {}, {},
                  {},    {}, {}};
  EXPECT_TRUE(volumeDir(cm, "ns", pod, root / "volumes")->read_only);
  kube::Volume host{"h", {}, kube::HostPathVolumeSource{"/data", {}, {}}, {}, {}, {}, {}, {}, {}};
  EXPECT_EQ(volumeDir(host, "ns", pod, root / "volumes")->path, "/data");
  kube::Volume unknown{"x", {}, {}, {}, {}, {}, {}, {}, {}};
  EXPECT_FALSE(volumeDir(unknown, "ns", pod, root / "volumes").ok());
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

// A projected volume (what ServiceAccount admission adds to every pod: a token, the cluster's CA
// from a ConfigMap, the namespace from the downward API) and a downwardAPI volume, from fake
// sources.
class ProjectedVolumes : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rm-projected-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    sources_.data = [](bool secret, const std::string& name) {
      using Data = std::optional<std::map<std::string, std::string>>;
      if (!secret && name == "kube-root-ca.crt") {
        return core::Result<Data>(Data(std::map<std::string, std::string>{{"ca.crt", "CA"}}));
      }
      return core::Result<Data>(Data());
    };
    sources_.field = [](const std::string& path) -> core::Result<std::string> {
      if (path == "metadata.namespace") return std::string("team");
      return core::invalidArgument("unsupported fieldRef.fieldPath \"" + path + "\"");
    };
    sources_.token = [this](const kube::ServiceAccountTokenProjection& t) {
      requested_ = t;
      return core::Result<std::string>(std::string("header.payload.signature"));
    };
  }
  void TearDown() override { fs::remove_all(root_); }

  static kube::Volume apiAccess() {
    kube::Volume v;
    v.name = "kube-api-access-x1";
    kube::ProjectedVolumeSource p;
    p.default_mode = 0644;
    kube::VolumeProjection token, ca, ns;
    token.service_account_token = kube::ServiceAccountTokenProjection{"", 3607, "token", {}};
    ca.config_map = kube::KeyProjection{"kube-root-ca.crt", {{"ca.crt", "ca.crt", {}, {}}}, {}, {}};
    kube::DownwardApiVolumeSource d;
    d.items.push_back(
        {"namespace", kube::ObjectFieldSelector{"v1", "metadata.namespace", {}}, {}, {}});
    ns.downward_api = d;
    p.sources = {token, ca, ns};
    v.projected = p;
    return v;
  }

  std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path root_;
  PodSources sources_;
  std::optional<kube::ServiceAccountTokenProjection> requested_;
};

TEST_F(ProjectedVolumes, TheServiceAccountVolumeHoldsTokenCaAndNamespace) {
  auto dir = setUpVolume(apiAccess(), "team", root_ / "pod", root_ / "volumes", sources_);
  ASSERT_TRUE(dir.ok()) << dir.status().toString();
  EXPECT_TRUE(dir->read_only);
  EXPECT_EQ(dir->path, root_ / "pod" / "volumes" / "projected" / "kube-api-access-x1");
  EXPECT_EQ(read(dir->path / "token"), "header.payload.signature");
  EXPECT_EQ(read(dir->path / "ca.crt"), "CA");
  EXPECT_EQ(read(dir->path / "namespace"), "team");
  ASSERT_TRUE(requested_);
  EXPECT_EQ(requested_->expiration_seconds, 3607);
  struct stat st {};
  ASSERT_EQ(stat((dir->path / "token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(ProjectedVolumes, AFailedSourceNamesTheVolumeAndWhatFailed) {
  sources_.token = [](const kube::ServiceAccountTokenProjection&) -> core::Result<std::string> {
    return core::notFound("serviceaccounts \"default\" not found");
  };
  auto no_token = setUpVolume(apiAccess(), "team", root_ / "pod", root_ / "volumes", sources_);
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.status().message().find("volume kube-api-access-x1"), std::string::npos)
      << no_token.status().toString();
  EXPECT_NE(no_token.status().message().find("serviceaccounts \"default\" not found"),
            std::string::npos);

  kube::Volume climbing = apiAccess();
  climbing.projected->sources[0].service_account_token->path = "../../token";
  EXPECT_FALSE(setUpVolume(climbing, "team", root_ / "pod", root_ / "volumes", sources_).ok());
  EXPECT_FALSE(fs::exists(root_ / "token"));
}

TEST_F(ProjectedVolumes, ADownwardApiVolumeWritesTheFieldsItNames) {
  kube::Volume v;
  v.name = "podinfo";
  kube::DownwardApiVolumeSource d;
  d.default_mode = 0400;
  d.items.push_back({"ns", kube::ObjectFieldSelector{{}, "metadata.namespace", {}}, {}, {}});
  v.downward_api = d;
  auto dir = setUpVolume(v, "team", root_ / "pod", root_ / "volumes", sources_);
  ASSERT_TRUE(dir.ok()) << dir.status().toString();
  EXPECT_EQ(read(dir->path / "ns"), "team");
  struct stat st {};
  ASSERT_EQ(stat((dir->path / "ns").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);

  v.downward_api->items[0].field_ref->field_path = "spec.nodeSelector";
  auto bad = setUpVolume(v, "team", root_ / "pod", root_ / "volumes", sources_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.nodeSelector"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
