// A process's share of the cores: its affinity, cut to its cgroup's quota, over the pod's
// processes; and the quota as cgroup v2 writes it.
#include "trainer/cpu_share.h"

#include <gtest/gtest.h>

#include <optional>

namespace ringmaster::trainer {
namespace {

TEST(CpuShare, TheAffinityCutToTheQuotaSharedAmongTheProcesses) {
  struct Row {
    const char* what;
    int affinity;
    std::optional<double> quota;
    int processes;
    int share;
  };
  const Row rows[] = {
      {"one process on two cores", 2, std::nullopt, 1, 2},
      {"two processes on two cores", 2, std::nullopt, 2, 1},
      {"a pod limited to 2 CPUs on a 16-core node", 16, 2.0, 1, 2},
      {"a limit of 1.5 CPUs is one core's worth of threads", 16, 1.5, 1, 1},
      {"more processes than cores still get one", 2, std::nullopt, 4, 1},
      {"a quota above the affinity", 4, 8.0, 2, 2},
      {"no affinity read", 0, std::nullopt, 1, 1},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(cpuShare(row.affinity, row.quota, row.processes), row.share) << row.what;
  }
}

TEST(CpuShare, CgroupCpuMaxIsQuotaOverPeriodOrNoLimit) {
  EXPECT_EQ(cgroupCpuQuota("200000 100000"), 2.0);
  EXPECT_EQ(cgroupCpuQuota("150000 100000\n"), 1.5);
  EXPECT_EQ(cgroupCpuQuota("max 100000"), std::nullopt);
  EXPECT_EQ(cgroupCpuQuota(""), std::nullopt);
  EXPECT_EQ(cgroupCpuQuota("lots 100000"), std::nullopt);
  EXPECT_EQ(cgroupCpuQuota("100000 0"), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::trainer
