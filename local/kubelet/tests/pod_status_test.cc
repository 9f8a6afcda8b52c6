#include "local/kubelet/pod_status.h"

#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

ContainerView running(const std::string& name, bool ready = true) {
  ContainerView c;
  c.name = name;
  c.state.running = kube::ContainerStateRunning{kube::Time::fromUnixSeconds(100), {}};
  c.ready = ready;
  return c;
}

ContainerView exited(const std::string& name, int code) {
  ContainerView c;
  c.name = name;
  c.state.terminated = kube::ContainerStateTerminated{};
  c.state.terminated->exit_code = code;
  return c;
}

ContainerView waiting(const std::string& name, std::optional<int> last_exit = std::nullopt) {
  ContainerView c;
  c.name = name;
  c.state.waiting = kube::ContainerStateWaiting{};
  if (last_exit) {
    c.last_terminated = kube::ContainerStateTerminated{};
    c.last_terminated->exit_code = *last_exit;
  }
  return c;
}

PodView view(std::string policy, std::vector<ContainerView> containers) {
  PodView v;
  v.restart_policy = std::move(policy);
  v.containers = std::move(containers);
  v.pod_ip = "127.1.0.1";
  v.host_ip = "127.0.0.1";
  v.now = kube::Time::fromUnixSeconds(1000);
  return v;
}

TEST(PodPhase, FollowsTheKubeletRules) {
  EXPECT_EQ(podPhase(view("Never", {waiting("a")})), "Pending");
  EXPECT_EQ(podPhase(view("Never", {running("a"), exited("b", 0)})), "Running");
  EXPECT_EQ(podPhase(view("Never", {exited("a", 0), exited("b", 0)})), "Succeeded");
  EXPECT_EQ(podPhase(view("Never", {exited("a", 0), exited("b", 3)})), "Failed");
  EXPECT_EQ(podPhase(view("OnFailure", {exited("a", 0)})), "Succeeded");
  EXPECT_EQ(podPhase(view("OnFailure", {waiting("a", 1)})), "Running");
  EXPECT_EQ(podPhase(view("Always", {waiting("a", 0)})), "Running");
  EXPECT_EQ(podPhase(view("", {exited("a", 0)})), "Running");
}

TEST(PodPhase, InitContainersGateThePod) {
  PodView v = view("Never", {waiting("main")});
  v.init_containers = {running("init")};
  EXPECT_EQ(podPhase(v), "Pending");
  v.init_containers = {exited("init", 1)};
  EXPECT_EQ(podPhase(v), "Failed");
  v.restart_policy = "OnFailure";
  EXPECT_EQ(podPhase(v), "Pending");
}

TEST(PodPhase, APodTheKubeletRefusedFailsWithItsReason) {
  for (const std::string policy : {"Always", "OnFailure", "Never"}) {
    PodView v = view(policy, {waiting("main")});
    v.ended_reason = "UnsafePath";
    v.ended_message = "spec.volumes[0].name: /r/x is outside /r/pods/ns/p_u/volumes/empty-dir";
    kube::PodStatus s = derivePodStatus(v);
    EXPECT_EQ(s.phase, "Failed") << policy;
    EXPECT_EQ(s.reason, "UnsafePath");
    EXPECT_EQ(s.message, v.ended_message);
  }
  kube::PodStatus normal = derivePodStatus(view("Never", {waiting("main")}));
  EXPECT_EQ(normal.phase, "Pending");
  EXPECT_TRUE(normal.reason.empty());
}

const kube::Condition* find(const kube::PodStatus& s, const std::string& type) {
  for (const auto& c : s.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

TEST(DerivePodStatus, ReadyConditionsAndContainerStatuses) {
  kube::PodStatus s = derivePodStatus(view("Always", {running("a"), running("b", false)}));
  EXPECT_EQ(s.phase, "Running");
  EXPECT_EQ(s.pod_ip, "127.1.0.1");
  EXPECT_EQ(s.extra["podIPs"][0]["ip"], "127.1.0.1");
  EXPECT_EQ(find(s, "PodScheduled")->status, "True");
  EXPECT_EQ(find(s, "Initialized")->status, "True");
  EXPECT_EQ(find(s, "Ready")->status, "False");
  EXPECT_EQ(*find(s, "ContainersReady")->message, "containers with unready status: [b]");
  ASSERT_EQ(s.container_statuses.size(), 2u);
  EXPECT_TRUE(*s.container_statuses[0].ready);
  EXPECT_TRUE(*s.container_statuses[0].started);
  EXPECT_FALSE(*s.container_statuses[1].ready);
}

TEST(DerivePodStatus, TerminatedPodIsNotReadyWithPodCompleted) {
  kube::PodStatus s = derivePodStatus(view("Never", {exited("a", 3)}));
  EXPECT_EQ(s.phase, "Failed");
  EXPECT_EQ(*find(s, "Ready")->reason, "PodCompleted");
  EXPECT_EQ(s.container_statuses[0].state->terminated->exit_code, 3);
  EXPECT_FALSE(*s.container_statuses[0].started);
}

TEST(DerivePodStatus, KeepsTransitionTimesWhileAConditionHolds) {
  PodView v = view("Always", {running("a")});
  kube::PodStatus first = derivePodStatus(v);
  v.previous = first.conditions;
  v.now = kube::Time::fromUnixSeconds(2000);
  kube::PodStatus again = derivePodStatus(v);
  EXPECT_EQ(first, again);  // nothing changed: the caller writes nothing
  v.containers[0].ready = false;
  kube::PodStatus changed = derivePodStatus(v);
  EXPECT_EQ(*find(changed, "Ready")->last_transition_time, kube::Time::fromUnixSeconds(2000));
  EXPECT_EQ(*find(changed, "PodScheduled")->last_transition_time,
            kube::Time::fromUnixSeconds(1000));
}

}  // namespace
}  // namespace ringmaster::local::kubelet
