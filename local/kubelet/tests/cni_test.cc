#include "local/kubelet/cni.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

using ::testing::HasSubstr;

TEST(Cni, TheBridgeNetworkIsTheHostsGatewayWithHostLocalAddressesAndNoMasquerade) {
  const nlohmann::json config = bridgeNetworkConfig("rm-pods0", "10.244.0.0/16", "/run/x");
  EXPECT_EQ(config["cniVersion"], "1.0.0");
  EXPECT_EQ(config["type"], "bridge");
  EXPECT_EQ(config["bridge"], "rm-pods0");
  EXPECT_EQ(config["isGateway"], true);
  EXPECT_EQ(config["ipMasq"], false);
  EXPECT_EQ(config["ipam"]["type"], "host-local");
  EXPECT_EQ(config["ipam"]["ranges"][0][0]["subnet"], "10.244.0.0/16");
  EXPECT_EQ(config["ipam"]["dataDir"], "/run/x");
  EXPECT_FALSE(config["ipam"].contains("routes")) << "no route beyond the pod network";
  EXPECT_EQ(loopbackNetworkConfig()["type"], "loopback");
}

TEST(Cni, TheEnvironmentNamesCommandContainerNamespaceInterfaceAndPluginPath) {
  EXPECT_THAT(
      cniEnvironment(CniCommand::kAdd, "uid-1", "/run/netns/rm-uid-1", "eth0", "/p"),
      ::testing::ElementsAre("CNI_COMMAND=ADD", "CNI_CONTAINERID=uid-1",
                             "CNI_NETNS=/run/netns/rm-uid-1", "CNI_IFNAME=eth0", "CNI_PATH=/p"));
  EXPECT_EQ(cniEnvironment(CniCommand::kDel, "u", "n", "lo", "/p")[0], "CNI_COMMAND=DEL");
}

struct ResultCase {
  const char* name;
  int exit_code;
  const char* out;
  const char* ip;     // expected address, or nullptr
  const char* error;  // expected words of the error, when ip is nullptr
};

TEST(Cni, ParsesTheAddressOrThePluginsWordsFromItsResult) {
  const ResultCase cases[] = {
      {"an ADD's result", 0,
       R"({"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}],)"
       R"("ips":[{"interface":0,"address":"10.244.0.5/16","gateway":"10.244.0.1"}]})",
       "10.244.0.5", nullptr},
      {"IPv6 first, IPv4 taken", 0,
       R"({"ips":[{"address":"fd00::5/64"},{"address":"10.244.0.6/16"}]})", "10.244.0.6", nullptr},
      {"no address", 0, R"({"cniVersion":"1.0.0","ips":[]})", nullptr, "no IPv4 address"},
      {"not JSON", 0, "garbage", nullptr, "not a JSON object"},
      {"an error result", 1,
       R"({"cniVersion":"1.0.0","code":11,"msg":"failed to allocate","details":"range full"})",
       nullptr, "failed to allocate: range full"},
      {"an error without JSON", 2, "plugin crashed", nullptr, "exit code 2: plugin crashed"},
  };
  for (const ResultCase& c : cases) {
    SCOPED_TRACE(c.name);
    core::Result<std::string> ip = parseCniResult(c.exit_code, c.out);
    if (c.ip != nullptr) {
      ASSERT_TRUE(ip.ok()) << ip.status().toString();
      EXPECT_EQ(*ip, c.ip);
    } else {
      ASSERT_FALSE(ip.ok());
      EXPECT_THAT(ip.status().message(), HasSubstr(c.error));
    }
  }
}

}  // namespace
}  // namespace ringmaster::local::kubelet
