#include "ringmaster/contract/backend_rules.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace ringmaster::contract {
namespace {

struct Row {
  BackendUse use;
  std::string error;   // a part of backendError's message; "" none
  std::string device;  // deviceRequest
};

BackendUse use(std::string backend, std::string device, std::string launcher = "native",
               int64_t stages = 1, int64_t tensor = 1, std::string schedule = "") {
  return {std::move(backend), std::move(device), std::move(launcher), stages, tensor,
          std::move(schedule)};
}

// Every backend with every device on one model, then the launchers and the splits.
TEST(BackendRules, EveryBackendWithEveryDevice) {
  const std::vector<Row> rows = {
      {use("auto", "auto"), "", "auto"},
      {use("auto", "cpu"), "", "cpu"},
      {use("auto", "cuda"), "", "cuda"},
      {use("nccl", "auto"), "", "cuda"},
      {use("nccl", "cpu"), "nccl needs the GPU, and spec.trainer.device is cpu", "cpu"},
      {use("nccl", "cuda"), "", "cuda"},
      // A host backend on a GPU node: device auto trains on the CPU rather than failing at start.
      {use("tcp", "auto"), "", "cpu"},
      {use("tcp", "cpu"), "", "cpu"},
      {use("tcp", "cuda"), "tcp reads host memory", "cuda"},
      {use("gloo", "auto"), "", "cpu"},
      {use("gloo", "cpu"), "", "cpu"},
      {use("gloo", "cuda"), "gloo reads host memory", "cuda"},
      {use("mpi", "auto"), "", "cpu"},
      {use("mpi", "cuda"), "mpi reads host memory", "cuda"},
      {use("shm", "auto"), "", "cpu"},
      {use("shm", "cuda"), "shm reads host memory", "cuda"},
      // launcher mpi: auto or mpi only; on the GPU auto is NCCL.
      {use("auto", "cuda", "mpi"), "", "cuda"},
      {use("mpi", "cpu", "mpi"), "", "cpu"},
      {use("tcp", "cpu", "mpi"), "must be auto or mpi when spec.launcher is mpi", "cpu"},
      {use("nccl", "cuda", "mpi"), "must be auto or mpi when spec.launcher is mpi", "cuda"},
      // Split models: GPU pipeline stages run over NCCL; tensor parallelism and PipeDream train
      // on the CPU; auto keeps a split model on the CPU.
      {use("nccl", "cuda", "native", 2), "", "cuda"},
      {use("nccl", "auto", "native", 2, 1, "1f1b"), "", "cuda"},
      {use("nccl", "auto", "native", 2, 1, "pipedream"), "pipedream stages train on the CPU",
       "cuda"},
      {use("nccl", "auto", "native", 1, 2), "tensor-parallel ranks train on the CPU", "cuda"},
      {use("auto", "auto", "native", 2), "", "cpu"},
      {use("auto", "auto", "native", 1, 2), "", "cpu"},
      {use("auto", "cuda", "native", 2), "", "cuda"},
      {use("tcp", "auto", "native", 2, 2), "", "cpu"},
      {use("tcp", "cuda", "native", 2), "tcp reads host memory", "cuda"},
  };
  for (const Row& row : rows) {
    const std::string label = row.use.backend + "/" + row.use.device + "/" + row.use.launcher +
                              " stages " + std::to_string(row.use.pipeline_stages) + " tensor " +
                              std::to_string(row.use.tensor) + " " + row.use.pipeline_schedule;
    const std::string error = backendError(row.use);
    if (row.error.empty()) {
      EXPECT_EQ(error, "") << label;
    } else {
      EXPECT_NE(error.find(row.error), std::string::npos) << label << ": " << error;
    }
    EXPECT_EQ(deviceRequest(row.use), row.device) << label;
  }
}

TEST(BackendRules, AutoIsNcclOnTheGpuThenMpiThenOneRankThenShmOrTcp) {
  EXPECT_EQ(autoBackend(true, true, 4), AutoBackend::kNccl);
  EXPECT_EQ(autoBackend(true, false, 1), AutoBackend::kNccl);
  EXPECT_EQ(autoBackend(false, true, 1), AutoBackend::kMpi);
  EXPECT_EQ(autoBackend(false, false, 1), AutoBackend::kSingleRank);
  EXPECT_EQ(autoBackend(false, false, 2), AutoBackend::kShmElseTcp);
}

// The CRD the chart installs describes spec.backend in these rules' words.
TEST(BackendRules, TheCrdDescribesTheBackendWithTheseRules) {
  const char* source = std::getenv("RM_SOURCE_DIR");
  std::ifstream in(std::string(source ? source : ".") + "/helm/ringmaster/crds/trainingjob.yaml");
  ASSERT_TRUE(in) << "helm/ringmaster/crds/trainingjob.yaml (set RM_SOURCE_DIR)";
  std::stringstream text;
  text << in.rdbuf();
  // The YAML folds the description over lines: compare word by word.
  std::istringstream crd_words(text.str()), want_words(kBackendDescription);
  std::vector<std::string> crd, want;
  for (std::string w; crd_words >> w;) crd.push_back(w);
  for (std::string w; want_words >> w;) want.push_back(w);
  ASSERT_FALSE(want.empty());
  bool found = false;
  for (size_t i = 0; !found && i + want.size() <= crd.size(); ++i) {
    found = std::equal(want.begin(), want.end(), crd.begin() + static_cast<std::ptrdiff_t>(i));
  }
  EXPECT_TRUE(found) << "the CRD's spec.backend description is not kBackendDescription:\n"
                     << kBackendDescription;
}

}  // namespace
}  // namespace ringmaster::contract
