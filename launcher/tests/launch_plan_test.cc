#include "launcher/launch_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/contract/tf_config.h"

namespace ringmaster::launcher {
namespace {

using contract::LauncherMode;
using contract::PodEnvironment;
using std::chrono::milliseconds;
using Argv = std::vector<std::string>;

// Pod `node_rank` of two, two processes each.
PodEnvironment pod(int node_rank, LauncherMode mode = LauncherMode::kNative) {
  PodEnvironment p;
  p.node_rank = node_rank;
  p.nnodes = 2;
  p.local_world_size = 2;
  p.world_size = 4;
  p.job = "j";
  p.store_secret = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e7";
  p.mode = mode;
  return p;
}

// PATH without the file system: a bare name lands in /usr/bin, "missing" nowhere.
core::Result<std::string> resolve(const std::string& name) {
  if (name == "missing") return core::notFound("missing: not found in PATH");
  if (name.find('/') != std::string::npos) return name;
  return "/usr/bin/" + name;
}

const char kTfConfig[] =
    R"({"cluster":{"worker":["j-worker-0.j.ns.svc:2222","j-worker-0.j.ns.svc:2223",)"
    R"("j-worker-1.j.ns.svc:2222","j-worker-1.j.ns.svc:2223"]},)"
    R"("task":{"type":"worker","index":2},"environment":"cloud"})";

TEST(PlanLaunch, ModeProgramProcessesAndSummary) {
  struct Case {
    const char* name;
    std::string mode_flag;  // --mode
    std::string trainer_config;
    PodEnvironment env;
    Argv command;
    LauncherMode want_mode;
    Argv want_program;
    size_t want_processes;
    bool want_summary;
  };
  const Case cases[] = {
      {"the trainer with its config on pod 0",
       "",
       "/etc/job.yaml",
       pod(0),
       {},
       LauncherMode::kNative,
       {"/usr/bin/ringmaster-trainer", "--config", "/etc/job.yaml"},
       2,
       true},
      {"the trainer without a config",
       "",
       "",
       pod(0),
       {},
       LauncherMode::kNative,
       {"/usr/bin/ringmaster-trainer"},
       2,
       true},
      {"no rank 0 on pod 1: no summary",
       "",
       "/etc/job.yaml",
       pod(1),
       {},
       LauncherMode::kNative,
       {"/usr/bin/ringmaster-trainer", "--config", "/etc/job.yaml"},
       2,
       false},
      {"a user's program on rank 0's pod may write a summary",
       "",
       "/etc/job.yaml",
       pod(0),
       {"python3", "train.py", "--lr=0.1"},
       LauncherMode::kNative,
       {"/usr/bin/python3", "train.py", "--lr=0.1"},
       2,
       true},
      {"an absolute program stays",
       "",
       "",
       pod(1),
       {"/opt/bin/run", "x"},
       LauncherMode::kNative,
       {"/opt/bin/run", "x"},
       2,
       false},
      {"torchrun is the pod's one process",
       "",
       "",
       pod(0),
       {"torchrun", "train.py"},
       LauncherMode::kNative,
       {"/usr/bin/torchrun", "train.py"},
       1,
       true},
      {"MPI mode from the environment: the trainer's MPI backend, mpirun starts the ranks",
       "",
       "/etc/job.yaml",
       pod(0, LauncherMode::kMpi),
       {},
       LauncherMode::kMpi,
       {"/usr/bin/ringmaster-trainer", "--config", "/etc/job.yaml", "--backend", "mpi"},
       0,
       true},
      {"MPI mode on pod 1: no summary",
       "",
       "",
       pod(1, LauncherMode::kMpi),
       {},
       LauncherMode::kMpi,
       {"/usr/bin/ringmaster-trainer", "--backend", "mpi"},
       0,
       false},
      {"--mode=mpi over the environment's native",
       "mpi",
       "",
       pod(0),
       {},
       LauncherMode::kMpi,
       {"/usr/bin/ringmaster-trainer", "--backend", "mpi"},
       0,
       true},
      {"--mode=native over the environment's mpi",
       "native",
       "",
       pod(0, LauncherMode::kMpi),
       {},
       LauncherMode::kNative,
       {"/usr/bin/ringmaster-trainer"},
       2,
       true},
      {"a user's program under mpirun gets no backend",
       "mpi",
       "",
       pod(0),
       {"python3", "mpi.py"},
       LauncherMode::kMpi,
       {"/usr/bin/python3", "mpi.py"},
       0,
       false},
  };
  for (const Case& c : cases) {
    LauncherFlags flags;
    flags.mode = c.mode_flag;
    flags.trainer_config = c.trainer_config;
    core::Result<LaunchPlan> plan = planLaunch(flags, c.env, c.command, "", resolve);
    ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().toString();
    EXPECT_EQ(plan->mode, c.want_mode) << c.name;
    EXPECT_EQ(plan->program, c.want_program) << c.name;
    ASSERT_EQ(plan->processes.size(), c.want_processes) << c.name;
    for (const ProcessSpec& spec : plan->processes) EXPECT_EQ(spec.argv, c.want_program) << c.name;
    EXPECT_EQ(plan->wants_summary, c.want_summary) << c.name;
  }
}

TEST(PlanLaunch, BadInputIsNamedInTheOrderModeProgramTfConfig) {
  struct Case {
    const char* name;
    std::string mode_flag;
    std::string trainer;
    std::string tf_config;
    std::string want;
  };
  const Case cases[] = {
      {"unknown mode", "slurm", "ringmaster-trainer", "", "--mode=slurm must be native or mpi"},
      {"program not found", "", "missing", "", "missing: not found in PATH"},
      {"bad TF_CONFIG", "", "ringmaster-trainer", "{", ""},
      {"the mode before the program", "slurm", "missing", "{",
       "--mode=slurm must be native or mpi"},
      {"the program before TF_CONFIG", "", "missing", "{", "missing: not found in PATH"},
      {"TF_CONFIG is checked in MPI mode too", "mpi", "ringmaster-trainer", "[]", ""},
  };
  for (const Case& c : cases) {
    LauncherFlags flags;
    flags.mode = c.mode_flag;
    flags.trainer = c.trainer;
    core::Result<LaunchPlan> plan = planLaunch(flags, pod(0), {}, c.tf_config, resolve);
    ASSERT_FALSE(plan.ok()) << c.name;
    // Without words of its own: parseTfConfig's error, whatever it says.
    const std::string want =
        c.want.empty() ? contract::parseTfConfig(c.tf_config).status().message() : c.want;
    EXPECT_EQ(plan.status().message(), want) << c.name;
    EXPECT_EQ(plan.status().exitCode(), 1) << c.name;
  }
}

TEST(PlanLaunch, HeartbeatsAndHangPollsComeManyTimesPerHangTimeout) {
  struct Case {
    int64_t hang_timeout_seconds;
    int64_t want_heartbeat_ms;
  };
  const Case cases[] = {
      {120, 250},  // the default: capped
      {2, 250},
      {1, 125},
      {0, 50},  // hang detection off: the floor
  };
  for (const Case& c : cases) {
    EXPECT_EQ(heartbeatMs(c.hang_timeout_seconds), c.want_heartbeat_ms) << c.hang_timeout_seconds;
    LauncherFlags flags;
    flags.hang_timeout_seconds = c.hang_timeout_seconds;
    flags.rdzv_timeout_seconds = 7;
    flags.grace_seconds = 3;
    core::Result<LaunchPlan> plan = planLaunch(flags, pod(0), {}, "", resolve);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    EXPECT_EQ(plan->heartbeat_ms, c.want_heartbeat_ms);
    EXPECT_EQ(plan->hang_poll, milliseconds(c.want_heartbeat_ms));
    EXPECT_EQ(plan->hang_timeout, milliseconds(c.hang_timeout_seconds * 1000));
    EXPECT_EQ(plan->rendezvous_timeout, milliseconds(7000));
    EXPECT_EQ(plan->grace, milliseconds(3000));
    for (const ProcessSpec& spec : plan->processes) {
      EXPECT_EQ(spec.env.at(contract::rank_env::kHeartbeatMs), std::to_string(c.want_heartbeat_ms));
    }
  }
}

TEST(PlanLaunch, ProcessesGetTheirRankGpuAndTensorFlowTask) {
  struct Case {
    const char* name;
    bool gpus_flag;
    bool pod_has_gpus;
    bool want_gpus;
  };
  const Case cases[] = {
      {"CPU pod", false, false, false},
      {"--gpus", true, false, true},
      {"NVIDIA_VISIBLE_DEVICES", false, true, true},
  };
  for (const Case& c : cases) {
    LauncherFlags flags;
    flags.gpus = c.gpus_flag;
    PodEnvironment env = pod(1);
    env.has_gpus = c.pod_has_gpus;
    core::Result<LaunchPlan> plan =
        planLaunch(flags, env, {"python3", "tf.py"}, kTfConfig, resolve);
    ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().toString();
    ASSERT_EQ(plan->processes.size(), 2u) << c.name;
    for (int local = 0; local < 2; ++local) {
      const ProcessSpec& spec = plan->processes[static_cast<size_t>(local)];
      EXPECT_EQ(spec.name, "rank " + std::to_string(2 + local)) << c.name;
      EXPECT_EQ(spec.env.count("CUDA_VISIBLE_DEVICES"), c.want_gpus ? 1u : 0u) << c.name;
      if (c.want_gpus) {
        EXPECT_EQ(spec.env.at("CUDA_VISIBLE_DEVICES"), std::to_string(local)) << c.name;
      }
      auto tf = contract::parseTfConfig(spec.env.at(contract::kTfConfigEnv));
      ASSERT_TRUE(tf.ok()) << c.name << ": " << tf.status().toString();
      EXPECT_EQ(tf->task_index, 2 + local) << c.name;
    }
  }
}

TEST(AddSummaryPath, GoesWhereRankZerosCommandLineIs) {
  struct Case {
    const char* name;
    PodEnvironment env;
    Argv want_program;
    Argv want_rank0;  // native mode's first process
  };
  const Argv trainer = {"/usr/bin/ringmaster-trainer"};
  const Argv with_summary = {"/usr/bin/ringmaster-trainer", "--summary-json",
                             "/tmp/s/summary.json"};
  const Argv mpi_trainer = {"/usr/bin/ringmaster-trainer", "--backend", "mpi"};
  const Case cases[] = {
      {"native: rank 0's process alone", pod(0), trainer, with_summary},
      {"MPI: mpirun's command line, for every rank",
       pod(0, LauncherMode::kMpi),
       {"/usr/bin/ringmaster-trainer", "--backend", "mpi", "--summary-json", "/tmp/s/summary.json"},
       {}},
      {"no summary wanted: nothing", pod(1), trainer, trainer},
      {"no summary wanted in MPI mode: nothing", pod(1, LauncherMode::kMpi), mpi_trainer, {}},
  };
  for (const Case& c : cases) {
    core::Result<LaunchPlan> plan = planLaunch(LauncherFlags(), c.env, {}, "", resolve);
    ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().toString();
    addSummaryPath(*plan, "/tmp/s/summary.json");
    EXPECT_EQ(plan->program, c.want_program) << c.name;
    if (c.want_rank0.empty()) {
      EXPECT_TRUE(plan->processes.empty()) << c.name;
      continue;
    }
    ASSERT_EQ(plan->processes.size(), 2u) << c.name;
    EXPECT_EQ(plan->processes[0].argv, c.want_rank0) << c.name;
    EXPECT_EQ(plan->processes[1].argv, plan->program) << c.name;
    for (const ProcessSpec& p : plan->processes)
      EXPECT_EQ(p.env.count(contract::rank_env::kSummaryFile), 0u) << c.name;
  }
}

// A program of the user's own is told where to write its summary by its environment, never on
// its command line (which is the user's): the pod's first process only, and only on rank 0's
// pod; under mpirun it is not told at all.
TEST(AddSummaryPath, TellsAUsersProgramByItsEnvironment) {
  struct Case {
    const char* name;
    PodEnvironment env;
    std::vector<std::string> want_summary_env;  // per process: "" for none
  };
  const Case cases[] = {
      {"native, rank 0's pod: the first process", pod(0), {"/tmp/s/summary.json", ""}},
      {"native, pod 1: none", pod(1), {"", ""}},
      {"mpirun: none", pod(0, LauncherMode::kMpi), {}},
  };
  const Argv program = {"python3", "train.py"};
  for (const Case& c : cases) {
    core::Result<LaunchPlan> plan = planLaunch(LauncherFlags(), c.env, program, "", resolve);
    ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().toString();
    addSummaryPath(*plan, "/tmp/s/summary.json");
    EXPECT_EQ(plan->program, (Argv{"/usr/bin/python3", "train.py"})) << c.name;
    ASSERT_EQ(plan->processes.size(), c.want_summary_env.size()) << c.name;
    for (size_t i = 0; i < plan->processes.size(); ++i) {
      const ProcessSpec& p = plan->processes[i];
      EXPECT_EQ(p.argv, plan->program) << c.name << ": process " << i;
      auto it = p.env.find(contract::rank_env::kSummaryFile);
      EXPECT_EQ(it == p.env.end() ? "" : it->second, c.want_summary_env[i])
          << c.name << ": process " << i;
    }
  }
}

TEST(MpiOptions, TheFlagsAndThePlanForMpiPod) {
  LauncherFlags flags;
  flags.ssh_port = 2200;
  flags.ssh_dir = "/ssh";
  flags.hostfile = "/etc/hosts.mpi";
  flags.sshd = "/sbin/sshd";
  flags.mpirun = "mpirun.openmpi";
  flags.grace_seconds = 4;
  flags.hang_timeout_seconds = 1;
  PodEnvironment env = pod(0, LauncherMode::kMpi);
  env.work_dir = "/work/env";
  core::Result<LaunchPlan> plan = planLaunch(flags, env, {}, "", resolve);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  core::Result<MpiOptions> options = mpiOptions(flags, env, *plan);
  ASSERT_TRUE(options.ok()) << options.status().toString();
  EXPECT_EQ(options->work_dir, "/work/env");
  EXPECT_EQ(options->ssh_dir, "/ssh");
  EXPECT_EQ(options->hostfile, "/etc/hosts.mpi");
  EXPECT_EQ(options->ssh_port, 2200);
  EXPECT_EQ(options->sshd, "/sbin/sshd");
  EXPECT_EQ(options->mpirun, "mpirun.openmpi");
  EXPECT_EQ(options->program, plan->program);
  EXPECT_EQ(options->grace, milliseconds(4000));
  EXPECT_EQ(options->heartbeat_ms, 125);

  flags.work_dir = "/work/flag";  // the flag over RINGMASTER_WORK_DIR
  EXPECT_EQ(mpiOptions(flags, env, *plan)->work_dir, "/work/flag");
  env.work_dir.clear();
  flags.work_dir.clear();  // neither: MpiPod makes one
  EXPECT_EQ(mpiOptions(flags, env, *plan)->work_dir, "");
}

TEST(MpiOptions, TheSshPortMustBeATcpPort) {
  struct Case {
    int64_t port;
    std::string want;  // "" when accepted
  };
  const Case cases[] = {
      {1, ""},
      {65535, ""},
      {0, "--ssh-port=0 is not a TCP port"},
      {65536, "--ssh-port=65536 is not a TCP port"},
      {-22, "--ssh-port=-22 is not a TCP port"},
  };
  const PodEnvironment env = pod(0, LauncherMode::kMpi);
  for (const Case& c : cases) {
    LauncherFlags flags;
    flags.ssh_port = c.port;
    core::Result<LaunchPlan> plan = planLaunch(flags, env, {}, "", resolve);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    core::Result<MpiOptions> options = mpiOptions(flags, env, *plan);
    if (c.want.empty()) {
      EXPECT_TRUE(options.ok()) << c.port << ": " << options.status().toString();
      continue;
    }
    ASSERT_FALSE(options.ok()) << c.port;
    EXPECT_EQ(options.status().message(), c.want);
    EXPECT_EQ(options.status().exitCode(), 1);
  }
}

}  // namespace
}  // namespace ringmaster::launcher
