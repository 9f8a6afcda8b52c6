#include "local/kubelet/resources.h"

#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

kube::Container container(std::map<std::string, std::string> requests,
                          std::map<std::string, std::string> limits = {}) {
  kube::Container c;
  c.name = "c";
  kube::ResourceRequirements r;
  for (const auto& [k, v] : requests) r.requests[k] = *kube::Quantity::parse(v);
  for (const auto& [k, v] : limits) r.limits[k] = *kube::Quantity::parse(v);
  c.resources = r;
  return c;
}

TEST(PodRequests, SumsContainersAndFallsBackToLimits) {
  kube::PodSpec spec;
  spec.containers = {container({{"cpu", "500m"}, {"memory", "1Gi"}}),
                     container({}, {{"cpu", "1"}, {"nvidia.com/gpu", "2"}})};
  Resources r = podRequests(spec);
  EXPECT_EQ(r.cpu_milli, 1500);
  EXPECT_EQ(r.memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(r.extended, (std::map<std::string, int64_t>{{kGpuResource, 2}}));
  EXPECT_EQ(r.pods, 1);
}

TEST(PodRequests, InitContainersCountAsTheirMaximum) {
  kube::PodSpec spec;
  spec.containers = {container({{"cpu", "1"}})};
  spec.init_containers = {container({{"cpu", "3"}}), container({{"cpu", "2"}})};
  EXPECT_EQ(podRequests(spec).cpu_milli, 3000);
}

const std::map<std::string, int64_t> kOneGpu{{kGpuResource, 1}};

TEST(Insufficient, NamesEveryResourceThatDoesNotFit) {
  Resources alloc{4000, 1 << 20, kOneGpu, 10};
  Resources used{3500, 0, kOneGpu, 2};
  Resources req{1000, 100, kOneGpu, 1};
  EXPECT_EQ(insufficient(used, req, alloc), (std::vector<std::string>{"cpu", "nvidia.com/gpu"}));
  EXPECT_TRUE(insufficient(used, Resources{500, 0, {}, 1}, alloc).empty());
}

// An extended resource the node does not advertise: none of it.
TEST(Insufficient, AnExtendedResourceTheNodeLacksNeverFits) {
  Resources alloc{4000, 1 << 20, kOneGpu, 10};
  Resources req{0, 0, {{"example.com/fpga", 1}}, 1};
  EXPECT_EQ(insufficient(Resources{}, req, alloc), std::vector<std::string>{"example.com/fpga"});
}

TEST(ExtendedResources, AreDomainNamesOutsideKubernetesIo) {
  EXPECT_TRUE(isExtendedResource("nvidia.com/gpu"));
  EXPECT_TRUE(isExtendedResource("example.com/fpga"));
  EXPECT_FALSE(isExtendedResource("cpu"));
  EXPECT_FALSE(isExtendedResource("ephemeral-storage"));
  EXPECT_FALSE(isExtendedResource("hugepages-2Mi"));
  EXPECT_FALSE(isExtendedResource("kubernetes.io/batch-cpu"));
  EXPECT_FALSE(isExtendedResource("node.kubernetes.io/x"));
}

// Requests of a container win over its limits; an init container counts as its maximum.
TEST(PodRequests, ExtendedResourcesOfEveryContainer) {
  kube::PodSpec spec;
  spec.containers = {container({{"example.com/fpga", "1"}}, {{"example.com/fpga", "2"}}),
                     container({}, {{"example.com/fpga", "1"}, {"ephemeral-storage", "1Gi"}})};
  spec.init_containers = {container({{"example.com/fpga", "5"}})};
  EXPECT_EQ(podRequests(spec).extended, (std::map<std::string, int64_t>{{"example.com/fpga", 5}}));
  spec.init_containers.clear();
  EXPECT_EQ(podRequests(spec).extended, (std::map<std::string, int64_t>{{"example.com/fpga", 2}}));
}

TEST(Insufficient, ZeroRequestsFitAnOvercommittedNode) {
  Resources alloc{1000, 100, {}, 10};
  Resources used{5000, 500, {}, 1};
  EXPECT_TRUE(insufficient(used, Resources{0, 0, {}, 1}, alloc).empty());
  EXPECT_EQ(insufficient(Resources{0, 0, {}, 10}, Resources{0, 0, {}, 1}, alloc),
            std::vector<std::string>{"pods"});
}

TEST(UnschedulableMessage, ReadsLikeKubeScheduler) {
  EXPECT_EQ(unschedulableMessage({kGpuResource}),
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  EXPECT_EQ(unschedulableMessage({"memory", "cpu", "pods"}),
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods.");
  EXPECT_EQ(unschedulableNodeMessage("node(s) had untolerated taint {dedicated: gpu}"),
            "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}.");
}

TEST(AllocatableOf, ReadsTheNodeStatus) {
  kube::NodeStatus st;
  st.allocatable["cpu"] = *kube::Quantity::parse("8");
  st.allocatable["memory"] = *kube::Quantity::parse("2Gi");
  st.allocatable[kGpuResource] = *kube::Quantity::parse("4");
  st.allocatable["pods"] = *kube::Quantity::parse("110");
  st.allocatable["ephemeral-storage"] = *kube::Quantity::parse("100Gi");
  EXPECT_EQ(allocatableOf(st), (Resources{8000, int64_t{2} << 30, {{kGpuResource, 4}}, 110}));
}

TEST(GpuDeviceCount, CountsOnlyNvidiaNumberedDevices) {
  struct Case {
    std::vector<std::string> dev;
    int64_t gpus;
  };
  const std::vector<Case> cases{
      {{}, 0},
      {{"null", "tty0", "nvme0", "nvme0n1"}, 0},
      {{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps"}, 0},
      {{"nvidia0", "nvidiactl", "nvidia-uvm"}, 1},
      {{"nvidia0", "nvidia1", "nvidia7", "nvidia10", "nvidiactl"}, 4},
      {{"nvidia", "nvidia0a", "xnvidia0"}, 0},
  };
  for (const Case& c : cases)
    EXPECT_EQ(gpuDeviceCount(c.dev), c.gpus) << ::testing::PrintToString(c.dev);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
