#include "trainer/metrics_port.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace ringmaster::trainer {
namespace {

TEST(ConfiguredMetricsPort, TheFlagThenTheConfigFileThenNone) {
  struct Case {
    std::optional<int64_t> flag;
    bool config_file;
    int32_t config_port;
    int64_t want;
  };
  const Case cases[] = {
      {std::nullopt, false, 9090, -1},  // a bare trainer opens no port
      {std::nullopt, true, 9090, 9090},
      {std::nullopt, true, 0, 0},
      {9300, true, 9090, 9300},
      {0, false, 9090, 0},
      {-1, true, 9090, -1},
      {65535, false, 9090, 65535},
  };
  for (const Case& c : cases) {
    auto port = configuredMetricsPort(c.flag, c.config_file, c.config_port);
    ASSERT_TRUE(port.ok()) << port.status().message();
    EXPECT_EQ(*port, c.want) << c.flag.value_or(-99) << " " << c.config_file;
  }
  for (int64_t bad : {int64_t{-2}, int64_t{65536}, int64_t{1} << 40}) {
    auto port = configuredMetricsPort(bad, false, 9090);
    ASSERT_FALSE(port.ok()) << bad;
    EXPECT_EQ(port.status().code(), core::Code::kUsage);
    EXPECT_EQ(port.status().message(), "flag --metrics-port: must be -1 (off), 0 (any) or a port");
  }
}

TEST(RankMetricsPort, AFixedPortIsThePodsBase) {
  struct Case {
    int64_t configured;
    int local_rank;
    std::optional<int> want;
  };
  const Case cases[] = {
      {-1, 0, std::nullopt}, {-1, 3, std::nullopt}, {0, 0, 0},         {0, 5, 0},
      {9090, 0, 9090},       {9090, 3, 9093},       {65535, 0, 65535}, {65530, 5, 65535},
  };
  for (const Case& c : cases) {
    auto port = rankMetricsPort(c.configured, c.local_rank);
    ASSERT_TRUE(port.ok()) << port.status().message();
    EXPECT_EQ(*port, c.want) << c.configured << " + " << c.local_rank;
  }
  auto beyond = rankMetricsPort(65530, 6);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), core::Code::kInvalidArgument);
  EXPECT_EQ(beyond.status().message(), "metrics port 65530 + LOCAL_RANK 6 is not a TCP port");
}

}  // namespace
}  // namespace ringmaster::trainer
