#include "local/kubelet/image_runtime.h"

#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace ringmaster::local::kubelet {

core::Result<ContainerEngine> parseContainerEngine(const std::string& text) {
  if (text == "host") return ContainerEngine::kHost;
  if (text == "podman") return ContainerEngine::kPodman;
  if (text == "auto") return ContainerEngine::kAuto;
  return core::usageError("--container-runtime: '" + text + "' is not host, podman or auto");
}

core::Result<EngineChoice> chooseContainerEngine(ContainerEngine requested, bool simulate,
                                                 const std::string& podman,
                                                 const std::string& probe_error) {
  if (requested == ContainerEngine::kHost) return EngineChoice{requested, "asked for"};
  if (requested == ContainerEngine::kPodman) {
    if (simulate) {
      return core::usageError("--container-runtime podman and --simulate exclude each other");
    }
    if (podman.empty())
      return core::usageError("--container-runtime podman: podman is not on PATH");
    if (!probe_error.empty()) {
      return core::unavailable("--container-runtime podman: podman does not work here: " +
                               probe_error);
    }
    return EngineChoice{requested, "asked for"};
  }
  if (simulate) return EngineChoice{ContainerEngine::kHost, "auto: simulated pods start nothing"};
  if (podman.empty()) return EngineChoice{ContainerEngine::kHost, "auto: podman is not on PATH"};
  if (!probe_error.empty()) {
    return EngineChoice{ContainerEngine::kHost, "auto: podman does not work here: " + probe_error};
  }
  return EngineChoice{ContainerEngine::kPodman, "auto: podman works here (" + podman + ")"};
}

std::string containerName(const std::string& pod_uid, const std::string& container) {
  return "rm-" + pod_uid + "-" + container;
}

void applySecurityContext(const kube::PodSpec& pod, const kube::Container& container,
                          const std::string& seccomp_dir, ImageRun& run) {
  std::optional<kube::SeccompProfile> seccomp;
  if (pod.security_context) seccomp = pod.security_context->seccomp_profile;
  if (container.security_context && container.security_context->seccomp_profile) {
    seccomp = container.security_context->seccomp_profile;
  }
  run.seccomp = "unconfined";
  if (seccomp && seccomp->type == "RuntimeDefault") run.seccomp = "";
  if (seccomp && seccomp->type == "Localhost") {
    run.seccomp = seccomp_dir + "/" + seccomp->localhost_profile.value_or("");
  }
  if (const auto& p = pod.security_context) {
    run.run_as_user = p->run_as_user;
    run.run_as_group = p->run_as_group;
    if (p->fs_group) run.extra_groups.push_back(*p->fs_group);
    run.extra_groups.insert(run.extra_groups.end(), p->supplemental_groups.begin(),
                            p->supplemental_groups.end());
  }
  if (const auto& c = container.security_context) {
    if (c->run_as_user) run.run_as_user = c->run_as_user;
    if (c->run_as_group) run.run_as_group = c->run_as_group;
    run.read_only_root = c->read_only_root_filesystem.value_or(false);
    run.privileged = c->privileged.value_or(false);
    run.no_new_privileges = c->allow_privilege_escalation.has_value() &&
                            !*c->allow_privilege_escalation && !run.privileged;
    if (c->capabilities) {
      run.cap_add = c->capabilities->add;
      run.cap_drop = c->capabilities->drop;
    }
  }
}

bool runsAsNonRoot(const kube::PodSpec& pod, const kube::Container& container) {
  if (container.security_context && container.security_context->run_as_non_root) {
    return *container.security_context->run_as_non_root;
  }
  return pod.security_context && pod.security_context->run_as_non_root.value_or(false);
}

std::string imageRunError(const kube::PodSpec& pod, const kube::Container& container,
                          const ImageRun& run, const std::string& image_user) {
  if (!runsAsNonRoot(pod, container)) return "";
  if (run.run_as_user) {
    return *run.run_as_user == 0
               ? "container's runAsUser breaks non-root policy (container: " + container.name + ")"
               : "";
  }
  // The image's USER: "uid", "uid:gid", or a name, which cannot be checked without its passwd.
  const std::string user = image_user.substr(0, image_user.find(':'));
  if (user.empty() || user == "0" || user == "root") {
    return "container has runAsNonRoot and image will run as root (container: " + container.name +
           ")";
  }
  if (user.find_first_not_of("0123456789") != std::string::npos) {
    return "container has runAsNonRoot and image has non-numeric user (" + user +
           "), cannot verify user is non-root (container: " + container.name + ")";
  }
  return "";
}

std::string envFileText(const EnvList& env) {
  std::string text;
  for (const auto& [name, value] : env) {
    if (value.find_first_of("\r\n") != std::string::npos) continue;
    text += name + "=" + value + "\n";
  }
  return text;
}

namespace {

// podman's own environment: where its helpers (conmon, runc) are, and its settings.
EnvList podmanEnv(const std::string& containers_conf) {
  EnvList env = {{"PATH", kImagePath}};
  if (!containers_conf.empty()) env.emplace_back("CONTAINERS_CONF", containers_conf);
  return env;
}

}  // namespace

LaunchSpec podmanLaunchSpec(const ImageRun& run) {
  LaunchSpec spec;
  spec.executable = run.podman;
  std::vector<std::string>& a = spec.argv;
  a = {run.podman, "run", "--rm", "--name", run.name, "--label",
       std::string(kPodUidLabel) + "=" + run.pod_uid, "--label",
       std::string(kKubeletRootLabel) + "=" + run.kubelet_root,
       // The kubelet writes the pod's /etc/hosts and resolv.conf (mounts below).
       "--no-hosts", "--pull", "never", "--log-driver", "none"};
  if (!run.conmon_pidfile.empty()) a.insert(a.end(), {"--conmon-pidfile", run.conmon_pidfile});
  if (run.netns.empty()) {
    a.insert(a.end(), {"--network", "host"});
  } else {
    a.insert(a.end(), {"--network", "ns:" + run.netns});
    if (!run.hostname.empty()) a.insert(a.end(), {"--hostname", run.hostname});
  }
  if (!run.env_file.empty()) a.insert(a.end(), {"--env-file", run.env_file});
  for (const auto& [name, value] : run.env) {
    if (value.find_first_of("\r\n") != std::string::npos)
      a.insert(a.end(), {"--env", name + "=" + value});
  }
  for (const Mount& m : run.mounts) {
    a.insert(a.end(), {"--volume", m.source + ":" + m.target + (m.read_only ? ":ro" : ":rw")});
  }
  if (!run.working_dir.empty()) a.insert(a.end(), {"--workdir", run.working_dir});
  if (run.run_as_user) {
    std::string user = std::to_string(*run.run_as_user);
    if (run.run_as_group) {
      user += ':';
      user += std::to_string(*run.run_as_group);
    }
    a.insert(a.end(), {"--user", user});
  } else if (run.run_as_group) {
    // A group without a user: podman's --user needs the user, which only the image knows, so
    // the group is added to the image user's groups instead of replacing its primary one.
    a.insert(a.end(), {"--group-add", std::to_string(*run.run_as_group)});
  }
  for (int64_t g : run.extra_groups) a.insert(a.end(), {"--group-add", std::to_string(g)});
  if (run.read_only_root) a.push_back("--read-only");
  if (run.privileged) a.push_back("--privileged");
  if (run.no_new_privileges) a.insert(a.end(), {"--security-opt", "no-new-privileges"});
  if (!run.seccomp.empty() && !run.privileged) {
    a.insert(a.end(), {"--security-opt", "seccomp=" + run.seccomp});
  }
  for (const auto& c : run.cap_drop) a.insert(a.end(), {"--cap-drop", c});
  for (const auto& c : run.cap_add) a.insert(a.end(), {"--cap-add", c});
  if (!run.command.empty()) {
    // The JSON form: the whole command is the entrypoint, with no shell in between.
    a.insert(a.end(), {"--entrypoint", nlohmann::json(run.command).dump()});
  }
  a.push_back(run.image);
  a.insert(a.end(), run.args.begin(), run.args.end());
  spec.env = podmanEnv(run.containers_conf);
  spec.log_path = run.log_path;
  spec.session_file = run.session_file;
  return spec;
}

core::Result<std::string> runPodman(const std::string& podman, const std::string& containers_conf,
                                    const std::vector<std::string>& args,
                                    const std::string& output_file, std::chrono::seconds limit) {
  LaunchSpec spec;
  spec.executable = podman;
  spec.argv = {podman};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = podmanEnv(containers_conf);
  spec.log_path = output_file;
  { std::ofstream truncate(output_file, std::ios::trunc); }
  RM_ASSIGN_OR_RETURN(pid_t pid, launch(spec));
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<ExitInfo> exit;
  while (!(exit = reap(pid))) {
    if (std::chrono::steady_clock::now() > deadline) {
      signalGroup(pid, SIGKILL);
      while (!(exit = reap(pid))) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ifstream in(output_file);
  std::stringstream text;
  text << in.rdbuf();
  std::string out = text.str();
  if (exit->exit_code != 0) {
    std::string command = "podman";
    for (const auto& a : args) command += " " + a;
    return core::unavailable(command + " exited " + std::to_string(exit->exit_code) + ": " +
                             (out.size() > 500 ? out.substr(out.size() - 500) : out));
  }
  return out;
}

}  // namespace ringmaster::local::kubelet
