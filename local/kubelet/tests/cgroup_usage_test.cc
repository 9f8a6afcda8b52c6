#include "local/kubelet/cgroup_usage.h"

#include <gtest/gtest.h>

#include <fstream>

#include "local/kubelet/tests/temp_dir.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// cgroup v1 with each controller mounted under its name, as on this project's CI hosts.
TEST(CgroupUsage, ReadsV1CpuacctAndMemoryLessInactiveFiles) {
  test_support::TempDir root;
  const fs::path cpu = root.path() / "cpuacct/libpod_parent/libpod-abc";
  const fs::path mem = root.path() / "memory/libpod_parent/libpod-abc";
  write(cpu / "cpuacct.usage", "2500000000\n");
  write(mem / "memory.usage_in_bytes", "10485760\n");
  write(mem / "memory.stat", "cache 4096\ninactive_file 1\ntotal_inactive_file 2097152\n");
  const auto usage = cgroupUsage(
      "9:name=systemd:/\n4:memory:/libpod_parent/libpod-abc\n"
      "2:cpuacct:/libpod_parent/libpod-abc\n1:cpu:/libpod_parent/libpod-abc\n0::/\n",
      root.path());
  ASSERT_TRUE(usage.has_value());
  EXPECT_DOUBLE_EQ(usage->cpu_seconds, 2.5);
  EXPECT_EQ(usage->memory_bytes, 10485760 - 2097152);
}

// cgroup v1 with cpu and cpuacct joined in one hierarchy ("cpu,cpuacct").
TEST(CgroupUsage, FindsAJoinedV1Hierarchy) {
  test_support::TempDir root;
  write(root.path() / "cpu,cpuacct/pod/c/cpuacct.usage", "1000000000");
  write(root.path() / "memory/pod/c/memory.usage_in_bytes", "100");
  write(root.path() / "memory/pod/c/memory.stat", "total_inactive_file 300\n");
  const auto usage = cgroupUsage("3:memory:/pod/c\n2:cpu,cpuacct:/pod/c\n", root.path());
  ASSERT_TRUE(usage.has_value());
  EXPECT_DOUBLE_EQ(usage->cpu_seconds, 1.0);
  EXPECT_EQ(usage->memory_bytes, 0) << "a working set never falls below 0";
}

TEST(CgroupUsage, ReadsTheUnifiedHierarchy) {
  test_support::TempDir root;
  const fs::path dir = root.path() / "machine.slice/libpod-abc.scope";
  write(dir / "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n");
  write(dir / "memory.current", "8192\n");
  write(dir / "memory.stat", "anon 4096\ninactive_file 4096\n");
  const auto usage = cgroupUsage("0::/machine.slice/libpod-abc.scope\n", root.path());
  ASSERT_TRUE(usage.has_value());
  EXPECT_DOUBLE_EQ(usage->cpu_seconds, 1.5);
  EXPECT_EQ(usage->memory_bytes, 4096);
}

TEST(CgroupUsage, AGoneCgroupHasNoUsage) {
  test_support::TempDir root;
  EXPECT_FALSE(cgroupUsage("2:cpuacct:/gone\n4:memory:/gone\n", root.path()).has_value());
  EXPECT_FALSE(cgroupUsage("0::/gone\n", root.path()).has_value());
  EXPECT_FALSE(cgroupUsage("", root.path()).has_value());
  EXPECT_FALSE(conmonContainerUsage(root.path() / "no.pid").has_value());
}

}  // namespace
}  // namespace ringmaster::local::kubelet
