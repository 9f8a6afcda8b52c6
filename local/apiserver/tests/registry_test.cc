#include "local/apiserver/registry.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

ApiResource resource(const std::string& group, const std::string& plural,
                     const std::string& singular) {
  ApiResource r;
  r.type.group = group;
  r.type.version = "v1";
  r.type.resource = plural;
  r.singular = singular;
  return r;
}

TEST(ResourceRegistry, FindsWhatWasAddedAndNothingElse) {
  ResourceRegistry registry;
  registry.add(resource("", "pods", "pod"));
  registry.add(resource("apps", "deployments", "deployment"));
  std::shared_ptr<const ApiResource> pods = registry.find("", "v1", "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_EQ(pods->singular, "pod");
  EXPECT_EQ(registry.find("", "v1", "deployments"), nullptr);  // another group
  EXPECT_EQ(registry.find("apps", "v2", "deployments"), nullptr);
  std::vector<ApiResource> all = registry.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].type.resource, "pods");  // group "" first
  EXPECT_TRUE(registry.hasGroupVersion("apps", "v1"));
  EXPECT_FALSE(registry.hasGroupVersion("apps", "v2"));
}

// A request keeps the resource it found while a CRD update replaces or removes it.
TEST(ResourceRegistry, AResourceFoundStaysWholeWhenReplacedOrRemoved) {
  ResourceRegistry registry;
  registry.add(resource("ringmaster.dev", "trainingjobs", "trainingjob"));
  std::shared_ptr<const ApiResource> held = registry.find("ringmaster.dev", "v1", "trainingjobs");
  registry.add(resource("ringmaster.dev", "trainingjobs", "renamed"));
  EXPECT_EQ(held->singular, "trainingjob");
  EXPECT_EQ(registry.find("ringmaster.dev", "v1", "trainingjobs")->singular, "renamed");
  registry.remove("ringmaster.dev", "v1", "trainingjobs");
  EXPECT_EQ(registry.find("ringmaster.dev", "v1", "trainingjobs"), nullptr);
  EXPECT_EQ(held->singular, "trainingjob");
}

}  // namespace
}  // namespace ringmaster::local
