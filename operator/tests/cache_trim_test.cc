// The cache keeps what a reconcile pass reads: every reader of a pod answers the same on the
// trimmed pod as on the full one, and the trimmed pod is a fraction of the full one's size.
#include "operator/cache_trim.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "operator/builders.h"
#include "operator/decide.h"
#include "operator/status.h"
#include "operator/tests/test_jobs.h"
#include "ringmaster/kube/codec.h"

namespace ringmaster::op {
namespace {

using testing::defaulted;
using testing::makeJob;

const kube::Time kT0 = kube::Time::fromUnixSeconds(1795312800);

kube::ContainerStatus workerStatus() {
  kube::ContainerStatus cs;
  cs.name = kWorkerContainer;
  cs.state = kube::ContainerState{};
  return cs;
}

struct Shape {
  std::string what;
  std::function<void(kube::Pod&)> make;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> kShapes = {
      {"just created", [](kube::Pod&) {}},
      {"unschedulable",
       [](kube::Pod& p) {
         p.status.phase = "Pending";
         kube::Condition c;
         c.type = "PodScheduled";
         c.status = "False";
         c.reason = "Unschedulable";
         c.message = "0/1 nodes are available: 1 Insufficient cpu.";
         p.status.conditions.push_back(c);
       }},
      {"image pull back-off",
       [](kube::Pod& p) {
         p.spec.node_name = "local";
         p.status.phase = "Pending";
         kube::ContainerStatus cs = workerStatus();
         cs.state->waiting = kube::ContainerStateWaiting{};
         cs.state->waiting->reason = "ImagePullBackOff";
         cs.state->waiting->message = "Back-off pulling image";
         p.status.container_statuses.push_back(cs);
       }},
      {"running and ready",
       [](kube::Pod& p) {
         p.spec.node_name = "local";
         p.status.phase = "Running";
         p.status.pod_ip = "10.88.0.7";
         p.status.extra = {{"podIPs", {{{"ip", "10.88.0.7"}}}}, {"qosClass", "Burstable"}};
         kube::Condition c;
         c.type = "Ready";
         c.status = "True";
         p.status.conditions.push_back(c);
       }},
      {"failed with a message",
       [](kube::Pod& p) {
         p.spec.node_name = "local";
         p.status.phase = "Failed";
         kube::ContainerStatus cs = workerStatus();
         cs.state->terminated = kube::ContainerStateTerminated{};
         cs.state->terminated->exit_code = 3;
         cs.state->terminated->message = "rank 1: loss is NaN at step 40";
         cs.state->terminated->finished_at = kT0;
         p.status.container_statuses.push_back(cs);
       }},
      {"terminating",
       [](kube::Pod& p) {
         p.spec.node_name = "local";
         p.metadata.deletion_timestamp = kT0;
         p.metadata.finalizers = {"example.com/hold"};
       }},
  };
  return kShapes;
}

kube::Pod fullPod(const kube::TrainingJob& job, int index, const Shape& shape) {
  kube::Pod pod = buildWorkerPod(job, index, 2, "store-secret-for-tests");
  pod.metadata.uid = "pod-uid-" + std::to_string(index);
  pod.metadata.resource_version = "4711";
  pod.metadata.managed_fields = {{{"manager", "ringmaster-operator"}, {"operation", "Update"}}};
  pod.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] =
      std::string(2000, 'x');
  shape.make(pod);
  return pod;
}

kube::Pod trimmed(kube::Pod pod) {
  trimForCache(pod);
  return pod;
}

class TrimPod : public ::testing::TestWithParam<Shape> {};

TEST_P(TrimPod, EveryReaderAnswersAsOnTheFullPod) {
  const kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  const kube::Pod full = fullPod(job, 1, GetParam());
  const kube::Pod slim = trimmed(full);

  EXPECT_EQ(slim.metadata.name, full.metadata.name);
  EXPECT_EQ(slim.metadata.namespace_name, full.metadata.namespace_name);
  EXPECT_EQ(slim.metadata.uid, full.metadata.uid);
  EXPECT_EQ(slim.metadata.resource_version, full.metadata.resource_version);
  EXPECT_EQ(slim.metadata.labels, full.metadata.labels);
  EXPECT_EQ(slim.metadata.deletion_timestamp, full.metadata.deletion_timestamp);
  ASSERT_NE(controllerOf(slim.metadata), nullptr);
  EXPECT_EQ(controllerOf(slim.metadata)->uid, job.metadata.uid);
  EXPECT_EQ(podReady(slim), podReady(full));
  EXPECT_EQ(podScheduled(slim), podScheduled(full));
  EXPECT_EQ(podFinished(slim), podFinished(full));
  EXPECT_EQ(podTerminating(slim), podTerminating(full));
  EXPECT_EQ(exitCodeOf(slim), exitCodeOf(full));
  EXPECT_EQ(terminationMessageOf(slim), terminationMessageOf(full));
  EXPECT_EQ(attemptOf(slim), 2);
  EXPECT_EQ(storeSecretOf(slim), "store-secret-for-tests");
  EXPECT_EQ(slim.status.pod_ip, full.status.pod_ip);
  const std::optional<PodProblem> want = podProblem(full);
  const std::optional<PodProblem> got = podProblem(slim);
  ASSERT_EQ(got.has_value(), want.has_value());
  if (want) {
    EXPECT_EQ(got->reason, want->reason);
    EXPECT_EQ(got->message, want->message);
  }
}

TEST_P(TrimPod, TheJobsStatusIsTheSameFromTrimmedPods) {
  const kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  // Rank 0 ready, rank 1 in this row's shape.
  const kube::Pod ready0 = fullPod(job, 0, shapes()[3]);
  const kube::Pod full1 = fullPod(job, 1, GetParam());
  const kube::Pod slim0 = trimmed(ready0);
  const kube::Pod slim1 = trimmed(full1);
  kube::TrainingJobStatus from_full, from_slim;
  observePods(job, {&ready0, &full1}, kT0, from_full);
  observePods(job, {&slim0, &slim1}, kT0, from_slim);
  EXPECT_EQ(from_slim, from_full);
}

TEST_P(TrimPod, KeepsAFractionOfTheBytes) {
  const kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  const kube::Pod full = fullPod(job, 1, GetParam());
  const size_t full_bytes = kube::encodeText(full).size();
  const size_t slim_bytes = kube::encodeText(trimmed(full)).size();
  EXPECT_LT(slim_bytes * 4, full_bytes) << slim_bytes << " of " << full_bytes << " bytes kept";
}

INSTANTIATE_TEST_SUITE_P(Shapes, TrimPod, ::testing::ValuesIn(shapes()),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           std::string name;
                           for (char c : info.param.what) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

TEST(TrimChildren, ServiceAndConfigMapKeepTheirIdentityAndOwnerOnly) {
  const kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  kube::Service service = buildService(job);
  kube::ConfigMap config_map = buildConfigMap(job);
  ASSERT_FALSE(config_map.data.empty());
  trimForCache(service);
  trimForCache(config_map);
  EXPECT_EQ(service.metadata.name, "fmnist");
  EXPECT_EQ(config_map.metadata.name, configMapName("fmnist"));
  ASSERT_NE(controllerOf(service.metadata), nullptr);
  ASSERT_NE(controllerOf(config_map.metadata), nullptr);
  EXPECT_EQ(controllerOf(config_map.metadata)->uid, job.metadata.uid);
  EXPECT_TRUE(service.spec.selector.empty());
  EXPECT_TRUE(config_map.data.empty());
}

}  // namespace
}  // namespace ringmaster::op
