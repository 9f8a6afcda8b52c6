// Bodies built to hurt the server (nesting 100,000 deep) get a 400 naming the problem, on every
// path that reads a body, and the server goes on serving.
#include <gtest/gtest.h>

#include <string>

#include "local/apiserver/api_server.h"
#include "local/apiserver/tests/in_process.h"
#include "tests/testutil/process.h"

namespace ringmaster::local {
namespace {

using testing::call;

constexpr const char* kConfigMaps = "/api/v1/namespaces/default/configmaps";

// A ConfigMap whose `data` holds `depth` nested arrays: ~2 bytes per level.
std::string deepConfigMap(const std::string& name, int depth) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("},"data":)" +
         std::string(depth, '[') + std::string(depth, ']') + "}";
}

TEST(HostileBodies, DeepNestingIs400OnEveryPathThatReadsABody) {
  testutil::TempDir dir;
  auto started = testing::startServer(dir.path());
  ASSERT_TRUE(started.ok()) << started.status().message();
  ApiServer& server = **started;
  auto made = call(server, "POST", kConfigMaps,
                   R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"live"}})");
  ASSERT_EQ(made.status, 201) << made.body;

  const std::string deep = deepConfigMap("live", 100'000);  // 200 KB
  const std::string deep_list = std::string(100'000, '[') + std::string(100'000, ']');
  const std::string live = std::string(kConfigMaps) + "/live";
  struct Case {
    const char* what;
    const char* method;
    std::string url;
    std::string body;
    std::string content_type;
  };
  const Case cases[] = {
      {"create", "POST", kConfigMaps, deepConfigMap("new", 100'000), "application/json"},
      {"replace", "PUT", live, deep, "application/json"},
      {"merge patch", "PATCH", live, deep, "application/merge-patch+json"},
      {"strategic merge patch", "PATCH", live, deep, "application/strategic-merge-patch+json"},
      {"json patch", "PATCH", live, deep_list, "application/json-patch+json"},
      {"server-side apply", "PATCH", live + "?fieldManager=t", deep,
       "application/apply-patch+yaml"},
      {"delete options", "DELETE", live, deep_list, "application/json"},
      {"just past the bound", "POST", kConfigMaps, deepConfigMap("new", 1000), "application/json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto reply = call(server, c.method, c.url, c.body, c.content_type);
    EXPECT_EQ(reply.status, 400) << reply.body.substr(0, 300);
    EXPECT_NE(reply.body.find("\"reason\":\"BadRequest\""), std::string::npos)
        << reply.body.substr(0, 300);
    EXPECT_NE(reply.body.find("nested deeper than 1000 levels"), std::string::npos)
        << reply.body.substr(0, 300);
  }
  // Nothing changed, and the server still answers.
  auto after = call(server, "GET", live);
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.body.find("\"data\""), std::string::npos) << after.body;
  auto fine = call(server, "POST", kConfigMaps,
                   R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"},)"
                   R"("data":{"k":"v"}})");
  EXPECT_EQ(fine.status, 201) << fine.body;
}

}  // namespace
}  // namespace ringmaster::local
