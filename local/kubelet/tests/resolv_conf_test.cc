#include "local/kubelet/resolv_conf.h"

#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

using nlohmann::json;

TEST(ResolvConf, ParsesNameserversTheLastSearchLineAndOptions) {
  const ResolvConf conf = parseResolvConf(
      "# a comment\n"
      "domain example.org\n"
      "nameserver 10.0.0.53\n"
      "nameserver 10.0.0.54 ; trailing\n"
      "search a.example b.example\n"
      "options ndots:2 edns0\n"
      "options ndots:3\n"
      "nameserver\n");
  EXPECT_EQ(conf.nameservers, (std::vector<std::string>{"10.0.0.53", "10.0.0.54"}));
  EXPECT_EQ(conf.searches, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_EQ(conf.options, (std::vector<std::string>{"ndots:3", "edns0"}));
}

TEST(ResolvConf, APodsResolverFollowsItsPolicyAndDnsConfig) {
  const ResolvConf host{{"10.0.0.53"}, {"corp.example"}, {"edns0", "ndots:1"}};
  struct Row {
    std::string name;
    json policy, config;
    ResolvConf want;
  };
  json many_servers = {{"nameservers", {"1.1.1.1", "2.2.2.2", "3.3.3.3"}}};
  json many_searches = json::array();
  for (int i = 0; i < 40; ++i) many_searches.push_back("s" + std::to_string(i) + ".example");
  std::vector<std::string> first_32;
  for (int i = 0; i < 32; ++i) first_32.push_back("s" + std::to_string(i) + ".example");
  const std::vector<Row> rows = {
      {"ClusterFirst without cluster DNS: the node's", "ClusterFirst", nullptr, host},
      {"unset policy is ClusterFirst", nullptr, nullptr, host},
      {"Default: the node's", "Default", nullptr, host},
      {"None without dnsConfig: empty", "None", nullptr, ResolvConf{}},
      {"None with dnsConfig: only it",
       "None",
       {{"nameservers", {"192.0.2.1"}},
        {"searches", {"ns1.svc.cluster.local"}},
        {"options", {{{"name", "ndots"}, {"value", "5"}}}}},
       ResolvConf{{"192.0.2.1"}, {"ns1.svc.cluster.local"}, {"ndots:5"}}},
      {"dnsConfig appends, drops duplicates, overrides options by name",
       "ClusterFirst",
       {{"nameservers", {"10.0.0.53", "192.0.2.1"}},
        {"searches", {"corp.example", "extra.example"}},
        {"options", {{{"name", "ndots"}, {"value", "5"}}, {{"name", "single-request"}}}}},
       ResolvConf{{"10.0.0.53", "192.0.2.1"},
                  {"corp.example", "extra.example"},
                  {"edns0", "ndots:5", "single-request"}}},
      {"at most 3 nameservers", "Default", many_servers,
       ResolvConf{{"10.0.0.53", "1.1.1.1", "2.2.2.2"}, {"corp.example"}, {"edns0", "ndots:1"}}},
      {"at most 32 searches", "None", {{"searches", many_searches}}, ResolvConf{{}, first_32, {}}},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(podResolvConf(host, row.policy, row.config), row.want) << row.name;
  }
}

TEST(ResolvConf, RendersSearchNameserversAndOptionsLines) {
  EXPECT_EQ(renderResolvConf({{"10.0.0.53", "10.0.0.54"}, {"a.example", "b.example"}, {"ndots:5"}}),
            "search a.example b.example\nnameserver 10.0.0.53\nnameserver 10.0.0.54\n"
            "options ndots:5\n");
  EXPECT_EQ(renderResolvConf({{"10.0.0.53"}, {}, {}}), "nameserver 10.0.0.53\n");
  EXPECT_EQ(renderResolvConf({}), "");
  const ResolvConf round{{"10.0.0.53"}, {"a.example"}, {"edns0"}};
  EXPECT_EQ(parseResolvConf(renderResolvConf(round)), round);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
