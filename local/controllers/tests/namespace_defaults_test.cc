#include "local/controllers/namespace_defaults.h"

#include <gtest/gtest.h>

namespace ringmaster::local::controllers {
namespace {

using json = nlohmann::json;

ResourceType type(std::string resource, std::string kind, bool namespaced) {
  ResourceType t;
  t.version = "v1";
  t.resource = std::move(resource);
  t.kind = std::move(kind);
  t.namespaced = namespaced;
  t.builtin = true;
  t.tracks_generation = false;
  return t;
}

class NamespaceDefaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.registerType(type("namespaces", "Namespace", false));
    store_.registerType(type("configmaps", "ConfigMap", true));
    store_.registerType(type("serviceaccounts", "ServiceAccount", true));
    for (const char* ns : {"a", "b"}) {
      ASSERT_TRUE(
          store_
              .create(namespaces_, "",
                      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}})
              .ok());
    }
  }

  const ResourceKey namespaces_{"", "namespaces"};
  const ResourceKey config_maps_{"", "configmaps"};
  const ResourceKey service_accounts_{"", "serviceaccounts"};
  ObjectStore store_;
};

TEST_F(NamespaceDefaultsTest, EveryNamespaceGetsTheCaAndTheDefaultAccountOnce) {
  NamespaceDefaults defaults(store_, "CA-1");
  EXPECT_EQ(defaults.sync(), 4u);
  EXPECT_EQ(defaults.sync(), 0u) << "a second pass finds everything in place";
  for (const char* ns : {"a", "b"}) {
    auto cm = store_.get(config_maps_, ns, kRootCaConfigMap);
    ASSERT_TRUE(cm.ok()) << ns;
    EXPECT_EQ((*cm)->object["data"]["ca.crt"], "CA-1");
    EXPECT_TRUE(store_.get(service_accounts_, ns, kDefaultServiceAccount).ok()) << ns;
  }
}

TEST_F(NamespaceDefaultsTest, ANewCaIsPublishedAndTerminatingNamespacesAreSkipped) {
  NamespaceDefaults(store_, "CA-1").sync();
  ASSERT_TRUE(store_
                  .mutate(namespaces_, "", "b",
                          [](json& ns) -> std::optional<StatusError> {
                            ns["status"]["phase"] = "Terminating";
                            return std::nullopt;
                          })
                  .ok());
  EXPECT_EQ(NamespaceDefaults(store_, "CA-2").sync(), 1u);
  EXPECT_EQ(store_.get(config_maps_, "a", kRootCaConfigMap).value()->object["data"]["ca.crt"],
            "CA-2");
  EXPECT_EQ(store_.get(config_maps_, "b", kRootCaConfigMap).value()->object["data"]["ca.crt"],
            "CA-1");
}

}  // namespace
}  // namespace ringmaster::local::controllers
