// What the caches keep of a job's Services and ConfigMaps (their key and controller) and of the
// job itself (all but its annotations and managedFields).
#include "operator/cache_trim.h"

#include <gtest/gtest.h>

#include "operator/builders.h"
#include "operator/tests/test_jobs.h"

namespace ringmaster::op {
namespace {

using testing::defaulted;
using testing::makeJob;

TEST(OwnedChild, ServiceAndConfigMapKeepTheirKeyAndController) {
  const kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  const kube::ConfigMap config_map = buildConfigMap(job);
  ASSERT_FALSE(config_map.data.empty());
  EXPECT_EQ(ownedChildOf(buildService(job)),
            (OwnedChild{{"fmnist", job.metadata.namespace_name}, job.metadata.uid}));
  EXPECT_EQ(ownedChildOf(config_map),
            (OwnedChild{{configMapName("fmnist"), job.metadata.namespace_name}, job.metadata.uid}));
  EXPECT_FALSE(job.metadata.uid.empty());
}

TEST(OwnedChild, AnObjectWithoutAControllerHasNone) {
  kube::Service service = buildService(defaulted(makeJob("fmnist", 2)));
  ASSERT_FALSE(service.metadata.owner_references.empty());
  service.metadata.owner_references[0].controller = false;
  EXPECT_EQ(ownedChildOf(service).controller_uid, "");
  service.metadata.owner_references.clear();
  EXPECT_EQ(ownedChildOf(service).controller_uid, "");
}

TEST(TrimJob, DropsAnnotationsAndManagedFieldsAndKeepsWhatAPassReads) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  job.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] =
      std::string(2000, 'x');
  job.metadata.managed_fields = {{{"manager", "kubectl-client-side-apply"}}};
  job.metadata.labels["team"] = "vision";
  job.metadata.resource_version = "4711";
  job.status.phase = "Running";
  kube::TrainingJob want = job;
  trimForCache(job);
  EXPECT_TRUE(job.metadata.annotations.empty());
  EXPECT_TRUE(job.metadata.managed_fields.is_null());
  want.metadata.annotations.clear();
  want.metadata.managed_fields = nullptr;
  EXPECT_EQ(job, want);  // spec, status, labels, owner and version as they were
}

}  // namespace
}  // namespace ringmaster::op
