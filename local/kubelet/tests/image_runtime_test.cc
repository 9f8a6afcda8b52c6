#include "local/kubelet/image_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

namespace ringmaster::local::kubelet {
namespace {

// Whether `argv` holds `flag` followed by `value`.
bool hasPair(const std::vector<std::string>& argv, const std::string& flag,
             const std::string& value) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag && argv[i + 1] == value) return true;
  return false;
}
bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

ImageRun baseRun() {
  ImageRun run;
  run.podman = "/usr/bin/podman";
  run.containers_conf = "/etc/rm/containers.conf";
  run.name = containerName("uid-1", "main");
  run.pod_uid = "uid-1";
  run.kubelet_root = "/var/lib/rm-kubelet";
  run.image = "ringmaster/trainer-cpu:0.1.0";
  run.env = {{"RANK", "0"}, {"TF_CONFIG", "{\"a\": 1}"}, {"MULTI", "line1\nline2"}};
  run.env_file = "/pods/p/main.env";
  run.log_path = "/pods/p/main.log";
  run.session_file = "/pods/p/main.pid";
  return run;
}

TEST(ImageRuntime, PodmanRunsTheImageInTheForegroundWithThePodsNetworkAndFiles) {
  ImageRun run = baseRun();
  run.netns = "/run/netns/rm-1";
  run.hostname = "job-worker-0";
  run.command = {"python3", "-m", "torch.distributed.run"};
  run.args = {"train.py", "--lr=0.1"};
  run.mounts = {{"/pods/p/volumes/cfg", "/app", true}, {"/pods/p/etc-hosts", "/etc/hosts", false}};
  run.working_dir = "/app";
  const LaunchSpec spec = podmanLaunchSpec(run);
  const auto& a = spec.argv;
  EXPECT_EQ(spec.executable, "/usr/bin/podman");
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 3),
            (std::vector<std::string>{"/usr/bin/podman", "run", "--rm"}));
  EXPECT_TRUE(hasPair(a, "--name", "rm-uid-1-main"));
  EXPECT_TRUE(hasPair(a, "--label", "local.ringmaster.dev/pod-uid=uid-1"));
  EXPECT_TRUE(hasPair(a, "--label", "local.ringmaster.dev/kubelet-root=/var/lib/rm-kubelet"))
      << "another kubelet of the host leaves it alone";
  EXPECT_TRUE(hasPair(a, "--network", "ns:/run/netns/rm-1"));
  EXPECT_TRUE(hasPair(a, "--hostname", "job-worker-0"));
  EXPECT_TRUE(has(a, "--no-hosts")) << "the kubelet's /etc/hosts, not podman's";
  EXPECT_TRUE(hasPair(a, "--pull", "never")) << "no registry: a missing image fails at once";
  EXPECT_TRUE(hasPair(a, "--volume", "/pods/p/volumes/cfg:/app:ro"));
  EXPECT_TRUE(hasPair(a, "--volume", "/pods/p/etc-hosts:/etc/hosts:rw"));
  EXPECT_TRUE(hasPair(a, "--workdir", "/app"));
  EXPECT_TRUE(hasPair(a, "--env-file", "/pods/p/main.env"));
  EXPECT_TRUE(hasPair(a, "--entrypoint", R"(["python3","-m","torch.distributed.run"])"));
  // The image, then the args, last.
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(a.end() - 3, a.end()),
            (std::vector<std::string>{"ringmaster/trainer-cpu:0.1.0", "train.py", "--lr=0.1"}));
  // Values stay off the command line but for one a file cannot hold; podman's own environment
  // is PATH and CONTAINERS_CONF only.
  EXPECT_FALSE(has(a, "RANK=0"));
  EXPECT_TRUE(hasPair(a, "--env", "MULTI=line1\nline2"));
  EXPECT_EQ(spec.env,
            (EnvList{{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                     {"CONTAINERS_CONF", "/etc/rm/containers.conf"}}));
  EXPECT_EQ(spec.log_path, "/pods/p/main.log");
  EXPECT_EQ(spec.session_file, "/pods/p/main.pid");
  EXPECT_TRUE(spec.netns.empty() && spec.hostname.empty() && spec.mounts.empty())
      << "podman does those, not the process launcher";
}

TEST(ImageRuntime, WithoutANetworkNamespaceTheContainerSharesTheHosts) {
  ImageRun run = baseRun();
  run.hostname = "ignored";
  const auto a = podmanLaunchSpec(run).argv;
  EXPECT_TRUE(hasPair(a, "--network", "host"));
  EXPECT_FALSE(has(a, "--hostname"));
  EXPECT_FALSE(has(a, "--entrypoint")) << "no command: the image's entrypoint";
  EXPECT_EQ(a.back(), "ringmaster/trainer-cpu:0.1.0");
}

TEST(ImageRuntime, EnvFileHoldsEveryValueWithoutALineBreak) {
  EXPECT_EQ(envFileText({{"A", "1"}, {"B", "two words"}, {"C", "x\ny"}, {"D", ""}}),
            "A=1\nB=two words\nD=\n");
}

TEST(ImageRuntime, SecurityContextBecomesPodmansFlagsTheContainersOverThePods) {
  struct Row {
    const char* what;
    kube::PodSecurityContext pod;
    kube::SecurityContext container;
    std::vector<std::pair<std::string, std::string>> pairs;  // flag, value
    std::vector<std::string> flags;
    std::vector<std::string> absent;
  };
  kube::PodSecurityContext pod_user;
  pod_user.run_as_user = 1000;
  pod_user.run_as_group = 1000;
  pod_user.fs_group = 2000;
  pod_user.supplemental_groups = {3000};
  kube::SecurityContext container_user;
  container_user.run_as_user = 1234;
  container_user.read_only_root_filesystem = true;
  container_user.allow_privilege_escalation = false;
  container_user.capabilities = kube::Capabilities{{"NET_BIND_SERVICE"}, {"ALL"}, {}};
  kube::SecurityContext privileged;
  privileged.privileged = true;
  privileged.allow_privilege_escalation = false;
  const Row rows[] = {
      {"the pod's user, groups and fsGroup",
       pod_user,
       {},
       {{"--user", "1000:1000"}, {"--group-add", "2000"}, {"--group-add", "3000"}},
       {},
       {"--read-only", "--privileged"}},
      {"the container's user wins; read-only root, no escalation, capabilities",
       pod_user,
       container_user,
       {{"--user", "1234:1000"},
        {"--security-opt", "no-new-privileges"},
        {"--cap-drop", "ALL"},
        {"--cap-add", "NET_BIND_SERVICE"}},
       {"--read-only"},
       {}},
      {"privileged: no no-new-privileges",
       {},
       privileged,
       {},
       {"--privileged"},
       {"--security-opt", "--user"}},
  };
  for (const Row& row : rows) {
    kube::PodSpec pod;
    pod.security_context = row.pod;
    kube::Container container;
    container.name = "main";
    container.security_context = row.container;
    ImageRun run = baseRun();
    applySecurityContext(pod, container, "/kubelet/seccomp", run);
    const auto a = podmanLaunchSpec(run).argv;
    for (const auto& [flag, value] : row.pairs)
      EXPECT_TRUE(hasPair(a, flag, value)) << row.what << ": " << flag << " " << value;
    for (const auto& flag : row.flags) EXPECT_TRUE(has(a, flag)) << row.what << ": " << flag;
    for (const auto& flag : row.absent) EXPECT_FALSE(has(a, flag)) << row.what << ": " << flag;
  }
}

TEST(ImageRuntime, SeccompFollowsTheProfileTypeAsAKubeletWithoutSeccompDefault) {
  struct Row {
    std::optional<std::string> pod_type, container_type;
    std::string want;  // the --security-opt seccomp= value, "" none
  };
  const Row rows[] = {
      {std::nullopt, std::nullopt, "seccomp=unconfined"},
      {"RuntimeDefault", std::nullopt, ""},
      {"RuntimeDefault", "Unconfined", "seccomp=unconfined"},
      {"Unconfined", "RuntimeDefault", ""},
      {std::nullopt, "Localhost", "seccomp=/kubelet/seccomp/profiles/audit.json"},
  };
  for (const Row& row : rows) {
    kube::PodSpec pod;
    if (row.pod_type) {
      pod.security_context = kube::PodSecurityContext{};
      pod.security_context->seccomp_profile = kube::SeccompProfile{*row.pod_type, {}, {}};
    }
    kube::Container container;
    if (row.container_type) {
      container.security_context = kube::SecurityContext{};
      container.security_context->seccomp_profile =
          kube::SeccompProfile{*row.container_type, "profiles/audit.json", {}};
    }
    ImageRun run = baseRun();
    applySecurityContext(pod, container, "/kubelet/seccomp", run);
    const auto a = podmanLaunchSpec(run).argv;
    std::string got;
    for (size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == "--security-opt" && a[i + 1].rfind("seccomp=", 0) == 0) got = a[i + 1];
    EXPECT_EQ(got, row.want) << row.pod_type.value_or("-") << "/"
                             << row.container_type.value_or("-");
  }
}

TEST(ImageRuntime, RunAsNonRootNeedsANonZeroUidFromTheSpecOrTheImage) {
  struct Row {
    std::optional<bool> pod_non_root, container_non_root;
    std::optional<int64_t> run_as_user;
    std::string image_user;
    std::string error;  // "" allowed, else a part of the message
  };
  const Row rows[] = {
      {std::nullopt, std::nullopt, std::nullopt, "", ""},
      {true, std::nullopt, std::nullopt, "", "image will run as root"},
      {true, std::nullopt, std::nullopt, "0:0", "image will run as root"},
      {true, std::nullopt, std::nullopt, "root", "image will run as root"},
      {true, std::nullopt, std::nullopt, "1000:1000", ""},
      {true, std::nullopt, std::nullopt, "ringmaster", "non-numeric user"},
      {true, std::nullopt, 0, "1000", "runAsUser breaks non-root policy"},
      {true, std::nullopt, 1000, "", ""},
      {true, false, std::nullopt, "", ""},  // the container's false wins
      {std::nullopt, true, std::nullopt, "", "image will run as root"},
  };
  for (const Row& row : rows) {
    kube::PodSpec pod;
    if (row.pod_non_root) pod.security_context = kube::PodSecurityContext{};
    if (row.pod_non_root) pod.security_context->run_as_non_root = row.pod_non_root;
    kube::Container container;
    container.name = "main";
    if (row.container_non_root) {
      container.security_context = kube::SecurityContext{};
      container.security_context->run_as_non_root = row.container_non_root;
    }
    ImageRun run = baseRun();
    run.run_as_user = row.run_as_user;
    const std::string error = imageRunError(pod, container, run, row.image_user);
    if (row.error.empty()) {
      EXPECT_EQ(error, "") << row.image_user;
    } else {
      EXPECT_NE(error.find(row.error), std::string::npos) << row.image_user << ": " << error;
      EXPECT_NE(error.find("container: main"), std::string::npos) << error;
    }
  }
}

TEST(ImageRuntime, ParsesTheRuntimeFlag) {
  EXPECT_EQ(*parseContainerEngine("host"), ContainerEngine::kHost);
  EXPECT_EQ(*parseContainerEngine("podman"), ContainerEngine::kPodman);
  EXPECT_EQ(*parseContainerEngine("auto"), ContainerEngine::kAuto);
  EXPECT_FALSE(parseContainerEngine("docker").ok());
}

TEST(ImageRuntime, AutoChoosesPodmanWhereItWorksAndAnExplicitPodmanMustWork) {
  using E = ContainerEngine;
  struct Row {
    E requested;
    bool simulate;
    std::string podman, probe_error;
    std::optional<E> chosen;  // nullopt: an error
    std::string words;        // in the reason or the error
  };
  const std::string p = "/usr/bin/podman";
  const std::vector<Row> rows = {
      {E::kHost, false, p, "", E::kHost, "asked for"},
      {E::kHost, true, "", "", E::kHost, "asked for"},
      {E::kPodman, false, p, "", E::kPodman, "asked for"},
      {E::kPodman, false, "", "", std::nullopt, "not on PATH"},
      {E::kPodman, false, p, "runc: not found", std::nullopt, "runc: not found"},
      {E::kPodman, true, p, "", std::nullopt, "--simulate"},
      {E::kAuto, false, p, "", E::kPodman, "podman works here"},
      {E::kAuto, false, "", "", E::kHost, "not on PATH"},
      {E::kAuto, false, p, "cannot set up cgroups", E::kHost, "cannot set up cgroups"},
      {E::kAuto, true, p, "", E::kHost, "simulated"},
  };
  for (const Row& row : rows) {
    const auto choice =
        chooseContainerEngine(row.requested, row.simulate, row.podman, row.probe_error);
    const std::string label = "requested " + std::to_string(static_cast<int>(row.requested)) +
                              " podman '" + row.podman + "' probe '" + row.probe_error + "'";
    ASSERT_EQ(choice.ok(), row.chosen.has_value()) << label;
    if (choice.ok()) {
      EXPECT_EQ(choice->engine, *row.chosen) << label;
      EXPECT_NE(choice->reason.find(row.words), std::string::npos)
          << label << ": " << choice->reason;
    } else {
      EXPECT_NE(choice.status().message().find(row.words), std::string::npos)
          << label << ": " << choice.status().message();
    }
  }
}

}  // namespace
}  // namespace ringmaster::local::kubelet
