// The command line resolved to the configuration a process runs: --config's spec.trainer, the
// flags written over it and checked by the contract, the backend and the metrics endpoint.

#include "trainer/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace ringmaster::trainer {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class CommandLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Flags read these when absent from argv; the tests give argv alone.
    for (const char* name : {"RINGMASTER_BACKEND", "RINGMASTER_DEVICE", "RINGMASTER_METRICS_PORT",
                             "RINGMASTER_RDZV_TIMEOUT_SECONDS"}) {
      unsetenv(name);
    }
    dir_ = fs::temp_directory_path() / ("command_line_test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A config file holding `yaml`.
  std::string file(const std::string& yaml) {
    const std::string path = (dir_ / ("trainer-" + std::to_string(files_++) + ".yaml")).string();
    std::ofstream(path) << yaml;
    return path;
  }

  // Parses `args` as ringmaster-trainer would, then resolves them.
  static core::Result<TrainerConfig> resolve(const std::vector<std::string>& args) {
    CommandLine cl = defaultCommandLine();
    core::FlagSet flags("ringmaster-trainer", "test");
    declareFlags(flags, &cl);
    std::vector<const char*> argv = {"ringmaster-trainer"};
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    bool help = false;
    RM_RETURN_IF_ERROR(flags.parse(static_cast<int>(argv.size()), argv.data(), &help));
    return resolveTrainerConfig(flags, cl);
  }

  fs::path dir_;
  int files_ = 0;
};

TEST_F(CommandLineTest, FlagsOverrideTheConfigFileOrTheDefaults) {
  const std::string job = file("epochs: 3\nbatchSize: 32\nmetricsPort: 9100\n");
  const std::string bare = file("epochs: 3\n");
  struct Case {
    const char* name;
    std::vector<std::string> args;
    std::function<void(const TrainerConfig&)> check;
  };
  using contract::TrainerSettings;
  const Case cases[] = {
      {"no flags: the contract's defaults, no endpoint",
       {},
       [](const TrainerConfig& c) {
         EXPECT_EQ(c.settings, defaultTrainerSettings());
         EXPECT_EQ(c.backend, "auto");
         EXPECT_EQ(c.metrics_port, -1);
       }},
      {"flags over the defaults",
       {"--model",          "cnn",    "--channels",         "8,16", "--epochs",    "2",
        "--batch-size",     "64",     "--optimizer",        "adam", "--lr",        "0.01",
        "--lr-schedule",    "cosine", "--device",           "cpu",  "--max-steps", "50",
        "--checkpoint-dir", "/ckpt",  "--checkpoint-every", "10",   "--seed",      "7",
        "--no-cuda-graph"},
       [](const TrainerConfig& c) {
         const TrainerSettings& s = c.settings;
         EXPECT_EQ(s.model.type, contract::ModelType::kCnn);
         EXPECT_EQ(s.model.channels, (std::vector<int32_t>{8, 16}));
         EXPECT_EQ(s.epochs, 2);
         EXPECT_EQ(s.batch_size, 64);
         EXPECT_EQ(s.optimizer.type, contract::OptimizerType::kAdam);
         EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.01);
         EXPECT_EQ(s.optimizer.schedule, contract::LrSchedule::kCosine);
         EXPECT_EQ(s.device, contract::Device::kCpu);
         EXPECT_EQ(s.max_steps, 50);
         EXPECT_EQ(s.checkpoint.path, "/ckpt");
         EXPECT_EQ(s.checkpoint.every_steps, 10);
         EXPECT_EQ(s.seed, 7u);
         EXPECT_FALSE(s.cuda_graph);
       }},
      {"a flag over the file, the file over the defaults; the file's metricsPort",
       {"--config", job, "--epochs", "1"},
       [](const TrainerConfig& c) {
         EXPECT_EQ(c.settings.epochs, 1);
         EXPECT_EQ(c.settings.batch_size, 32);
         EXPECT_EQ(c.metrics_port, 9100);
       }},
      {"a file without metricsPort: the contract's",
       {"--config", bare},
       [](const TrainerConfig& c) {
         EXPECT_EQ(c.settings.epochs, 3);
         EXPECT_EQ(c.metrics_port, contract::kDefaultMetricsPort);
       }},
      {"--metrics-port over the file's",
       {"--config", job, "--metrics-port", "0"},
       [](const TrainerConfig& c) { EXPECT_EQ(c.metrics_port, 0); }},
      {"--metrics-port -1 turns the file's off",
       {"--config", job, "--metrics-port=-1"},
       [](const TrainerConfig& c) { EXPECT_EQ(c.metrics_port, -1); }},
      {"the backend is the process's",
       {"--backend", "gloo", "--hidden", "64,32"},
       [](const TrainerConfig& c) {
         EXPECT_EQ(c.backend, "gloo");
         EXPECT_EQ(c.settings.model.hidden, (std::vector<int32_t>{64, 32}));
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto config = resolve(c.args);
    ASSERT_TRUE(config.ok()) << config.status().message();
    c.check(*config);
  }
}

TEST_F(CommandLineTest, ErrorsNameTheFlagOrTheKeyAndWhereItCameFrom) {
  const std::string job = file("epochs: 3\n");
  const std::string broken = file("epochs: three\n");
  struct Case {
    std::vector<std::string> args;
    core::Code code;
    std::string says;
  };
  const Case cases[] = {
      {{"--momentum", "1.5"},
       core::Code::kInvalidArgument,
       "the flags: trainer.optimizer.momentum"},
      {{"--config", job, "--model", "rnn"},
       core::Code::kInvalidArgument,
       job + " and the flags: trainer.model.type"},
      {{"--device", "gpu"}, core::Code::kInvalidArgument, "the flags: trainer.device"},
      {{"--hidden", "512,x"}, core::Code::kUsage, "flag --hidden"},
      {{"--metrics-port", "70000"}, core::Code::kUsage, "flag --metrics-port: must be -1 (off)"},
      {{"--metrics-port=-2"}, core::Code::kUsage, "flag --metrics-port"},
      {{"--config", broken}, core::Code::kInvalidArgument, broken + ": trainer.epochs"},
      {{"--config", (dir_ / "absent.yaml").string()}, core::Code::kNotFound, "absent.yaml"},
  };
  for (const Case& c : cases) {
    auto config = resolve(c.args);
    ASSERT_FALSE(config.ok()) << c.says;
    EXPECT_EQ(config.status().code(), c.code) << config.status().message();
    EXPECT_THAT(config.status().message(), HasSubstr(c.says));
  }
}

TEST_F(CommandLineTest, TheDefaultsHelpShowsAreTheContracts) {
  const contract::TrainerSettings d = defaultTrainerSettings();
  const CommandLine cl = defaultCommandLine();
  EXPECT_EQ(cl.model, contract::name(d.model.type));
  EXPECT_EQ(cl.optimizer, contract::name(d.optimizer.type));
  EXPECT_EQ(cl.lr_schedule, contract::name(d.optimizer.schedule));
  EXPECT_EQ(cl.device, contract::name(d.device));
  EXPECT_EQ(cl.precision, contract::name(d.precision));
  EXPECT_EQ(cl.data, d.dataset.path);
  EXPECT_EQ(cl.epochs, d.epochs);
  EXPECT_EQ(cl.batch_size, d.batch_size);
  EXPECT_DOUBLE_EQ(cl.lr, d.optimizer.learning_rate);
  EXPECT_DOUBLE_EQ(cl.momentum, d.optimizer.momentum);
  EXPECT_DOUBLE_EQ(cl.bucket_cap_mb, d.bucket_cap_mb);
  EXPECT_DOUBLE_EQ(cl.tcp_doubling_max_kb, d.tcp_doubling_max_kb);
  EXPECT_EQ(cl.checkpoint_every, d.checkpoint.every_steps);
  EXPECT_EQ(cl.blas_threads, d.blas_threads);
  EXPECT_EQ(cl.comm_timeout_seconds, d.comm_timeout_seconds);
  // Giving every default explicitly changes nothing.
  auto explicit_defaults = resolve({"--model",
                                    cl.model,
                                    "--optimizer",
                                    cl.optimizer,
                                    "--lr-schedule",
                                    cl.lr_schedule,
                                    "--device",
                                    cl.device,
                                    "--precision",
                                    cl.precision,
                                    "--data",
                                    cl.data,
                                    "--epochs",
                                    std::to_string(cl.epochs),
                                    "--batch-size",
                                    std::to_string(cl.batch_size),
                                    "--seed",
                                    std::to_string(cl.seed),
                                    "--checkpoint-every",
                                    std::to_string(cl.checkpoint_every),
                                    "--blas-threads",
                                    std::to_string(cl.blas_threads),
                                    "--max-steps",
                                    std::to_string(cl.max_steps),
                                    "--log-every-steps",
                                    std::to_string(cl.log_every_steps),
                                    "--comm-timeout-seconds",
                                    std::to_string(cl.comm_timeout_seconds)});
  ASSERT_TRUE(explicit_defaults.ok()) << explicit_defaults.status().message();
  EXPECT_EQ(explicit_defaults->settings, d);
}

TEST_F(CommandLineTest, TheEnvironmentGivesTheProcesssOptions) {
  setenv("RINGMASTER_BACKEND", "tcp", 1);
  setenv("RINGMASTER_METRICS_PORT", "9200", 1);
  auto config = resolve({});
  unsetenv("RINGMASTER_BACKEND");
  unsetenv("RINGMASTER_METRICS_PORT");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->backend, "tcp");
  EXPECT_EQ(config->metrics_port, 9200);
}

// --autotune turns spec.trainer.autotune on with its defaults; --autotune-log and
// --autotune-samples imply it; --autotune=false turns a config's off; the contract bounds them.
TEST_F(CommandLineTest, AutotuneFlagsWriteTheContractsField) {
  struct Case {
    std::vector<std::string> args;
    bool enabled;
    int32_t samples;
    std::string log;
  };
  const Case cases[] = {
      {{}, false, 0, ""},
      {{"--autotune"}, true, 20, ""},
      {{"--autotune-log", "/tmp/a.csv"}, true, 20, "/tmp/a.csv"},
      {{"--autotune-samples", "7"}, true, 7, ""},
      {{"--autotune", "--autotune=false"}, false, 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    auto config = resolve(c.args);
    ASSERT_TRUE(config.ok()) << config.status().toString();
    EXPECT_EQ(config->settings.autotune.enabled, c.enabled);
    EXPECT_EQ(config->settings.autotune.max_samples, c.samples);
    EXPECT_EQ(config->settings.autotune.log, c.log);
  }
  auto zero = resolve({"--autotune-samples", "0"});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("trainer.autotune.maxSamples"), std::string::npos)
      << zero.status().message();
}

}  // namespace
}  // namespace ringmaster::trainer

namespace ringmaster::trainer {
namespace {

// Parameter-server mode's flags write spec.trainer.parallelism.parameterServer: off by default;
// the contract bounds them as it bounds the config (ps_role.h judges them against the world).
TEST_F(CommandLineTest, ParameterServerFlagsWriteTheContractsField) {
  using contract::PsConsistency;
  struct Case {
    std::vector<std::string> args;
    contract::TrainerSettings::ParameterServers want;
  };
  const Case cases[] = {
      {{}, {0, PsConsistency::kSync, 0}},
      {{"--ps-servers", "1"}, {1, PsConsistency::kSync, 0}},
      {{"--ps-servers", "2", "--ps-consistency", "3"}, {2, PsConsistency::kBounded, 3}},
      {{"--ps-servers", "1", "--ps-consistency", "async"}, {1, PsConsistency::kAsync, 0}},
      {{"--ps-servers", "1", "--ps-consistency", "0"}, {1, PsConsistency::kSync, 0}},
      {{"--ps-servers", "1", "--ps-consistency", "sync"}, {1, PsConsistency::kSync, 0}},
      {{"--ps-servers", "0", "--ps-consistency", "async"}, {0, PsConsistency::kSync, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    auto config = resolve(c.args);
    ASSERT_TRUE(config.ok()) << config.status().toString();
    EXPECT_EQ(config->settings.parameter_servers, c.want);
  }
}

TEST_F(CommandLineTest, BadParameterServerFlagsNameTheFlagOrTheField) {
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  };
  const Case cases[] = {
      {{"--ps-servers", "1", "--ps-consistency", "often"}, "--ps-consistency"},
      {{"--ps-servers", "1", "--ps-consistency", "-2"}, "--ps-consistency"},
      {{"--ps-servers", "65"}, "trainer.parallelism.parameterServer.servers"},
      {{"--ps-consistency", "async"}, "trainer.parallelism.parameterServer.servers"},
      {{"--ps-servers", "1", "--device", "cuda"}, "trainer.parallelism.parameterServer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    auto config = resolve(c.args);
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.status().message().find(c.needle), std::string::npos)
        << config.status().message();
  }
}

// tcp's recursive-doubling threshold: the flag sets it, 0 leaves the transport's own, and a
// negative one is refused naming the field.
TEST_F(CommandLineTest, TheTcpDoublingThresholdFlag) {
  auto set = resolve({"--tcp-doubling-max-kb", "128"});
  ASSERT_TRUE(set.ok()) << set.status().toString();
  EXPECT_DOUBLE_EQ(set->settings.tcp_doubling_max_kb, 128);
  auto own = resolve({"--config", file("tcpDoublingMaxKB: 64\n"), "--tcp-doubling-max-kb", "0"});
  ASSERT_TRUE(own.ok()) << own.status().toString();
  EXPECT_DOUBLE_EQ(own->settings.tcp_doubling_max_kb, 0);
  auto negative = resolve({"--tcp-doubling-max-kb", "-1"});
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("tcpDoublingMaxKB"));
}

}  // namespace
}  // namespace ringmaster::trainer
