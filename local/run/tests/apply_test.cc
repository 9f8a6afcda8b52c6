// checkObjectIdentity: the naming fields of a manifest's document have their Kubernetes types.
#include "local/run/apply.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

using nlohmann::json;

TEST(CheckObjectIdentity, NamingFieldsMustHaveTheirTypes) {
  struct Case {
    const char* doc;
    const char* error;  // "" when accepted
  };
  const Case cases[] = {
      {R"({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})", ""},
      {R"({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
           "namespace": "ns"}})",
       ""},
      {R"({"kind": "ConfigMap"})", ""},  // missing fields are objectPath's to name
      // Each of these threw out of `ringmaster local run` before anything reached the server.
      {R"({"apiVersion": "v1", "kind": 5})", "m.yaml (document 1): kind must be a string"},
      {R"({"apiVersion": 1, "kind": "X"})", "m.yaml (document 1): apiVersion must be a string"},
      {R"({"kind": "X", "metadata": 5})", "m.yaml (document 1): metadata must be a mapping"},
      {R"({"kind": "X", "metadata": {"name": [1]}})",
       "m.yaml (document 1): metadata.name must be a string"},
      {R"({"kind": "X", "metadata": {"name": "a", "namespace": null}})",
       "m.yaml (document 1): metadata.namespace must be a string"},
      {R"([1])", "m.yaml (document 1): not a mapping"},
  };
  for (const Case& c : cases) {
    core::Status st = checkObjectIdentity(json::parse(c.doc), "m.yaml (document 1)");
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(st.ok()) << c.doc << ": " << st.message();
    } else {
      EXPECT_FALSE(st.ok()) << c.doc;
      EXPECT_EQ(st.message(), c.error) << c.doc;
    }
  }
}

}  // namespace
}  // namespace ringmaster::local
