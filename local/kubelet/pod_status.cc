#include "local/kubelet/pod_status.h"

namespace ringmaster::local::kubelet {
namespace {

bool exitedZero(const ContainerView& c) {
  return c.state.terminated && c.state.terminated->exit_code == 0;
}

// Init containers: all exited 0 -> done; a failed one under Never -> failed.
struct InitState {
  bool done = true;
  bool failed = false;
  std::vector<std::string> pending;
};

InitState initState(const PodView& view) {
  InitState s;
  for (const auto& c : view.init_containers) {
    if (exitedZero(c)) continue;
    s.done = false;
    s.pending.push_back(c.name);
    if (view.restart_policy == "Never" && c.state.terminated) s.failed = true;
  }
  return s;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
  return out + "]";
}

kube::ContainerStatus toStatus(const ContainerView& c) {
  kube::ContainerStatus s;
  s.name = c.name;
  s.image = c.image;
  s.image_id = "";
  if (!c.container_id.empty()) s.container_id = c.container_id;
  s.state = c.state;
  s.last_state = kube::ContainerState{};
  if (c.last_terminated) s.last_state->terminated = c.last_terminated;
  s.ready = c.ready && c.state.running.has_value();
  s.restart_count = c.restart_count;
  s.started = c.state.running.has_value();
  return s;
}

}  // namespace

std::string podPhase(const PodView& view) {
  if (!view.ended_reason.empty()) return "Failed";
  InitState init = initState(view);
  if (init.failed) return "Failed";
  if (!init.done) return "Pending";
  int running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const auto& c : view.containers) {
    if (c.state.running) {
      ++running;
    } else if (c.state.terminated) {
      ++stopped;
      if (c.state.terminated->exit_code == 0) ++succeeded;
    } else if (c.last_terminated) {  // waiting to restart: counts as stopped
      ++stopped;
      if (c.last_terminated->exit_code == 0) ++succeeded;
    } else {
      ++waiting;
    }
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped == 0) return "Pending";
  const std::string& policy = view.restart_policy;
  if (policy.empty() || policy == "Always") return "Running";
  if (stopped == succeeded) return "Succeeded";
  return policy == "OnFailure" ? "Running" : "Failed";
}

void setCondition(std::vector<kube::Condition>& conditions,
                  const std::vector<kube::Condition>& previous, const std::string& type,
                  bool status, const std::string& reason, const std::string& message,
                  const kube::Time& now) {
  kube::Condition c;
  c.type = type;
  c.status = status ? "True" : "False";
  if (!reason.empty()) c.reason = reason;
  if (!message.empty()) c.message = message;
  c.last_probe_time = kube::Time();
  c.last_transition_time = now;
  for (const auto& p : previous) {
    if (p.type == type && p.status == c.status && p.last_transition_time) {
      c.last_transition_time = p.last_transition_time;
    }
  }
  conditions.push_back(std::move(c));
}

kube::PodStatus derivePodStatus(const PodView& view) {
  kube::PodStatus s;
  s.phase = podPhase(view);
  const bool terminal = s.phase == "Succeeded" || s.phase == "Failed";
  InitState init = initState(view);

  std::vector<std::string> unready;
  for (const auto& c : view.containers) {
    if (!(c.ready && c.state.running)) unready.push_back(c.name);
  }
  const bool ready = unready.empty() && !terminal;
  std::string ready_reason, ready_message;
  if (!ready) {
    ready_reason = terminal ? "PodCompleted" : "ContainersNotReady";
    if (!terminal) ready_message = "containers with unready status: " + joined(unready);
  }
  setCondition(s.conditions, view.previous, "PodReadyToStartContainers", !view.pod_ip.empty(), "",
               "", view.now);
  setCondition(s.conditions, view.previous, "Initialized", init.done,
               init.done ? "" : "ContainersNotInitialized",
               init.done ? "" : "containers with incomplete status: " + joined(init.pending),
               view.now);
  setCondition(s.conditions, view.previous, "Ready", ready, ready_reason, ready_message, view.now);
  setCondition(s.conditions, view.previous, "ContainersReady", ready, ready_reason, ready_message,
               view.now);
  setCondition(s.conditions, view.previous, "PodScheduled", true, "", "", view.now);

  s.host_ip = view.host_ip;
  s.pod_ip = view.pod_ip;
  if (!view.host_ip.empty()) s.extra["hostIPs"] = nlohmann::json::array({{{"ip", view.host_ip}}});
  if (!view.pod_ip.empty()) s.extra["podIPs"] = nlohmann::json::array({{{"ip", view.pod_ip}}});
  s.start_time = view.start_time;
  s.reason = view.ended_reason;
  s.message = view.ended_message;
  for (const auto& c : view.init_containers) s.init_container_statuses.push_back(toStatus(c));
  for (const auto& c : view.containers) s.container_statuses.push_back(toStatus(c));
  return s;
}

}  // namespace ringmaster::local::kubelet
