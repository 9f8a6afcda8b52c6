// Drives real ringmaster-launcher binaries as the pods of a job, without Kubernetes: each
// "pod" is a launcher process on 127.0.0.1 with its own health port, sharing MASTER_PORT and
// the store's port.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "process.h"
#include "ringmaster/rendezvous/tcp_store.h"

namespace ringmaster::testutil {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr int kHangExitCode = 142;

// Polls `done` until it holds or `limit` passes (the processes under test give no other signal).
bool eventually(const std::function<bool()>& done, std::chrono::seconds limit = 120s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

std::string writeScript(const TempDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// One job of `nnodes` pods x `procs` processes; pod(i) builds the launcher of pod i.
struct Job {
  int nnodes = 2;
  int procs = 2;
  int attempt = 0;
  int master_port = freePort();
  int store_port = freePort();  // the launcher's rendezvous store, apart from the program's
  std::string name = "ljob";
  std::vector<int> health_ports;

  Job(int nnodes_, int procs_) : nnodes(nnodes_), procs(procs_) {
    for (int i = 0; i < nnodes; ++i) health_ports.push_back(freePort());
  }

  std::unique_ptr<Process> pod(int i, std::vector<std::string> args) const {
    std::vector<std::string> argv = {binaryPath("bin/ringmaster-launcher"),
                                     "--health-port=" + std::to_string(health_ports[i])};
    argv.insert(argv.end(), args.begin(), args.end());
    const char* path = std::getenv("PATH");
    return std::make_unique<Process>(
        argv, std::map<std::string, std::string>{
                  {"NODE_RANK", std::to_string(i)},
                  {"NNODES", std::to_string(nnodes)},
                  {"LOCAL_WORLD_SIZE", std::to_string(procs)},
                  {"WORLD_SIZE", std::to_string(nnodes * procs)},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", std::to_string(master_port)},
                  {"RINGMASTER_STORE_PORT", std::to_string(store_port)},
                  {"RINGMASTER_JOB", name},
                  {"RINGMASTER_ATTEMPT", std::to_string(attempt)},
                  {"RINGMASTER_BACKEND", "gloo"},
                  // The pods share 127.0.0.1: no fixed metrics port (the config's default).
                  {"RINGMASTER_METRICS_PORT", "0"},
                  {"RINGMASTER_STORE_SECRET", "integration-test-secret-0123456789abcdef"},
                  {"POD_NAME", name + "-worker-" + std::to_string(i)},
                  {"POD_IP", "127.0.0.1"},
                  {"PATH", binaryPath("bin") + ":" + (path ? path : "/usr/bin:/bin")}});
  }
  long readyz(int i) const { return httpGet(health_ports[i], "/readyz").status; }
};

// A pod's stderr for a failure message: the trainer's per-step lines left out (a long run
// prints thousands, which would push the launcher's own lines out of CI's log tail).
std::string withoutStepLines(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  int64_t steps = 0;
  while (std::getline(in, line)) {
    if (line.find(" STEP ") != std::string::npos && line.find(" loss ") != std::string::npos) {
      ++steps;
      continue;
    }
    out += line + "\n";
  }
  return out + "(" + std::to_string(steps) + " step lines left out)\n";
}

void expectExit(const ProcessResult& r, int code, const std::string& who) {
  EXPECT_FALSE(r.signaled) << who << " killed by signal " << r.term_signal << "\n"
                           << withoutStepLines(r.stderr_text);
  EXPECT_EQ(r.exit_code, code) << who << "\n" << withoutStepLines(r.stderr_text);
}

std::string trainerConfig(const TempDir& dir, int epochs, int max_steps) {
  const std::string path = dir.path() + "/trainer.yaml";
  std::ofstream(path) << "model:\n  type: mlp\n  hidden: [32]\ndataset:\n  path: "
                      << testutil::kFashionMnistDir << "\nepochs: " << epochs
                      << "\nbatchSize: 32\nmaxSteps: " << max_steps << "\nlogEverySteps: 10\n";
  return path;
}

// A user command sees torchrun's variables, right, in every pod.
TEST(Launcher, UserCommandSeesRankWorldSizeAndMasterAddrInEveryPod) {
  TempDir dir;
  Job job(2, 2);
  const std::string script = writeScript(dir, "check.sh",
                                         "set -e\n"
                                         "test \"$WORLD_SIZE\" = 4\n"
                                         "test \"$LOCAL_WORLD_SIZE\" = 2\n"
                                         "test \"$MASTER_ADDR\" = 127.0.0.1\n"
                                         "test \"$MASTER_PORT\" = " +
                                             std::to_string(job.master_port) +
                                             "\n"
                                             "test \"$RANK\" = $((NODE_RANK * 2 + LOCAL_RANK))\n"
                                             "test \"$RINGMASTER_USE_AGENT_STORE\" = 1\n"
                                             "echo \"$RANK $LOCAL_RANK $NODE_RANK\" > \"" +
                                             dir.path() + "/rank-$RANK\"\n");
  auto pod1 = job.pod(1, {"--", script});
  auto pod0 = job.pod(0, {"--", script});
  pod1->start();
  pod0->start();
  expectExit(pod0->wait(120s), 0, "pod 0");
  expectExit(pod1->wait(120s), 0, "pod 1");
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(readFile(dir.path() + "/rank-" + std::to_string(rank)),
              std::to_string(rank) + " " + std::to_string(rank % 2) + " " +
                  std::to_string(rank / 2) + "\n");
  }
}

// Without Kubernetes: pod 0, which hosts the store, starts last; the real
// trainer trains on 4 ranks and both pods succeed.
TEST(Launcher, PodZeroStartedLastStillRendezvousesAndTrains) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  TempDir dir;
  Job job(2, 2);
  const std::string config = trainerConfig(dir, 1, 20);
  auto pod1 = job.pod(1, {"--trainer-config=" + config});
  pod1->start();
  // Pod 1 is up and waiting for pod 0: not ready.
  ASSERT_TRUE(eventually([&] { return job.readyz(1) != 0; })) << pod1->stderrSoFar();
  EXPECT_EQ(job.readyz(1), 503);
  auto pod0 = job.pod(0, {"--trainer-config=" + config});
  pod0->start();
  ProcessResult r0 = pod0->wait(300s);
  ProcessResult r1 = pod1->wait(300s);
  expectExit(r0, 0, "pod 0");
  expectExit(r1, 0, "pod 1");
  EXPECT_THAT(r0.stderr_text, HasSubstr("done: 0 epochs, 20 steps"));
  EXPECT_THAT(r0.stderr_text, HasSubstr("world size 4, backend gloo"));
  EXPECT_THAT(r1.stderr_text, HasSubstr("rendezvous complete: 2 pod(s) joined ljob/attempt-0"));
}

TEST(Launcher, ReadinessTurnsFrom503To200OnceEveryPodJoined) {
  TempDir dir;
  Job job(2, 1);
  // Processes run until the test releases them, so readiness can be read while they run.
  const std::string script = writeScript(
      dir, "hold.sh", "while [ ! -e \"" + dir.path() + "/release\" ]; do sleep 0.02; done\n");
  auto pod0 = job.pod(0, {"--", script});
  pod0->start();
  ASSERT_TRUE(eventually([&] { return job.readyz(0) != 0; })) << pod0->stderrSoFar();
  EXPECT_EQ(job.readyz(0), 503);
  EXPECT_EQ(httpGet(job.health_ports[0], "/healthz").status, 200);
  auto pod1 = job.pod(1, {"--", script});
  pod1->start();
  EXPECT_TRUE(eventually([&] { return job.readyz(0) == 200; })) << pod0->stderrSoFar();
  EXPECT_TRUE(eventually([&] { return job.readyz(1) == 200; })) << pod1->stderrSoFar();
  std::ofstream(dir.path() + "/release") << "go\n";
  expectExit(pod0->wait(120s), 0, "pod 0");
  expectExit(pod1->wait(120s), 0, "pod 1");
}

// The store still holds attempt 0's complete registration (both pods joined it);
// attempt 1's pod 1 must not pass its barrier on those keys.
TEST(Launcher, StaleKeysFromAttemptZeroDoNotPassAttemptOnesBarrier) {
  TempDir dir;
  Job job(2, 1);
  job.attempt = 1;
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", job.store_port,
                                                  "integration-test-secret-0123456789abcdef");
  ASSERT_TRUE(server.ok()) << server.status().toString();
  auto client = rendezvous::TcpStoreClient::connect(
      "127.0.0.1", job.store_port, "integration-test-secret-0123456789abcdef", 10s);
  ASSERT_TRUE(client.ok()) << client.status().toString();
  for (const char* key :
       {"ljob/attempt-0/launcher/store-host", "ljob/attempt-1/launcher/store-host"})
    ASSERT_TRUE((*client)->set(key, rendezvous::toBytes("pod 0")).ok());
  for (int i = 0; i < 2; ++i) {
    const std::string info = "node_rank=" + std::to_string(i) +
                             " host=old ip= first_rank=" + std::to_string(i) +
                             " local_world_size=1";
    ASSERT_TRUE(
        (*client)
            ->set("ljob/attempt-0/launcher/node/" + std::to_string(i), rendezvous::toBytes(info))
            .ok());
  }
  const std::string marker = dir.path() + "/ran";
  const std::string script = writeScript(dir, "mark.sh", "touch \"" + marker + "\"\n");
  auto pod1 = job.pod(1, {"--rendezvous-timeout-seconds=3", "--", script});
  pod1->start();
  ProcessResult r = pod1->wait(120s);
  expectExit(r, kHangExitCode, "pod 1 of attempt 1");
  EXPECT_THAT(r.stderr_text, HasSubstr("pod(s) 0 did not join"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command must not run without the gang";
}

// A trainer frozen by SIGSTOP mid-training is named by every launcher, and every
// launcher exits with the retryable hang code.
TEST(Launcher, FrozenTrainerIsNamedByBothLaunchersWhichExitRetryable) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  TempDir dir;
  Job job(2, 2);
  const std::string config = trainerConfig(dir, 1000, 0);
  const std::vector<std::string> args = {"--trainer-config=" + config, "--hang-timeout-seconds=4",
                                         "--grace-seconds=5"};
  auto pod0 = job.pod(0, args);
  auto pod1 = job.pod(1, args);
  pod0->start();
  pod1->start();
  // Training is under way once rank 0 logged step 20.
  ASSERT_TRUE(eventually([&] {
    return pod0->stderrSoFar().find("step 20 loss") != std::string::npos;
  })) << pod0->stderrSoFar()
      << pod1->stderrSoFar();
  // std::regex would do, but trips GCC 12's -Wmaybe-uninitialized under the sanitizers.
  const std::string log1 = pod1->stderrSoFar();
  const std::string started = "started rank 3 (pid ";
  const size_t at = log1.find(started);
  ASSERT_NE(at, std::string::npos) << log1;
  const pid_t rank3 = static_cast<pid_t>(std::stol(log1.substr(at + started.size())));
  ASSERT_EQ(kill(rank3, SIGSTOP), 0);
  ProcessResult r0 = pod0->wait(300s);
  ProcessResult r1 = pod1->wait(300s);
  expectExit(r0, kHangExitCode, "pod 0");
  expectExit(r1, kHangExitCode, "pod 1");
  EXPECT_THAT(r0.stderr_text, HasSubstr("rank 3 (pod 1) stuck at step"));
  EXPECT_THAT(r1.stderr_text, HasSubstr("rank 3 (pod 1) stuck at step"));
}

// The hang was judged by another pod, which stopped its processes; ours then fail because
// their peers vanished. This pod must report the hang (and its retryable code), not the failure.
TEST(Launcher, ProcessFailureAfterAnotherPodsHangVerdictReportsTheHang) {
  TempDir dir;
  Job job(2, 1);
  // The test plays pod 0: it hosts the store and registers pod 0.
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", job.store_port,
                                                  "integration-test-secret-0123456789abcdef");
  ASSERT_TRUE(server.ok()) << server.status().toString();
  auto client = rendezvous::TcpStoreClient::connect(
      "127.0.0.1", job.store_port, "integration-test-secret-0123456789abcdef", 10s);
  ASSERT_TRUE(client.ok()) << client.status().toString();
  ASSERT_TRUE(
      (*client)->set("ljob/attempt-0/launcher/store-host", rendezvous::toBytes("pod 0")).ok());
  ASSERT_TRUE((*client)
                  ->set("ljob/attempt-0/launcher/node/0",
                        rendezvous::toBytes(
                            "node_rank=0 host=ljob-worker-0 ip= first_rank=0 local_world_size=1"))
                  .ok());
  const std::string release = dir.path() + "/release";
  const std::string script = writeScript(
      dir, "peer_gone.sh", "while [ ! -e \"" + release + "\" ]; do sleep 0.02; done\nexit 1\n");
  auto pod1 = job.pod(1, {"--", script});
  pod1->start();
  ASSERT_TRUE(eventually([&] { return job.readyz(1) == 200; })) << pod1->stderrSoFar();
  const std::string verdict = "rank 0 (pod 0) stuck at step 5 for 9 s (no heartbeat for 9 s)";
  ASSERT_TRUE((*client)->set("ljob/attempt-0/launcher/hang", rendezvous::toBytes(verdict)).ok());
  std::ofstream(release) << "go\n";
  ProcessResult r = pod1->wait(120s);
  expectExit(r, kHangExitCode, "pod 1");
  EXPECT_THAT(r.stderr_text, HasSubstr(verdict + " (published by another pod"));
}

TEST(Launcher, SigtermIsForwardedToEveryProcessAndExitIs143) {
  TempDir dir;
  Job job(1, 2);
  const std::string script = writeScript(dir, "term.sh",
                                         "trap 'touch \"" + dir.path() +
                                             "/term-$RANK\"; exit 0' TERM\n"
                                             "touch \"" +
                                             dir.path() +
                                             "/up-$RANK\"\n"
                                             "while :; do sleep 0.02; done\n");
  auto pod0 = job.pod(0, {"--", script});
  pod0->start();
  ASSERT_TRUE(eventually([&] {
    return std::filesystem::exists(dir.path() + "/up-0") &&
           std::filesystem::exists(dir.path() + "/up-1");
  })) << pod0->stderrSoFar();
  pod0->signal(SIGTERM);
  ProcessResult r = pod0->wait(120s);
  expectExit(r, 143, "pod 0");
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/term-0")) << r.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/term-1")) << r.stderr_text;
}

TEST(Launcher, FailingProcessExitCodeBecomesThePodsExitCode) {
  TempDir dir;
  Job job(1, 2);
  // Local rank 1 fails; local rank 0 would run for ten minutes and must be stopped.
  const std::string script =
      writeScript(dir, "fail.sh", "if [ \"$LOCAL_RANK\" = 1 ]; then exit 7; fi\nexec sleep 600\n");
  auto pod0 = job.pod(0, {"--grace-seconds=2", "--", script});
  pod0->start();
  ProcessResult r = pod0->wait(120s);
  expectExit(r, 7, "pod 0");
  EXPECT_THAT(r.stderr_text, HasSubstr("rank 1 exited with code 7"));
}

TEST(Launcher, BadEnvironmentIsExitOneNamingTheVariableAndBadFlagExitTwo) {
  Job job(2, 2);
  auto r = run({binaryPath("bin/ringmaster-launcher"), "--", "/bin/true"},
               {{"NNODES", "2"}, {"LOCAL_WORLD_SIZE", "2"}, {"WORLD_SIZE", "2"}});
  expectExit(r, 1, "launcher");
  EXPECT_THAT(r.stderr_text, HasSubstr("WORLD_SIZE=2 must be NNODES * LOCAL_WORLD_SIZE"));
  // MPI mode without the job's SSH Secret: bad input, named.
  auto mpi =
      run({binaryPath("bin/ringmaster-launcher"), "--ssh-dir=/nonexistent/ssh", "--", "/bin/true"},
          {{"RINGMASTER_LAUNCHER_MODE", "mpi"}});
  expectExit(mpi, 1, "launcher");
  EXPECT_THAT(mpi.stderr_text, HasSubstr("MPI mode: authorized keys /nonexistent/ssh"));
  auto bad_mode = run({binaryPath("bin/ringmaster-launcher"), "--", "/bin/true"},
                      {{"RINGMASTER_LAUNCHER_MODE", "slurm"}});
  expectExit(bad_mode, 1, "launcher");
  EXPECT_THAT(bad_mode.stderr_text, HasSubstr("RINGMASTER_LAUNCHER_MODE='slurm'"));
  auto bad_flag_mode =
      run({binaryPath("bin/ringmaster-launcher"), "--mode=slurm", "--", "/bin/true"});
  expectExit(bad_flag_mode, 1, "launcher");
  EXPECT_THAT(bad_flag_mode.stderr_text, HasSubstr("--mode=slurm must be native or mpi"));
  auto usage = run({binaryPath("bin/ringmaster-launcher"), "--no-such-flag"});
  expectExit(usage, 2, "launcher");
  auto help = run({binaryPath("bin/ringmaster-launcher"), "--help"});
  expectExit(help, 0, "launcher");
  EXPECT_THAT(help.stdout_text, HasSubstr("--hang-timeout-seconds"));
}

constexpr char kNssWrapper[] = "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so";

// Two pods in MPI mode as the local cluster runs them: each on its own loopback address with
// its own sshd, names resolved through nss_wrapper and a hosts file, and the job's SSH key pair
// and hostfile in the shapes the operator writes.
class LauncherMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* needed :
         {"/usr/sbin/sshd", "/usr/bin/ssh-keygen", "/usr/bin/mpirun", kNssWrapper}) {
      if (!std::filesystem::exists(needed)) GTEST_SKIP() << needed << " not installed";
    }
    std::filesystem::create_directories(sshDir());
    // The operator's Secret: an ECDSA P-521 pair, the public key also as authorized_keys.
    ProcessResult keygen = run({"/usr/bin/ssh-keygen", "-q", "-t", "ecdsa", "-b", "521", "-N", "",
                                "-f", sshDir() + "/id_ecdsa"});
    ASSERT_EQ(keygen.exit_code, 0) << keygen.stderr_text;
    std::filesystem::copy_file(sshDir() + "/id_ecdsa.pub", sshDir() + "/authorized_keys");
    std::string hosts, hostfile;
    for (int i = 0; i < 2; ++i) {
      hosts += ips_[i] + " " + host(i) + "\n";
      hostfile += host(i) + " slots=1\n";
    }
    std::ofstream(dir_.path() + "/hosts") << hosts;
    std::ofstream(dir_.path() + "/hostfile") << hostfile;
  }

  std::string sshDir() const { return dir_.path() + "/ssh"; }
  static std::string host(int i) { return "ljob-worker-" + std::to_string(i) + ".ljob.ns.svc"; }

  std::unique_ptr<Process> pod(int i, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {binaryPath("bin/ringmaster-launcher"),
                                     "--health-port=" + std::to_string(job_.health_ports[i]),
                                     "--ssh-dir=" + sshDir(),
                                     "--hostfile=" + dir_.path() + "/hostfile",
                                     "--ssh-port=" + std::to_string(ssh_port_),
                                     "--rendezvous-timeout-seconds=120",
                                     "--grace-seconds=5"};
    argv.insert(argv.end(), args.begin(), args.end());
    const char* path = std::getenv("PATH");
    const char* asan = std::getenv("ASAN_OPTIONS");
    return std::make_unique<Process>(
        argv, std::map<std::string, std::string>{
                  {"RINGMASTER_LAUNCHER_MODE", "mpi"},
                  {"NODE_RANK", std::to_string(i)},
                  {"NNODES", "2"},
                  {"LOCAL_WORLD_SIZE", "1"},
                  {"WORLD_SIZE", "2"},
                  {"MASTER_ADDR", host(0)},
                  {"MASTER_PORT", std::to_string(job_.master_port)},
                  {"RINGMASTER_STORE_PORT", std::to_string(job_.store_port)},
                  {"RINGMASTER_JOB", job_.name},
                  {"RINGMASTER_ATTEMPT", "0"},
                  {"RINGMASTER_BACKEND", "auto"},
                  {"RINGMASTER_STORE_SECRET", "integration-test-secret-0123456789abcdef"},
                  {"POD_NAME", job_.name + "-worker-" + std::to_string(i)},
                  {"POD_IP", ips_[i]},
                  {"LD_PRELOAD", kNssWrapper},
                  {"NSS_WRAPPER_HOSTS", dir_.path() + "/hosts"},
                  // As the local kubelet runs pods: sanitizer runtimes refuse the preloaded
                  // library's link order and its RTLD_DEEPBIND dlopen of libc. Open MPI leaks in
                  // its own init (see comm_mpi_test), so ranks of a sanitizer build skip leaks.
                  {"NSS_WRAPPER_DISABLE_DEEPBIND", "1"},
                  {"ASAN_OPTIONS", std::string(asan ? asan : "") + (asan ? ":" : "") +
                                       "verify_asan_link_order=0:detect_leaks=0"},
                  {"PATH", binaryPath("bin") + ":" + (path ? path : "/usr/bin:/bin")}});
  }

  TempDir dir_;
  Job job_{2, 1};
  int ssh_port_ = freePort();
  std::vector<std::string> ips_ = {"127.1.0.10", "127.1.0.11"};
};

// Without Kubernetes: pod 0 runs mpirun; the real trainer trains with the MPI
// backend on 2 ranks, one per pod; both pods succeed.
TEST_F(LauncherMpi, RunsTheTrainerThroughMpirunAcrossTwoPods) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::string config = trainerConfig(dir_, 1, 10);
  auto pod0 = pod(0, {"--trainer-config=" + config});
  auto pod1 = pod(1, {"--trainer-config=" + config});
  // Pod 0 first: it waits for pod 1's sshd, which comes later.
  pod0->start();
  pod1->start();
  ProcessResult r0 = pod0->wait(300s);
  ProcessResult r1 = pod1->wait(300s);
  expectExit(r0, 0, "pod 0");
  expectExit(r1, 0, "pod 1");
  EXPECT_THAT(r0.stderr_text, HasSubstr("sshd of " + host(1) + " answers"));
  EXPECT_THAT(r0.stderr_text, HasSubstr("world size 2, backend mpi"));
  EXPECT_THAT(r0.stderr_text, HasSubstr("done: 0 epochs, 10 steps"));
  EXPECT_THAT(r0.stderr_text, HasSubstr("mpirun succeeded; exiting 0"));
  EXPECT_THAT(r1.stderr_text, HasSubstr("pod 0's mpirun succeeded; exiting 0"));
}

// Ranks start through each pod's sshd: they see their own pod's environment (POD_IP), the job's
// variables from mpirun, and Open MPI's rank.
TEST_F(LauncherMpi, EveryRankRunsInItsOwnPodWithTheJobsVariables) {
  const std::string script = writeScript(dir_, "where.sh",
                                         "set -e\n"
                                         "test \"$OMPI_COMM_WORLD_SIZE\" = 2\n"
                                         "test \"$RINGMASTER_JOB\" = ljob\n"
                                         "test \"$RINGMASTER_BACKEND\" = mpi\n"
                                         "echo \"$OMPI_COMM_WORLD_RANK $POD_IP $POD_NAME\" > \"" +
                                             dir_.path() + "/rank-$OMPI_COMM_WORLD_RANK\"\n");
  auto pod1 = pod(1, {"--", script});
  auto pod0 = pod(0, {"--", script});
  pod1->start();
  pod0->start();
  expectExit(pod0->wait(120s), 0, "pod 0");
  expectExit(pod1->wait(120s), 0, "pod 1");
  EXPECT_EQ(readFile(dir_.path() + "/rank-0"), "0 127.1.0.10 ljob-worker-0\n");
  EXPECT_EQ(readFile(dir_.path() + "/rank-1"), "1 127.1.0.11 ljob-worker-1\n");
}

TEST_F(LauncherMpi, FailingRanksCodeBecomesEveryPodsExitCode) {
  const std::string script =
      writeScript(dir_, "fail.sh", "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then exit 7; fi\n");
  auto pod0 = pod(0, {"--", script});
  auto pod1 = pod(1, {"--", script});
  pod0->start();
  pod1->start();
  ProcessResult r0 = pod0->wait(120s);
  ProcessResult r1 = pod1->wait(120s);
  expectExit(r0, 7, "pod 0");
  expectExit(r1, 7, "pod 1");
  EXPECT_THAT(r1.stderr_text, HasSubstr("pod 0's mpirun exited with code 7"));
}

TEST_F(LauncherMpi, SigtermToPodZeroStopsEveryRankAndEveryPodExits143) {
  const std::string script = writeScript(dir_, "spin.sh",
                                         "echo $$ > \"" + dir_.path() +
                                             "/pid-$OMPI_COMM_WORLD_RANK\"\n"
                                             "while :; do sleep 0.05; done\n");
  auto pod0 = pod(0, {"--", script});
  auto pod1 = pod(1, {"--", script});
  pod0->start();
  pod1->start();
  auto pidOf = [&](int rank) -> pid_t {
    const std::string text = readFile(dir_.path() + "/pid-" + std::to_string(rank));
    return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
  };
  ASSERT_TRUE(eventually([&] { return pidOf(0) > 0 && pidOf(1) > 0; }))
      << pod0->stderrSoFar() << pod1->stderrSoFar();
  const pid_t rank0 = pidOf(0), rank1 = pidOf(1);
  pod0->signal(SIGTERM);
  ProcessResult r0 = pod0->wait(120s);
  ProcessResult r1 = pod1->wait(120s);
  expectExit(r0, 143, "pod 0");
  expectExit(r1, 143, "pod 1");
  // Nothing of the job is left running on either pod.
  EXPECT_TRUE(eventually([&] { return kill(rank0, 0) != 0 && kill(rank1, 0) != 0; }, 30s));
}

// The pid of a process whose environment holds every one of `vars` ("NAME=value"), e.g. an MPI
// rank, which no launcher started itself; 0 when there is none.
pid_t findProcessWithEnv(const std::vector<std::string>& vars) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    env.insert(env.begin(), '\0');
    bool all = true;
    for (const std::string& v : vars) all = all && env.find('\0' + v + '\0') != std::string::npos;
    if (all) return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

// Hang detection in MPI mode: ranks heartbeat into the launchers' store as in native mode; a
// rank frozen by SIGSTOP is named by both launchers, which exit with the retryable code.
TEST_F(LauncherMpi, FrozenRankIsNamedByBothLaunchersWhichExitRetryable) {
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::string config = trainerConfig(dir_, 1000, 0);
  const std::vector<std::string> args = {"--trainer-config=" + config, "--hang-timeout-seconds=4"};
  auto pod0 = pod(0, args);
  auto pod1 = pod(1, args);
  pod0->start();
  pod1->start();
  ASSERT_TRUE(eventually([&] {
    return pod0->stderrSoFar().find("step 20 loss") != std::string::npos;
  })) << pod0->stderrSoFar()
      << pod1->stderrSoFar();
  const pid_t rank1 = findProcessWithEnv(
      {"OMPI_COMM_WORLD_RANK=1", "MASTER_PORT=" + std::to_string(job_.master_port)});
  ASSERT_GT(rank1, 0) << "rank 1 not found";
  std::string rank1_cmd = readFile("/proc/" + std::to_string(rank1) + "/cmdline");
  std::replace(rank1_cmd.begin(), rank1_cmd.end(), '\0', ' ');
  ASSERT_EQ(kill(rank1, SIGSTOP), 0);
  // A 4 s hang timeout and 5 s of grace: a minute is ample even on a loaded machine.
  ProcessResult r0 = pod0->wait(90s);
  ProcessResult r1 = pod1->wait(90s);
  const std::string stopped =
      "pod 0 (stopped pid " + std::to_string(rank1) + ": " + rank1_cmd + ")";
  expectExit(r0, kHangExitCode, stopped);
  expectExit(r1, kHangExitCode, "pod 1");
  EXPECT_THAT(r0.stderr_text, HasSubstr("rank 1 (pod 1) stuck at step"));
  EXPECT_THAT(r1.stderr_text, HasSubstr("rank 1 (pod 1) stuck at step"));
  EXPECT_TRUE(eventually([&] { return kill(rank1, 0) != 0; }, 30s)) << "rank 1 still runs";
}

}  // namespace
}  // namespace ringmaster::testutil
