// The pod networks as the kubelet uses them. The cni network needs root and the CNI plugins:
// without them its tests skip, saying which is missing.
#include "local/kubelet/pod_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "local/kubelet/process_launcher.h"
#include "local/kubelet/tests/temp_dir.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

TEST(PodNetwork, ModesParseAndOthersAreRefused) {
  EXPECT_EQ(*parsePodNetworkMode("auto"), PodNetworkMode::kAuto);
  EXPECT_EQ(*parsePodNetworkMode("cni"), PodNetworkMode::kCni);
  EXPECT_EQ(*parsePodNetworkMode("loopback"), PodNetworkMode::kLoopback);
  EXPECT_FALSE(parsePodNetworkMode("host").ok());
}

TEST(PodNetwork, LoopbackGivesEachPodItsOwnHostAddress) {
  std::unique_ptr<PodNetwork> network = makeLoopbackNetwork();
  core::Result<PodAddress> a = network->attach("a");
  core::Result<PodAddress> b = network->attach("b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->ip, b->ip);
  EXPECT_EQ(a->ip.rfind("127.1.", 0), 0u) << a->ip;
  EXPECT_EQ(a->netns, "");
  network->detach("a", a->ip);
  network->detach("b", b->ip);
}

// A listening socket on ip:port inside the network namespace `netns`, made on a thread that
// entered it (setns moves only the calling thread); the fd, or -1.
int listenInside(const std::string& netns, const std::string& ip) {
  return std::async(std::launch::async,
                    [&] {
                      const int ns = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
                      if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) return -1;
                      close(ns);
                      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                      sockaddr_in addr{};
                      addr.sin_family = AF_INET;
                      addr.sin_port = htons(7077);
                      inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
                      if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
                          listen(fd, 4) != 0) {
                        close(fd);
                        return -1;
                      }
                      return fd;
                    })
      .get();
}

// The words one connection sent, read through to its end.
std::string readOne(int listener) {
  const int c = accept(listener, nullptr, nullptr);
  if (c < 0) return "";
  std::string got;
  char buf[64];
  for (ssize_t n; (n = read(c, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(c);
  return got;
}

// A test's own bridge and /24 (`octet` keeps the tests apart), under `dir`.
CniOptions testCniOptions(const fs::path& dir, int octet, const std::string& kubelet = "state") {
  CniOptions options;
  options.bridge = "rmt" + std::to_string(getpid() % 100000);
  options.subnet = "10." + std::to_string(octet) + "." + std::to_string(getpid() % 250) + ".0/24";
  options.ipam_dir = dir / "ipam";
  options.state_dir = dir / kubelet;
  return options;
}

TEST(PodNetwork, CniPodsHaveRoutableAddressesAndReachEachOtherAndTheHostReachesThem) {
  test_support::TempDir dir;
  const CniOptions options = testCniOptions(dir.path(), 250);
  core::Result<std::unique_ptr<PodNetwork>> made = makeCniNetwork(options);
  if (!made.ok()) GTEST_SKIP() << "no cni pod network here: " << made.status().toString();
  PodNetwork& network = **made;
  core::Result<PodAddress> a = network.attach("pod-a");
  core::Result<PodAddress> b = network.attach("pod-b");
  ASSERT_TRUE(a.ok()) << a.status().toString();
  ASSERT_TRUE(b.ok()) << b.status().toString();
  EXPECT_NE(a->ip, b->ip);
  EXPECT_EQ(a->ip.rfind("10.250.", 0), 0u) << a->ip;
  EXPECT_TRUE(fs::exists(a->netns)) << a->netns;

  // Pod a's process (in its namespace) talks to pod b's listener, then the host does.
  const int listener = listenInside(b->netns, b->ip);
  ASSERT_GE(listener, 0) << "cannot listen on " << b->ip << " in " << b->netns;
  LaunchSpec spec;
  spec.executable = "/bin/bash";
  spec.argv = {"bash", "-c", "echo -n from-a >/dev/tcp/" + b->ip + "/7077"};
  spec.netns = a->netns;
  core::Result<pid_t> pid = launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().toString();
  EXPECT_EQ(readOne(listener), "from-a");
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // A process of the host's own network reaches it too, through the bridge.
  spec.argv = {"bash", "-c", "echo -n from-host >/dev/tcp/" + b->ip + "/7077"};
  spec.netns = "";
  pid = launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().toString();
  EXPECT_EQ(readOne(listener), "from-host");
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  close(listener);

  network.detach("pod-a", a->ip);
  network.detach("pod-b", b->ip);
  EXPECT_FALSE(fs::exists(a->netns));
  EXPECT_FALSE(fs::exists(b->netns));
  EXPECT_TRUE(fs::is_empty(options.state_dir));
  // The bridge outlives its pods (the host's kubelets share it): the test's own goes.
  ASSERT_EQ(system(("ip link delete " + options.bridge).c_str()), 0);
}

// Two kubelets of one host (their own state dirs, one bridge and one address pool) never hand
// out the same address; a third that starts over the first one's state dir detaches its pods.
TEST(PodNetwork, CniKubeletsOfOneHostShareThePoolAndASuccessorDetachesLeftovers) {
  test_support::TempDir dir;
  auto optionsFor = [&](const std::string& kubelet) {
    return testCniOptions(dir.path(), 251, kubelet);
  };
  core::Result<std::unique_ptr<PodNetwork>> first = makeCniNetwork(optionsFor("first"));
  if (!first.ok()) GTEST_SKIP() << "no cni pod network here: " << first.status().toString();
  core::Result<std::unique_ptr<PodNetwork>> second = makeCniNetwork(optionsFor("second"));
  ASSERT_TRUE(second.ok()) << second.status().toString();
  std::set<std::string> ips;
  std::vector<PodAddress> of_first;
  for (int i = 0; i < 6; ++i) {
    PodNetwork& network = i % 2 == 0 ? **first : **second;
    core::Result<PodAddress> a = network.attach("pod-" + std::to_string(i));
    ASSERT_TRUE(a.ok()) << a.status().toString();
    EXPECT_TRUE(ips.insert(a->ip).second) << a->ip << " handed out twice";
    if (i % 2 == 0) of_first.push_back(*a);
  }
  // The first kubelet dies with its pods attached; its successor undoes them at start-up.
  first->reset();
  core::Result<std::unique_ptr<PodNetwork>> successor = makeCniNetwork(optionsFor("first"));
  ASSERT_TRUE(successor.ok()) << successor.status().toString();
  for (const PodAddress& a : of_first) EXPECT_FALSE(fs::exists(a.netns)) << a.netns;
  EXPECT_TRUE(fs::is_empty(dir.path() / "first"));
  for (int i = 1; i < 6; i += 2) (*second)->detach("pod-" + std::to_string(i), "");
  EXPECT_TRUE(fs::is_empty(dir.path() / "second"));
  ASSERT_EQ(system(("ip link delete " + optionsFor("x").bridge).c_str()), 0);
}

// A kubelet killed while its `ip netns add` ran leaves a namespace it never recorded (the child
// finishes after it): the pod's next attach, by its successor, takes the place over.
TEST(PodNetwork, CniAttachTakesOverANamespaceAKilledKubeletLeftUnrecorded) {
  test_support::TempDir dir;
  const CniOptions options = testCniOptions(dir.path(), 252);
  core::Result<std::unique_ptr<PodNetwork>> made = makeCniNetwork(options);
  if (!made.ok()) GTEST_SKIP() << "no cni pod network here: " << made.status().toString();
  const std::string uid = "orphan-" + std::to_string(getpid());
  ASSERT_EQ(system(("ip netns add rm-" + uid).c_str()), 0);
  core::Result<PodAddress> a = (*made)->attach(uid);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_TRUE(fs::exists(a->netns));
  EXPECT_FALSE(a->ip.empty());
  (*made)->detach(uid, a->ip);
  EXPECT_FALSE(fs::exists(a->netns));
  EXPECT_TRUE(fs::is_empty(options.state_dir));
  ASSERT_EQ(system(("ip link delete " + options.bridge).c_str()), 0);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
