#include "local/kubelet/pod_env.h"

#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

const std::string* noVars(const std::string&) { return nullptr; }

TEST(ExpandVars, ReplacesKnownAndKeepsUnknownAndEscapes) {
  std::string a = "x";
  auto lookup = [&](const std::string& n) -> const std::string* { return n == "A" ? &a : nullptr; };
  EXPECT_EQ(expandVars("$(A)-$(B)-$$(A)-$A-$(", lookup), "x-$(B)-$(A)-$A-$(");
  EXPECT_EQ(expandVars("plain", noVars), "plain");
  EXPECT_EQ(expandVars("$$", noVars), "$");
}

kube::Pod pod() {
  kube::Pod p;
  p.metadata.name = "web-0";
  p.metadata.namespace_name = "ns1";
  p.metadata.uid = "u-1";
  p.metadata.labels["app"] = "web";
  p.spec.node_name = "local";
  return p;
}

kube::EnvVar fieldVar(const std::string& name, const std::string& path) {
  kube::EnvVar v;
  v.name = name;
  v.value_from = kube::EnvVarSource{};
  v.value_from->field_ref = kube::ObjectFieldSelector{std::nullopt, path, {}};
  return v;
}

TEST(ContainerEnv, ResolvesFieldRefsKeyRefsAndExpansionInOrder) {
  kube::Container c;
  c.name = "main";
  c.env.push_back(fieldVar("POD_IP", "status.podIP"));
  c.env.push_back(fieldVar("NAME", "metadata.name"));
  c.env.push_back(fieldVar("NS", "metadata.namespace"));
  c.env.push_back(fieldVar("UID", "metadata.uid"));
  c.env.push_back(fieldVar("NODE", "spec.nodeName"));
  c.env.push_back(fieldVar("HOST", "status.hostIP"));
  c.env.push_back(fieldVar("APP", "metadata.labels['app']"));
  c.env.push_back({"ADDR", std::string("$(POD_IP):$(PORT)"), std::nullopt, {}});
  c.env.push_back({"PORT", std::string("80"), std::nullopt, {}});
  kube::EnvVar cm{"FROM_CM", std::nullopt, kube::EnvVarSource{}, {}};
  cm.value_from->config_map_key_ref = kube::KeySelector{"cfg", "k", std::nullopt, {}};
  c.env.push_back(cm);
  kube::EnvVar sec{"FROM_SECRET", std::nullopt, kube::EnvVarSource{}, {}};
  sec.value_from->secret_key_ref = kube::KeySelector{"s", "pw", std::nullopt, {}};
  c.env.push_back(sec);
  c.env.push_back({"PATH", std::string("/custom"), std::nullopt, {}});
  KeyLookup lookup = [](bool secret, const std::string& name,
                        const std::string& key) -> core::Result<std::optional<std::string>> {
    if (!secret && name == "cfg" && key == "k") return std::optional<std::string>("v");
    if (secret && name == "s" && key == "pw") return std::optional<std::string>("hunter2");
    return std::optional<std::string>();
  };
  EnvList base = {{"PATH", "/bin"}, {"HOME", "/root"}};
  auto env = containerEnv(pod(), c, {"127.1.0.7", "127.0.0.1", "local"}, base, lookup);
  ASSERT_TRUE(env.ok()) << env.status().toString();
  auto get = [&](const std::string& n) { return *findEnv(*env, n); };
  EXPECT_EQ(get("POD_IP"), "127.1.0.7");
  EXPECT_EQ(get("NAME"), "web-0");
  EXPECT_EQ(get("NS"), "ns1");
  EXPECT_EQ(get("UID"), "u-1");
  EXPECT_EQ(get("NODE"), "local");
  EXPECT_EQ(get("HOST"), "127.0.0.1");
  EXPECT_EQ(get("APP"), "web");
  EXPECT_EQ(get("ADDR"), "127.1.0.7:$(PORT)");  // PORT is defined later: left as written
  EXPECT_EQ(get("FROM_CM"), "v");
  EXPECT_EQ(get("FROM_SECRET"), "hunter2");
  EXPECT_EQ(get("PATH"), "/custom");
  EXPECT_EQ(env->front().first, "PATH");  // replaced in place
}

TEST(ContainerEnv, MissingKeyFailsUnlessOptional) {
  kube::Container c;
  c.name = "main";
  kube::EnvVar cm{"X", std::nullopt, kube::EnvVarSource{}, {}};
  cm.value_from->config_map_key_ref = kube::KeySelector{"cfg", "missing", std::nullopt, {}};
  c.env.push_back(cm);
  KeyLookup none = [](bool, const std::string&,
                      const std::string&) -> core::Result<std::optional<std::string>> {
    return std::optional<std::string>();
  };
  auto env = containerEnv(pod(), c, {}, {}, none);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("\"cfg\""), std::string::npos) << env.status().toString();
  c.env[0].value_from->config_map_key_ref->optional = true;
  auto ok = containerEnv(pod(), c, {}, {}, none);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(findEnv(*ok, "X"), nullptr);
}

TEST(ContainerEnv, UnsupportedFieldRefNamesTheVariable) {
  kube::Container c;
  c.name = "main";
  c.env.push_back(fieldVar("BAD", "spec.nope"));
  auto env = containerEnv(pod(), c, {}, {}, {});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("BAD"), std::string::npos);
}

TEST(DownwardApiValue, LabelsAndAnnotationsAreSortedQuotedLines) {
  kube::Pod pod;
  pod.metadata.name = "p";
  pod.metadata.labels = {{"b", "two"}, {"a", "say \"hi\"\n"}};
  const PodFacts facts{"127.1.0.1", "127.0.0.1", "local"};
  EXPECT_EQ(*downwardApiValue(pod, "metadata.labels", facts), "a=\"say \\\"hi\\\"\\n\"\nb=\"two\"");
  EXPECT_EQ(*downwardApiValue(pod, "metadata.annotations", facts), "");
  EXPECT_EQ(*downwardApiValue(pod, "metadata.name", facts), "p");
  EXPECT_EQ(*downwardApiValue(pod, "status.podIP", facts), "127.1.0.1");
  EXPECT_FALSE(downwardApiValue(pod, "spec.nodeSelector", facts).ok());
}

TEST(ContainerArgv, ExpandsCommandAndArgs) {
  kube::Container c;
  c.command = {"echo", "$(WHO)"};
  c.args = {"$$(WHO)", "$(NOPE)"};
  EXPECT_EQ(containerArgv(c, {{"WHO", "me"}}),
            (std::vector<std::string>{"echo", "me", "$(WHO)", "$(NOPE)"}));
}

TEST(BaseEnv, PutsSelfDirFirstAndPreloadsNssWrapperForSanitizers) {
  BaseEnvOptions o;
  o.self_dir = "/build/bin";
  o.inherited_path = "/usr/bin:/bin";
  o.home = "/home/x";
  o.passthrough = {{"ASAN_OPTIONS", "detect_leaks=1"}};
  o.nss_wrapper_library = "/lib/libnss_wrapper.so";
  o.hosts_file = "/r/hosts";
  EnvList env = baseEnv(o);
  EXPECT_EQ(*findEnv(env, "PATH"), "/build/bin:/usr/bin:/bin");
  EXPECT_EQ(*findEnv(env, "LD_PRELOAD"), "/lib/libnss_wrapper.so");
  EXPECT_EQ(*findEnv(env, "NSS_WRAPPER_HOSTS"), "/r/hosts");
  EXPECT_EQ(*findEnv(env, "NSS_WRAPPER_MAX_HOSTENTS"), "32768");
  EXPECT_EQ(*findEnv(env, "ASAN_OPTIONS"), "detect_leaks=1:verify_asan_link_order=0");
  o.nss_wrapper_library.clear();
  EnvList plain = baseEnv(o);
  EXPECT_EQ(findEnv(plain, "LD_PRELOAD"), nullptr);
  EXPECT_EQ(*findEnv(plain, "ASAN_OPTIONS"), "detect_leaks=1");
}

TEST(BaseEnv, PathIsAnImagesNotTheCallersByDefault) {
  // `python3` in a pod is the image's (Debian's /usr/bin/python3), never one the user who
  // started the kubelet has first on their PATH (a virtualenv, pyenv).
  BaseEnvOptions o;
  o.self_dir = "/build/bin";
  EXPECT_EQ(*findEnv(baseEnv(o), "PATH"),
            "/build/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
}

TEST(ResolveExecutable, SearchesPathInOrder) {
  EXPECT_EQ(resolveExecutable("sh", "/nonexistent:/bin:/usr/bin"), "/bin/sh");
  EXPECT_EQ(resolveExecutable("no-such-program-xyz", "/bin:/usr/bin"), "");
  EXPECT_EQ(resolveExecutable("./rel/prog", "/bin"), "./rel/prog");
}

TEST(ApiServerEnv, PodsInTheirOwnNetworkReachALoopbackServerThroughTheGateway) {
  struct Case {
    const char* url;
    bool own_netns;
    const char* host;
    const char* port;
  };
  const Case cases[] = {
      {"https://127.0.0.1:6443", true, "10.244.0.1", "6443"},
      {"https://127.0.0.1:6443", false, "127.0.0.1", "6443"},
      {"https://localhost:8443/", true, "10.244.0.1", "8443"},
      {"https://[::1]:7443", true, "10.244.0.1", "7443"},
      {"https://10.0.0.5:6443", true, "10.0.0.5", "6443"},
      {"https://api.example.com", true, "api.example.com", "443"},
  };
  for (const auto& c : cases) {
    const EnvList env = apiServerEnv(c.url, c.own_netns, "10.244.0.1");
    ASSERT_EQ(env.size(), 2u) << c.url;
    EXPECT_EQ(*findEnv(env, "KUBERNETES_SERVICE_HOST"), c.host) << c.url;
    EXPECT_EQ(*findEnv(env, "KUBERNETES_SERVICE_PORT"), c.port) << c.url;
  }
  EXPECT_TRUE(apiServerEnv("", true, "10.244.0.1").empty());
  EXPECT_TRUE(apiServerEnv("https://", true, "10.244.0.1").empty());
}

TEST(GatewayOf, IsTheFirstHostAddress) {
  EXPECT_EQ(gatewayOf("10.244.0.0/16"), "10.244.0.1");
  EXPECT_EQ(gatewayOf("10.244.7.9/16"), "10.244.0.1");
  EXPECT_EQ(gatewayOf("192.168.5.0/24"), "192.168.5.1");
  EXPECT_EQ(gatewayOf("10.244.0.0"), "");
  EXPECT_EQ(gatewayOf("banana/16"), "");
  EXPECT_EQ(gatewayOf("10.0.0.0/32"), "");
}

TEST(ImageEntrypoint, KnowsTheProjectsImagesByRepository) {
  struct Case {
    const char* image;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"ringmaster/operator:0.1.0", {"ringmaster-operator"}},
      {"ghcr.io/acme/ringmaster/operator@sha256:abc", {"ringmaster-operator"}},
      {"localhost:5000/ringmaster/trainer:dev", {"ringmaster-launcher"}},
      {"ringmaster/trainer", {"ringmaster-launcher"}},
      {"evil-ringmaster/operator:1", {}},
      {"ringmaster/operator-extra:1", {}},
      {"busybox:1.36", {}},
  };
  for (const auto& c : cases) EXPECT_EQ(imageEntrypoint(c.image), c.want) << c.image;
}

TEST(ContainerArgv, WithoutACommandRunsTheImagesEntrypointWithTheArgs) {
  kube::Container c;
  c.image = "ringmaster/operator:0.1.0";
  c.args = {"--metrics-port=$(PORT)"};
  EXPECT_EQ(containerArgv(c, {{"PORT", "8080"}}),
            (std::vector<std::string>{"ringmaster-operator", "--metrics-port=8080"}));
  c.image = "busybox";
  EXPECT_EQ(containerArgv(c, {}), (std::vector<std::string>{"--metrics-port=$(PORT)"}));
}

}  // namespace
}  // namespace ringmaster::local::kubelet
