// What native mode hands its processes parses back, through the trainer's reader, to the ranks
// the pod's world gives them.

#include "launcher/rank_processes.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ringmaster/contract/rank_environment.h"

namespace ringmaster::launcher {
namespace {

using contract::PodEnvironment;
using contract::RankEnvironment;

constexpr char kSecret[] = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e7";

// Pod 1 of three, two processes each, as the operator and Kubernetes set it up.
PodEnvironment pod() {
  PodEnvironment p;
  p.node_rank = 1;
  p.nnodes = 3;
  p.local_world_size = 2;
  p.world_size = 6;
  p.master_addr = "j-worker-0.j.ns.svc";
  p.master_port = 29600;
  p.job = "j";
  p.attempt = 4;
  p.backend = "gloo";
  p.store_secret = kSecret;
  p.pod_ip = "10.0.0.8";
  p.pod_name = "j-worker-1";
  return p;
}

// The launcher's own environment: what its processes inherit under their spec's variables.
std::map<std::string, std::string> launcherEnvironment(const PodEnvironment& p) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : contract::encode(p)) env[name] = value;
  env[contract::pod_env::kPodIp] = p.pod_ip;
  env[contract::pod_env::kPodName] = p.pod_name;
  return env;
}

// The environment a process of `spec` starts with, as the trainer reads it.
core::Result<RankEnvironment> parseAsTheProcessSeesIt(const ProcessSpec& spec,
                                                      const PodEnvironment& p) {
  std::map<std::string, std::string> env = launcherEnvironment(p);
  for (const auto& [name, value] : spec.env) env[name] = value;
  return contract::parseRankEnvironment(env);
}

TEST(RankProcesses, EveryProcessParsesBackToItsRank) {
  const PodEnvironment p = pod();
  const std::vector<std::string> argv = {"/bin/trainer", "--config", "job.yaml"};
  std::vector<ProcessSpec> specs = rankProcesses(p, argv, 125, false);
  ASSERT_EQ(specs.size(), 2u);
  for (int local = 0; local < 2; ++local) {
    const ProcessSpec& spec = specs[local];
    EXPECT_EQ(spec.name, "rank " + std::to_string(2 + local));
    EXPECT_EQ(spec.argv, argv);
    EXPECT_EQ(spec.env.count("CUDA_VISIBLE_DEVICES"), 0u);
    core::Result<RankEnvironment> parsed = parseAsTheProcessSeesIt(spec, p);
    ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
    EXPECT_EQ(parsed->rank, 2 + local);
    EXPECT_EQ(parsed->local_rank, local);
    EXPECT_EQ(parsed->node_rank, 1);
    EXPECT_EQ(parsed->world_size, 6);
    EXPECT_EQ(parsed->local_world_size, 2);
    EXPECT_EQ(parsed->nnodes, 3);
    EXPECT_EQ(parsed->master_addr, "j-worker-0.j.ns.svc");
    EXPECT_EQ(parsed->master_port, 29600);
    EXPECT_EQ(parsed->attemptPrefix(), "j/attempt-4");
    EXPECT_TRUE(parsed->use_agent_store);
    EXPECT_EQ(parsed->store_secret, kSecret);
    EXPECT_EQ(parsed->heartbeat_ms, 125);
    // Inherited from the pod, not written by the launcher.
    EXPECT_EQ(spec.env.count("RINGMASTER_BACKEND"), 0u);
    EXPECT_EQ(spec.env.count("POD_IP"), 0u);
    EXPECT_EQ(parsed->backend, "gloo");
    EXPECT_EQ(parsed->pod_ip, "10.0.0.8");
  }
}

TEST(RankProcesses, WritesTorchrunsVariables) {
  std::vector<ProcessSpec> specs = rankProcesses(pod(), {"/bin/true"}, 250, false);
  ASSERT_EQ(specs.size(), 2u);
  const std::map<std::string, std::string> expected = {{"RANK", "3"},
                                                       {"LOCAL_RANK", "1"},
                                                       {"GROUP_RANK", "1"},
                                                       {"NODE_RANK", "1"},
                                                       {"WORLD_SIZE", "6"},
                                                       {"LOCAL_WORLD_SIZE", "2"},
                                                       {"NNODES", "3"},
                                                       {"MASTER_ADDR", "j-worker-0.j.ns.svc"},
                                                       {"MASTER_PORT", "29600"},
                                                       {"RINGMASTER_STORE_PORT", "29510"},
                                                       {"RINGMASTER_JOB", "j"},
                                                       {"RINGMASTER_ATTEMPT", "4"},
                                                       {"RINGMASTER_USE_AGENT_STORE", "1"},
                                                       {"RINGMASTER_STORE_SECRET", kSecret},
                                                       {"RINGMASTER_HEARTBEAT_MS", "250"}};
  EXPECT_EQ(specs[1].env, expected);
}

TEST(RankProcesses, GpuProcessesGetOneDeviceEach) {
  std::vector<ProcessSpec> specs = rankProcesses(pod(), {"/bin/true"}, 250, true);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(specs[1].env.at("CUDA_VISIBLE_DEVICES"), "1");
}

TEST(RankProcesses, TorchrunIsTheOneProcessOfItsPodWithPyTorchJobsVariables) {
  struct Case {
    std::vector<std::string> argv;
    bool torchrun;
  };
  const Case cases[] = {
      {{"/usr/bin/torchrun", "--nnodes=2", "train.py"}, true},
      {{"torchrun", "train.py"}, true},
      {{"/usr/bin/python3", "-m", "torch.distributed.run", "train.py"}, true},
      {{"/usr/bin/python3", "-u", "-m", "torch.distributed.run", "train.py"}, true},
      {{"/usr/bin/python3", "train.py", "-m", "torch.distributed.run"}, false},
      {{"/usr/bin/python3", "-m", "torch.distributed.launch", "train.py"}, false},
      {{"/usr/bin/python3", "/app/train.py"}, false},
      {{"/opt/torchrun.sh"}, false},
  };
  for (const Case& c : cases) EXPECT_EQ(runsTorchrun(c.argv), c.torchrun) << c.argv[0];

  const std::vector<ProcessSpec> specs =
      rankProcesses(pod(), {"/usr/bin/torchrun", "train.py"}, 125, true);
  ASSERT_EQ(specs.size(), 1u);
  const std::map<std::string, std::string> want = {{"PET_NNODES", "3"},
                                                   {"PET_NPROC_PER_NODE", "2"},
                                                   {"PET_NODE_RANK", "1"},
                                                   {"PET_MASTER_ADDR", "j-worker-0.j.ns.svc"},
                                                   {"PET_MASTER_PORT", "29600"}};
  EXPECT_EQ(specs[0].env, want);  // no RANK, no GPU choice: torchrun gives its ranks those
}

TEST(RankProcesses, EachProcessIsItsOwnTensorFlowTask) {
  const contract::TfConfig cluster = contract::clusterTfConfig(
      {{"worker", {"j-worker-0.j.ns.svc", "j-worker-1.j.ns.svc", "j-worker-2.j.ns.svc"}}}, 2,
      "worker", 2);
  const std::vector<ProcessSpec> specs =
      rankProcesses(pod(), {"/usr/bin/python3", "tf.py"}, 125, false, cluster);
  ASSERT_EQ(specs.size(), 2u);
  for (size_t local = 0; local < specs.size(); ++local) {
    auto parsed = contract::parseTfConfig(specs[local].env.at("TF_CONFIG"));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->task_index, 2 + static_cast<int>(local));
    EXPECT_EQ(parsed->cluster, cluster.cluster);
    // Its own address is on its own pod, one port per process.
    EXPECT_EQ(parsed->cluster.at("worker")[static_cast<size_t>(parsed->task_index)],
              "j-worker-1.j.ns.svc:" + std::to_string(2222 + local));
  }
  EXPECT_EQ(
      rankProcesses(pod(), {"/usr/bin/python3", "tf.py"}, 125, false)[0].env.count("TF_CONFIG"),
      0u);
}

// A ps pod's processes are tasks of the ps role: their indices count from the pod's first ps
// task, not from its global rank.
TEST(RankProcesses, AParameterServerPodsProcessesAreItsPsTasks) {
  const contract::TfConfig cluster = contract::clusterTfConfig(
      {{"worker", {"j-worker-0.j.ns.svc", "j-worker-1.j.ns.svc"}}, {"ps", {"j-ps-0.j.ns.svc"}}}, 2,
      "ps", 0);
  contract::PodEnvironment ps = pod();
  ps.node_rank = 2;  // after the two worker pods: ranks 4 and 5
  const std::vector<ProcessSpec> specs =
      rankProcesses(ps, {"/usr/bin/python3", "tf.py"}, 125, false, cluster);
  ASSERT_EQ(specs.size(), 2u);
  for (size_t local = 0; local < specs.size(); ++local) {
    auto parsed = contract::parseTfConfig(specs[local].env.at("TF_CONFIG"));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->task_type, "ps");
    EXPECT_EQ(parsed->task_index, static_cast<int>(local));
    EXPECT_EQ(specs[local].env.at("RANK"), std::to_string(4 + local));
  }
}

}  // namespace
}  // namespace ringmaster::launcher
