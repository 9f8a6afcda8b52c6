// What the cache keeps of a pod (WorkerPod) is what a reconcile pass reads of it: one row per
// shape a worker pod takes, from just created to terminating.
#include "operator/worker_pod.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "operator/builders.h"
#include "operator/tests/test_jobs.h"

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
  std::function<void(WorkerPod&)> want;  // what differs from a pod just created
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> kShapes = {
      {"just created", [](kube::Pod&) {}, [](WorkerPod&) {}},
      {"unschedulable",
       [](kube::Pod& p) {
         p.status.phase = "Pending";
         kube::Condition c;
         c.type = "PodScheduled";
         c.status = "False";
         c.reason = "Unschedulable";
         c.message = "0/1 nodes are available: 1 Insufficient cpu.";
         p.status.conditions.push_back(c);
       },
       [](WorkerPod& w) {
         w.phase = "Pending";
         w.problem = PodProblem{
             "Unschedulable", "pod fmnist-worker-1: 0/1 nodes are available: 1 Insufficient cpu."};
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
       },
       [](WorkerPod& w) {
         w.phase = "Pending";
         w.scheduled = true;
         w.problem = PodProblem{"ImagePullBackOff",
                                "pod fmnist-worker-1 container " + std::string(kWorkerContainer) +
                                    ": ImagePullBackOff: Back-off pulling image"};
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
       },
       [](WorkerPod& w) {
         w.phase = "Running";
         w.scheduled = true;
         w.ready = true;
         w.pod_ip = "10.88.0.7";
       }},
      {"failed with a message",
       [](kube::Pod& p) {
         p.spec.node_name = "local";
         p.status.phase = "Failed";
         p.status.reason = "Error";
         kube::ContainerStatus cs = workerStatus();
         cs.state->terminated = kube::ContainerStateTerminated{};
         cs.state->terminated->exit_code = 3;
         cs.state->terminated->message = "rank 1: loss is NaN at step 40";
         cs.state->terminated->finished_at = kT0;
         p.status.container_statuses.push_back(cs);
       },
       [](WorkerPod& w) {
         w.phase = "Failed";
         w.reason = "Error";
         w.scheduled = true;
         w.exit_code = 3;
         w.finished_at = kT0;
         w.termination_message = "rank 1: loss is NaN at step 40";
       }},
      {"terminating",
       [](kube::Pod& p) {
         p.spec.node_name = "local";
         p.metadata.deletion_timestamp = kT0;
         p.metadata.finalizers = {"example.com/hold"};
       },
       [](WorkerPod& w) {
         w.scheduled = true;
         w.terminating = true;
       }},
  };
  return kShapes;
}

class WorkerPodOf : public ::testing::TestWithParam<Shape> {};

TEST_P(WorkerPodOf, KeepsWhatAPassReads) {
  const kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  kube::Pod pod = buildWorkerPod(job, 1, 2, "store-secret-for-tests");
  pod.metadata.uid = "pod-uid-1";
  pod.metadata.resource_version = "4711";
  pod.metadata.creation_timestamp = kT0;
  pod.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] =
      std::string(2000, 'x');
  GetParam().make(pod);

  WorkerPod want;
  want.metadata = {"fmnist-worker-1", job.metadata.namespace_name};
  want.controller_uid = job.metadata.uid;
  want.uid = "pod-uid-1";  // a replaced pod's record names it
  want.attempt = 2;
  want.created = kT0;
  want.store_secret = "store-secret-for-tests";
  GetParam().want(want);
  EXPECT_EQ(workerPodOf(pod), want);
  EXPECT_FALSE(want.metadata.namespace_name.empty());
  EXPECT_FALSE(want.controller_uid.empty());
}

INSTANTIATE_TEST_SUITE_P(Shapes, WorkerPodOf, ::testing::ValuesIn(shapes()),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           std::string name;
                           for (char c : info.param.what) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

TEST(WorkerPod, APodWithoutAControllerOrAttemptLabelHasNeither) {
  kube::Pod pod;
  pod.metadata.name = "stranger";
  pod.metadata.namespace_name = "default";
  pod.metadata.labels[kAttemptLabel] = "not-a-number";
  kube::OwnerReference owner;
  owner.uid = "someone";
  owner.controller = false;
  pod.metadata.owner_references.push_back(owner);
  const WorkerPod w = workerPodOf(pod);
  EXPECT_EQ(w.controller_uid, "");
  EXPECT_EQ(w.attempt, -1);
  EXPECT_EQ(w.store_secret, std::nullopt);
}

// The cache holds one per pod the operator owns: far less than the pod it replaces, whose
// containers and statuses alone are a few kilobytes before their strings.
TEST(WorkerPod, IsAFractionOfAPodsSize) {
  const size_t pod_bytes =
      sizeof(kube::Pod) + sizeof(kube::Container) + sizeof(kube::ContainerStatus);
  EXPECT_LT(sizeof(WorkerPod) * 4, pod_bytes) << sizeof(WorkerPod) << " against " << pod_bytes;
}

}  // namespace
}  // namespace ringmaster::op
