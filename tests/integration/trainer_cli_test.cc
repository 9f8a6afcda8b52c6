// Drives the real ringmaster-trainer binary: bad input must give one clear error line and the
// documented exit code (never a crash), and real training must reach the accuracy targets.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>

#include "process.h"

namespace ringmaster::testutil {
namespace {

std::string trainer() { return binaryPath("bin/ringmaster-trainer"); }

// No crash: exited (not signaled), no core dump, with this code, and the error named `needle`.
void expectCleanFailure(const ProcessResult& r, int code, const std::string& needle) {
  EXPECT_FALSE(r.signaled) << "killed by signal " << r.term_signal << "\n" << r.stderr_text;
  EXPECT_FALSE(r.core_dumped);
  EXPECT_EQ(r.exit_code, code) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(needle), std::string::npos) << r.stderr_text;
  // One clear error line, not a cascade.
  const int errors =
      countLines(r.stderr_text, " E ") + countLines(r.stderr_text, "ringmaster-trainer:");
  EXPECT_EQ(errors, 1) << r.stderr_text;
}

TEST(TrainerCli, HelpListsFlagsAndExitsZero) {
  auto r = run({trainer(), "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.stdout_text.find("--batch-size"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("--summary-json"), std::string::npos);
}

TEST(TrainerCli, UnknownFlagIsUsageErrorExitTwo) {
  auto r = run({trainer(), "--epochz=3"});
  expectCleanFailure(r, 2, "--epochz");
}

TEST(TrainerCli, MissingDataSetNamesTheDirectory) {
  TempDir dir;
  auto r = run({trainer(), "--data", dir.path() + "/nowhere"});
  expectCleanFailure(r, 1, dir.path() + "/nowhere");
}

TEST(TrainerCli, CorruptIdxNamesFileAndOffset) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  TempDir dir;
  for (const char* f :
       {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz"})
    std::filesystem::copy_file(testutil::kFashionMnistDir + "/" + f, dir.path() + "/" + f);
  // The real training images, cut short after 20 MB of their 47 MB of pixels.
  gzFile in = gzopen((testutil::kFashionMnistDir + "/train-images-idx3-ubyte.gz").c_str(), "rb");
  std::vector<char> head(20'000'000);
  ASSERT_EQ(gzread(in, head.data(), head.size()), static_cast<int>(head.size()));
  gzclose(in);
  gzFile out = gzopen((dir.path() + "/train-images-idx3-ubyte.gz").c_str(), "wb1");
  gzwrite(out, head.data(), head.size());
  gzclose(out);
  auto r = run({trainer(), "--data", dir.path()});
  expectCleanFailure(r, 1, "train-images-idx3-ubyte.gz");
  EXPECT_NE(r.stderr_text.find("offset 20000000"), std::string::npos) << r.stderr_text;
}

TEST(TrainerCli, UnderTheLauncherRankZeroConnectsInsteadOfHostingTheStore) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  // Nobody hosts the store: rank 0 must wait for the launcher's store, not start its own.
  auto r = run({trainer(), "--data", testutil::kFashionMnistDir, "--backend=gloo",
                "--rendezvous-timeout-seconds=1"},
               {{"RANK", "0"},
                {"WORLD_SIZE", "2"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(freePort())},
                {"RINGMASTER_USE_AGENT_STORE", "1"}});
  // A store that never answers may answer on the next attempt: retryable (142).
  expectCleanFailure(r, 142, "connect to the rendezvous store");
  EXPECT_NE(r.stderr_text.find("(exit 142, retryable)"), std::string::npos) << r.stderr_text;
}

TEST(TrainerCli, BadAgentStoreSwitchIsNamed) {
  auto r = run({trainer(), "--data", testutil::kFashionMnistDir},
               {{"RINGMASTER_USE_AGENT_STORE", "yes"}});
  expectCleanFailure(r, 1, "RINGMASTER_USE_AGENT_STORE");
}

TEST(TrainerCli, UnknownConfigKeyIsNamed) {
  TempDir dir;
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << "epochs: 1\noptimizer:\n  type: sgd\n  momentm: 0.9\n";
  auto r = run({trainer(), "--config", path});
  expectCleanFailure(r, 1, "trainer.optimizer.momentm: unknown field");
}

TEST(TrainerCli, BadConfigValueIsNamed) {
  TempDir dir;
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << "batchSize: many\n";
  auto r = run({trainer(), "--config", path});
  expectCleanFailure(r, 1, "trainer.batchSize: expected integer, got string");
}

// Flags override spec.trainer's fields and meet the same limits, named as the spec names them,
// every problem at once.
TEST(TrainerCli, FlagsMeetTheSpecsLimitsNamedAsItsFields) {
  auto r = run({trainer(), "--epochs", "0", "--lr", "-1", "--model", "rnn"});
  expectCleanFailure(r, 1, "trainer.epochs: must be in [1, 100000], got 0");
  EXPECT_NE(r.stderr_text.find("trainer.optimizer.learningRate: must be greater than 0, got -1"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("trainer.model.type: must be one of mlp, cnn, got \"rnn\""),
            std::string::npos)
      << r.stderr_text;
}

// The contract's backend rules, before any data is read: a host backend cannot read GPU memory,
// nccl cannot run on the CPU.
TEST(TrainerCli, ABackendThatCannotReadTheGradientsIsRefusedAtStart) {
  expectCleanFailure(run({trainer(), "--backend", "tcp", "--device", "cuda"}), 1,
                     "tcp reads host memory");
  expectCleanFailure(run({trainer(), "--backend", "nccl", "--device", "cpu"}), 1,
                     "nccl needs the GPU");
}

TEST(TrainerCli, RankNotBelowWorldSizeIsRejected) {
  auto r = run({trainer()}, {{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  expectCleanFailure(r, 1, "RANK=2 must be in [0, WORLD_SIZE=2)");
}

TEST(TrainerCli, UnreachableMasterGivesUpNamingHostAndPort) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const int port = freePort();
  auto r = run({trainer(), "--backend", "gloo"},
               {{"RANK", "1"},
                {"WORLD_SIZE", "2"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(port)},
                {"RINGMASTER_RDZV_TIMEOUT_SECONDS", "2"}},
               std::chrono::seconds(60));
  EXPECT_FALSE(r.timed_out);
  expectCleanFailure(r, 142, "127.0.0.1:" + std::to_string(port));
}

// While training, /metrics carries every trainer metric; SIGTERM then stops the
// trainer cleanly (exit 143) after rank 0 wrote a checkpoint of where it stood.
TEST(TrainerCli, ServesMetricsWhileTrainingAndStopsCleanlyOnSigterm) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  TempDir dir;
  // Port 0: the trainer binds one the kernel picks and logs it. A port found free beforehand can
  // be taken by a process of a test running beside this one before the trainer binds it.
  Process p({trainer(), "--epochs", "50", "--metrics-port", "0", "--checkpoint-dir",
             dir.path() + "/ckpt", "--checkpoint-every", "0"},
            {{"RINGMASTER_JOB", "fmnist"}});
  p.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int port = 0;
  static constexpr std::string_view kServing = "serving /metrics on port ";
  while (port == 0 && std::chrono::steady_clock::now() < deadline && p.running()) {
    const std::string err = p.stderrSoFar();
    if (size_t at = err.find(kServing); at != std::string::npos) {
      port = std::atoi(err.c_str() + at + kServing.size());
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ASSERT_GT(port, 0) << "no '" << kServing << "N' from the trainer:\n" << p.stderrSoFar();
  std::string body;
  while (std::chrono::steady_clock::now() < deadline && p.running()) {
    body = httpGet(port, "/metrics").body;
    if (body.find("ringmaster_trainer_steps_total{rank=\"0\",trainingjob=\"fmnist\"} 0") ==
            std::string::npos &&
        body.find("ringmaster_trainer_steps_total") != std::string::npos)
      break;                                                      // training has taken steps
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a live process
  }
  for (const char* name :
       {"ringmaster_trainer_samples_total", "ringmaster_trainer_steps_total",
        "ringmaster_trainer_step_seconds_bucket", "ringmaster_trainer_loss",
        "ringmaster_trainer_test_accuracy_ratio", "ringmaster_trainer_allreduce_seconds_bucket",
        "ringmaster_trainer_allreduce_bytes_total",
        "ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second",
        "ringmaster_trainer_comm_overlap_ratio", "ringmaster_trainer_epoch"})
    EXPECT_NE(body.find(name), std::string::npos) << name << " missing from:\n" << body;
  p.signal(SIGTERM);
  auto r = p.wait(std::chrono::seconds(60));
  EXPECT_FALSE(r.signaled) << r.stderr_text;
  EXPECT_EQ(r.exit_code, 143) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("before stopping"), std::string::npos) << r.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/ckpt"));
  EXPECT_FALSE(std::filesystem::is_empty(dir.path() + "/ckpt"));
}

}  // namespace
}  // namespace ringmaster::testutil
