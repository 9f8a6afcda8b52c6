#include "launcher/command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::launcher {
namespace {

TEST(SplitCommandLine, EverythingAfterTheFirstDoubleDashIsTheUsersCommand) {
  struct Case {
    const char* name;
    std::vector<const char*> argv;
    std::vector<std::string> own_args;
    std::vector<std::string> command;
  };
  const Case cases[] = {
      {"flags only",
       {"launcher", "--mode=mpi", "--gpus"},
       {"launcher", "--mode=mpi", "--gpus"},
       {}},
      {"nothing", {"launcher"}, {"launcher"}, {}},
      {"a program",
       {"launcher", "--gpus", "--", "python", "train.py", "--lr=0.1"},
       {"launcher", "--gpus"},
       {"python", "train.py", "--lr=0.1"}},
      {"a second -- is the program's",
       {"launcher", "--", "env", "--", "x"},
       {"launcher"},
       {"env", "--", "x"}},
      {"argv[0] is never the separator", {"--", "--gpus"}, {"--", "--gpus"}, {}},
  };
  for (const Case& c : cases) {
    core::Result<CommandLine> line =
        splitCommandLine(static_cast<int>(c.argv.size()), c.argv.data());
    ASSERT_TRUE(line.ok()) << c.name << ": " << line.status().toString();
    EXPECT_EQ(std::vector<std::string>(line->own_args.begin(), line->own_args.end()), c.own_args)
        << c.name;
    EXPECT_EQ(line->command, c.command) << c.name;
  }
}

TEST(SplitCommandLine, ADoubleDashWithoutAProgramIsAUsageError) {
  const std::vector<const char*> argv = {"launcher", "--gpus", "--"};
  core::Result<CommandLine> line = splitCommandLine(static_cast<int>(argv.size()), argv.data());
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.status().code(), core::Code::kUsage);
  EXPECT_EQ(line.status().exitCode(), 2);
  EXPECT_EQ(line.status().message(), "'--' must be followed by a program");
}

TEST(CheckFlagValues, PortsAndTimeoutsOutOfRangeAreBadInput) {
  struct Case {
    const char* name;
    void (*set)(LauncherFlags&);
    std::string want;  // "" when accepted
  };
  const std::string timeouts =
      "--rendezvous-timeout-seconds must be positive, --hang-timeout-seconds and --grace-seconds "
      "not negative";
  const Case cases[] = {
      {"defaults", [](LauncherFlags&) {}, ""},
      {"any health port", [](LauncherFlags& f) { f.health_port = 0; }, ""},
      {"last health port", [](LauncherFlags& f) { f.health_port = 65535; }, ""},
      {"hang detection off, no grace",
       [](LauncherFlags& f) {
         f.hang_timeout_seconds = 0;
         f.grace_seconds = 0;
       },
       ""},
      {"negative health port", [](LauncherFlags& f) { f.health_port = -1; },
       "--health-port=-1 is not a TCP port"},
      {"health port too large", [](LauncherFlags& f) { f.health_port = 65536; },
       "--health-port=65536 is not a TCP port"},
      {"no rendezvous time", [](LauncherFlags& f) { f.rdzv_timeout_seconds = 0; }, timeouts},
      {"negative hang timeout", [](LauncherFlags& f) { f.hang_timeout_seconds = -1; }, timeouts},
      {"negative grace", [](LauncherFlags& f) { f.grace_seconds = -1; }, timeouts},
      {"the port is named first",
       [](LauncherFlags& f) {
         f.health_port = 70000;
         f.grace_seconds = -1;
       },
       "--health-port=70000 is not a TCP port"},
      // MPI mode's alone: the plan checks it.
      {"ssh port", [](LauncherFlags& f) { f.ssh_port = 0; }, ""},
  };
  for (const Case& c : cases) {
    LauncherFlags flags;
    c.set(flags);
    core::Status s = checkFlagValues(flags);
    if (c.want.empty()) {
      EXPECT_TRUE(s.ok()) << c.name << ": " << s.toString();
      continue;
    }
    EXPECT_EQ(s.code(), core::Code::kInvalidArgument) << c.name;
    EXPECT_EQ(s.exitCode(), 1) << c.name;
    EXPECT_EQ(s.message(), c.want) << c.name;
  }
}

TEST(DeclareLauncherFlags, ParsesWhatTheOperatorPassesAndKeepsTheDefaults) {
  LauncherFlags flags;
  core::FlagSet flag_set("ringmaster-launcher", kLauncherSummary);
  declareLauncherFlags(flag_set, &flags);
  const std::vector<const char*> argv = {
      "launcher", "--trainer-config=/etc/job.yaml", "--mode=mpi", "--ssh-port", "2200", "--gpus"};
  bool help = false;
  ASSERT_TRUE(flag_set.parse(static_cast<int>(argv.size()), argv.data(), &help).ok());
  EXPECT_FALSE(help);
  EXPECT_EQ(flags.trainer_config, "/etc/job.yaml");
  EXPECT_EQ(flags.mode, "mpi");
  EXPECT_EQ(flags.ssh_port, 2200);
  EXPECT_TRUE(flags.gpus);
  EXPECT_EQ(flags.trainer, "ringmaster-trainer");
  EXPECT_EQ(flags.rdzv_timeout_seconds, 300);
  EXPECT_EQ(flags.hang_timeout_seconds, 120);
  EXPECT_EQ(flags.grace_seconds, 30);
  EXPECT_FALSE(flags.standby);
  EXPECT_NE(flag_set.help().find("142 hang or rendezvous timeout"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::launcher
