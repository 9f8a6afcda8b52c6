// e2e, parameter servers on the user's path: `ringmaster local run examples/fashion-mnist-ps.yaml`
// runs 2 worker pods and, from spec.roles.ps, 1 parameter-server pod of its own (fmnist-ps-ps-0):
// it serves the parameters, the workers train against it under bounded staleness, across the
// pods' network namespaces. The job ends Succeeded; `local run` prints worker 0's test accuracy
// from the job's status, and each pod's log says which part it played. Only the embedded control
// plane: the operator's side of the job is a data-parallel job's, which the other e2e tests run on
// both.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "local_cluster.h"
#include "local_run_checks.h"
#include "process.h"

namespace ringmaster {
namespace {

TEST(LocalRunParameterServerE2e, OneServerTwoWorkersTrainToSucceeded) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testutil::TempDir dir;
  e2e::ExampleRun example = e2e::runExample("fashion-mnist-ps.yaml", dir.path(),
                                            {"fmnist-ps-worker-0", "fmnist-ps-ps-0"});
  const testutil::ProcessResult& result = example.run;
  const testutil::ProcessResult& down = example.down;
  const testutil::ProcessResult& worker0 = example.logs["fmnist-ps-worker-0"];
  const testutil::ProcessResult& server = example.logs["fmnist-ps-ps-0"];
  const std::string outcome = result.stdout_text + result.stderr_text;
  ASSERT_EQ(result.exit_code, 0) << outcome;
  EXPECT_EQ(down.exit_code, 0) << down.stdout_text << down.stderr_text;
  EXPECT_NE(result.stdout_text.find("fmnist-ps: Succeeded"), std::string::npos) << outcome;
  // Worker 0's final summary is the job's: `local run` prints its accuracy from the status
  // ("  test accuracy 85.91%"). Two epochs under staleness 4 reach about 86%.
  const size_t printed = result.stdout_text.find("test accuracy ");
  ASSERT_NE(printed, std::string::npos) << "no accuracy in the job's status:\n" << outcome;
  EXPECT_GE(std::atof(result.stdout_text.c_str() + printed + 14), 83.0) << outcome;
  ASSERT_EQ(worker0.exit_code, 0) << worker0.stderr_text;
  EXPECT_GE(e2e::testAccuracy(worker0.stdout_text), 0.83) << worker0.stdout_text;
  EXPECT_NE(worker0.stdout_text.find("on 1 parameter server(s), 2 worker(s), staleness 4"),
            std::string::npos)
      << worker0.stdout_text;
  ASSERT_EQ(server.exit_code, 0) << server.stderr_text;
  EXPECT_NE(server.stdout_text.find("parameter server 0 of 1: listening"), std::string::npos)
      << server.stdout_text;
}

}  // namespace
}  // namespace ringmaster
