// The fault and abuse suite, under `ringmaster local up` (optimized build), driven with real
// kubectl; and, but for the floods of the embedded API server, again with `local up`'s kubelet and
// operator joined to a real control plane (envtest). Each test injects faults or floods and checks
// the same things: nothing crashes, no rank gets a second pod, no job is lost, no process outlives
// its job, memory stays bounded.
//   - the operator SIGKILLed 100 times at seeded points while ten jobs are created, run and
//     finish;
//   - a launcher SIGKILLed, then the kubelet SIGKILLed and brought back by `local up`, while
//     their jobs' user commands have left background children behind;
//   - a connection flood and oversized objects against the API server, 200 MB of updates
//     through its watch history, and a flood of strangers against a job's rendezvous store.
// The figures each test prints (kills, pods, RSS) are the README's reliability section.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_cluster.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testutil::eventually;
using testutil::jobPhase;
using testutil::liveProcess;

// A job of `replicas` pods whose user command is `script` (run by sh in every pod).
std::string shellJob(const std::string& name, int replicas, const std::string& script,
                     const std::string& restart_policy) {
  return "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " + name +
         "}\nspec:\n  replicas: " + std::to_string(replicas) +
         "\n  image: ringmaster/trainer:0.1.0\n  command: [\"sh\", \"-c\", \"" + script +
         "\"]\n  restartPolicy: " + restart_policy + "\n  backoffLimit: 3\n";
}

// A TCP connection to ipv4:port (-1 when refused).
int connectTo(const std::string& ipv4, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends what it can of `bytes` (a peer that closed on us is what the flood expects).
void sendSome(int fd, const std::string& bytes) {
  (void)send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string bigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

class AbuseE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }
  void TearDown() override { operator_.reset(); }

  void apply(const std::string& yaml) {
    testutil::ProcessResult r = cluster_.apply(yaml);
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text << yaml;
  }

  std::string dir() const { return cluster_.dataDir(); }
  std::string logs() const {
    return "\n--- operator.log\n" + testutil::readFile(dir() + "/operator.log") +
           "\n--- kubelet.log\n" + testutil::readFile(dir() + "/kubelet.log");
  }

  // Every pod of the cluster's jobs as the API server announces it, once the watch is answered.
  std::unique_ptr<testutil::Process> watchPods() {
    auto watch = std::make_unique<testutil::Process>(
        std::vector<std::string>{cluster_.kubectlPath(), "get", "pods", "-w", "-v=6",
                                 "--no-headers", "-l", "ringmaster.dev/job-name", "-o",
                                 "custom-columns=NAME:.metadata.name,UID:.metadata.uid"},
        cluster_.env());
    watch->start();
    EXPECT_TRUE(eventually(30s, [&] {
      return watch->stderrSoFar().find("watch=true") != std::string::npos;
    })) << watch->stderrSoFar();
    return watch;
  }

  // Stops the pod watch; the uids it saw for each pod name.
  static std::map<std::string, std::set<std::string>> podUids(testutil::Process& watch) {
    watch.signal(SIGTERM);
    testutil::ProcessResult seen = watch.wait(10s);
    return testutil::uidsByPod(seen.stdout_text);
  }

  // The processes of job `name` (its pods' every process carries RINGMASTER_JOB) still alive.
  std::vector<pid_t> processesOf(const std::string& name) const {
    return cluster_.findProcesses("", {{"RINGMASTER_JOB", name}});
  }

  static std::string describe(const std::vector<pid_t>& pids) {
    std::ostringstream out;
    for (pid_t pid : pids) {
      std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
      std::string argv0;
      std::getline(cmd, argv0, '\0');
      out << ' ' << pid << " (" << argv0 << ')';
    }
    return out.str();
  }

  // An operator with `local up`'s flags but no leader election: a restarted one works at once
  // instead of waiting out the killed one's Lease, so a hundred kills fit in a minute.
  void startOperator() {
    operator_ = std::make_unique<testutil::Process>(std::vector<std::string>{
        testutil::binaryPath("bin/ringmaster-operator"), "--kubeconfig", cluster_.kubeconfig(),
        "--bind-address", "127.0.0.1", "--metrics-port", "0", "--health-port", "0",
        "--leader-elect=false"});
    operator_->start();
  }

  // On envtest the kubelet and operator of `local up` join a real API server.
  testutil::LocalCluster cluster_{GetParam()};
  std::unique_ptr<testutil::Process> operator_;
};
INSTANTIATE_TEST_SUITE_P(ControlPlanes, AbuseE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

// Floods of the embedded API server itself: a real one has its own limits, tested upstream.
class EmbeddedApiServerAbuseE2e : public AbuseE2e {};
INSTANTIATE_TEST_SUITE_P(ControlPlanes, EmbeddedApiServerAbuseE2e,
                         ::testing::Values(testutil::ControlPlane::kLocal),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

// Ten jobs of three pods are applied one every ten kills, so the kills land while pods are
// created, run, finish and the jobs' status is written. Afterwards one operator runs to the end.
TEST_P(AbuseE2e, OperatorKilledAHundredTimesNeverDuplicatesAPodNorLosesAJob) {
  constexpr int kKills = 100;
  constexpr int kJobs = 10;
  constexpr int kReplicas = 3;
  auto watch = watchPods();
  ASSERT_EQ(cluster_.killOperator(), "");
  std::mt19937 random(20261126);  // seeded: the same kill points on every run
  std::uniform_int_distribution<int> delay_ms(0, 600);
  int kills = 0;
  for (int i = 0; i < kKills; ++i) {
    if (i % (kKills / kJobs) == 0) {
      ASSERT_NO_FATAL_FAILURE(apply(shellJob("storm-" + std::to_string(i / (kKills / kJobs)),
                                             kReplicas, "sleep 2", "Never")));
    }
    startOperator();
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    operator_->signal(SIGKILL);
    testutil::ProcessResult killed = operator_->wait(30s);
    ASSERT_TRUE(killed.signaled && killed.term_signal == SIGKILL)
        << "kill " << i << ": the operator exited by itself (code " << killed.exit_code << ")\n"
        << killed.stderr_text;
    ++kills;
  }
  startOperator();  // the survivor

  int pods = 0;
  for (int j = 0; j < kJobs; ++j) {
    const std::string name = "storm-" + std::to_string(j);
    SCOPED_TRACE(name);
    nlohmann::json job = cluster_.waitForJob(name, 180s, testutil::jobFinished);
    ASSERT_EQ(jobPhase(job), "Succeeded") << job.dump(2) << operator_->stderrSoFar();
    EXPECT_EQ(job["status"].value("restarts", -1), 0) << job.dump(2);
  }
  EXPECT_TRUE(operator_->running()) << operator_->stderrSoFar();
  std::map<std::string, std::set<std::string>> uids = podUids(*watch);
  std::set<std::string> expected;
  for (int j = 0; j < kJobs; ++j) {
    for (int r = 0; r < kReplicas; ++r) {
      expected.insert("storm-" + std::to_string(j) + "-worker-" + std::to_string(r));
    }
  }
  std::set<std::string> names;
  for (const auto& [pod, ids] : uids) {
    names.insert(pod);
    pods += static_cast<int>(ids.size());
    EXPECT_EQ(ids.size(), 1u) << pod << " was created " << ids.size() << " times";
  }
  EXPECT_EQ(names, expected);
  std::cout << "reliability (" << testutil::controlPlaneName(GetParam()) << "): operator SIGKILLed "
            << kills << " times across " << kJobs << " jobs: " << pods << " pods created for "
            << expected.size() << " ranks, " << kJobs << " of " << kJobs
            << " jobs Succeeded, 0 restarts" << std::endl;
}

// A launcher SIGKILLed restarts its job's gang; the kubelet SIGKILLed and brought back by
// `local up` stops the processes its predecessor left and the job's gang restarts. Both jobs'
// commands leave a background child behind; none of their processes outlives the job, and
// `local down` during a third job leaves none of its processes.
TEST_P(AbuseE2e, KilledLauncherAndKubeletRecoverTheirJobsAndNoProcessOutlivesThemOrLocalDown) {
  // The background sleep would outlive its pod if the kubelet stopped only the container's
  // main process.
  const std::string script = "sleep 987 & sleep 5";
  apply(shellJob("relaunch", 2, script, "OnFailure"));
  apply(shellJob("survivor", 2, script, "OnFailure"));

  // The launcher of relaunch's rank 1, once its command runs.
  pid_t launcher = 0;
  ASSERT_TRUE(eventually(60s, [&] {
    if (cluster_.findProcess("sleep", {{"RINGMASTER_JOB", "relaunch"}}) == 0) return false;
    launcher = cluster_.findProcess("ringmaster-launcher",
                                    {{"RINGMASTER_JOB", "relaunch"}, {"NODE_RANK", "1"}});
    return launcher > 0;
  })) << logs();
  ASSERT_EQ(kill(launcher, SIGKILL), 0);

  // The kubelet, while survivor's pods run.
  ASSERT_TRUE(eventually(60s, [&] {
    return cluster_.findProcess("sleep", {{"RINGMASTER_JOB", "survivor"}}) > 0;
  })) << logs();
  const pid_t kubelet = static_cast<pid_t>(testutil::readNumberFile(dir() + "/kubelet.pid"));
  ASSERT_GT(kubelet, 0);
  ASSERT_EQ(kill(kubelet, SIGKILL), 0);
  ASSERT_TRUE(eventually(30s, [&] { return !liveProcess(kubelet); }));
  ASSERT_EQ(cluster_.start(), "");  // `local up` again: a new kubelet
  EXPECT_NE(testutil::readNumberFile(dir() + "/kubelet.pid"), kubelet);

  for (const std::string name : {"relaunch", "survivor"}) {
    SCOPED_TRACE(name);
    nlohmann::json job = cluster_.waitForJob(name, 180s, testutil::jobFinished);
    ASSERT_EQ(jobPhase(job), "Succeeded") << job.dump(2) << logs();
    EXPECT_GE(job["status"].value("restarts", 0), 1) << job.dump(2);
    // Each rank's pod exists once (the old attempt's are gone).
    nlohmann::json pods = nlohmann::json::parse(
        cluster_.kubectl({"get", "pods", "-l", "ringmaster.dev/job-name=" + name, "-o", "json"})
            .stdout_text,
        nullptr, false);
    ASSERT_TRUE(pods.is_object()) << "kubectl get pods printed no JSON";
    std::set<std::string> names;
    for (const auto& pod : pods["items"]) names.insert(pod["metadata"].value("name", ""));
    EXPECT_EQ(names, (std::set<std::string>{name + "-worker-0", name + "-worker-1"}));
    EXPECT_EQ(pods["items"].size(), 2u);
    std::vector<pid_t> left;
    EXPECT_TRUE(eventually(30s, [&] { return (left = processesOf(name)).empty(); }))
        << name << "'s processes outlived it:" << describe(left);
  }

  // `local down` while a job runs leaves none of its processes either, even one that took a
  // process group of its own (the launcher's SIGTERM to its rank's group does not reach it).
  apply(shellJob("downed", 2, "perl -e 'setpgrp; exec @ARGV' sleep 987 & sleep 300", "Never"));
  ASSERT_TRUE(eventually(60s, [&] {
    return cluster_.findProcesses("sleep", {{"RINGMASTER_JOB", "downed"}}).size() >= 4;
  })) << logs();
  testutil::ProcessResult down = cluster_.stop();
  EXPECT_EQ(down.exit_code, 0) << down.stdout_text << down.stderr_text;
  std::vector<pid_t> left;
  EXPECT_TRUE(eventually(30s, [&] { return (left = processesOf("downed")).empty(); }))
      << "`local down` left processes of a running job:" << describe(left);
  std::cout << "reliability (" << testutil::controlPlaneName(GetParam())
            << "): launcher SIGKILLed and kubelet SIGKILLed + `local up`: both jobs "
               "Succeeded, no process of theirs left; `local down` during a job left none"
            << std::endl;
}

// RSS of `pid` in MiB (0 when it is gone).
long rssMiB(pid_t pid) { return testutil::residentKiB(pid) / 1024; }

// Floods and oversized objects: the API server answers kubectl through them and stays small.
TEST_P(EmbeddedApiServerAbuseE2e,
       ApiServerRefusesOversizedObjectsServesThroughAFloodAndStaysBounded) {
  const pid_t server = static_cast<pid_t>(testutil::readNumberFile(dir() + "/pid"));
  const int port = static_cast<int>(testutil::readNumberFile(dir() + "/port"));
  ASSERT_GT(server, 0);
  ASSERT_GT(port, 0);
  const long rss_before = rssMiB(server);

  // 1,000 connections that never say a word: kubectl still gets in (the idlest make room).
  std::vector<int> flood;
  for (int i = 0; i < 1000; ++i) {
    const int fd = connectTo("127.0.0.1", port);
    if (fd >= 0) flood.push_back(fd);
  }
  testutil::ProcessResult get = cluster_.kubectl({"get", "namespaces"}, 30s);
  EXPECT_EQ(get.exit_code, 0) << "kubectl locked out by " << flood.size()
                              << " idle connections: " << get.stderr_text;
  for (int fd : flood) close(fd);

  // An annotation over Kubernetes' 256 KiB: refused naming the field.
  const std::string big(300 * 1024, 'a');
  testutil::ProcessResult annotated = cluster_.apply(
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotated\n  annotations:\n    "
      "big: " +
      big + "\n");
  EXPECT_NE(annotated.exit_code, 0);
  EXPECT_NE(annotated.stderr_text.find("metadata.annotations"), std::string::npos)
      << annotated.stderr_text;
  // A body over the request limit: a 413 with a Status kubectl can print.
  const std::string huge(10 << 20, 'b');
  {
    const std::string path = dir() + "/huge.yaml";
    std::ofstream(path) << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n  "
                           "x: "
                        << huge << "\n";
    testutil::ProcessResult r = cluster_.kubectl({"create", "-f", path});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.stderr_text.find("too large"), std::string::npos) << r.stderr_text;
  }

  // 200 updates of a 1 MB ConfigMap: 200 MB through the watch history, which keeps 64 MiB of
  // serialized objects. Memory grows while the history fills, then stays: the second 100 MB add
  // next to nothing.
  constexpr int kBatches = 8;
  constexpr int kPerBatch = 25;
  const std::string value(1000 * 1000, 'c');
  ASSERT_EQ(cluster_.kubectl({"create", "configmap", "churn"}).exit_code, 0);
  long rss_half = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    const std::string path = dir() + "/updates.yaml";
    {
      std::ofstream out(path);
      for (int i = 0; i < kPerBatch; ++i) {
        out << "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: churn}\ndata:\n  n: \""
            << batch << "-" << i << "\"\n  x: " << value << "\n";
      }
    }
    testutil::ProcessResult r = cluster_.kubectl({"replace", "-f", path}, 120s);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text.substr(0, 2000);
    if (batch == kBatches / 2 - 1) rss_half = rssMiB(server);
  }
  const long rss_after = rssMiB(server);
  ASSERT_TRUE(liveProcess(server)) << testutil::readFile(dir() + "/apiserver.log");
  EXPECT_EQ(cluster_.kubectl({"get", "configmap", "churn"}).exit_code, 0);
  EXPECT_LT(rss_after - rss_half, 48) << "MiB added by the second " << kBatches * kPerBatch / 2
                                      << " updates (" << rss_half << " -> " << rss_after << " MiB)";
  EXPECT_LT(rss_after - rss_before, 320) << "MiB of growth in all";
  std::cout << "reliability (" << testutil::controlPlaneName(GetParam()) << "): API server RSS "
            << rss_before
            << " MiB before; after 1,000 idle "
               "connections, refused oversized objects and "
            << kBatches * kPerBatch / 2 << " updates of a 1 MB ConfigMap " << rss_half
            << " MiB; after " << kBatches * kPerBatch << ": " << rss_after << " MiB" << std::endl;
}

// Strangers at a running job's rendezvous store: unauthenticated SETs claiming huge values,
// wrong proofs and idle connections are refused; the launcher stays small and the job Succeeds.
TEST_P(AbuseE2e, RendezvousStoreRefusesAFloodOfStrangersAndTheJobStillSucceeds) {
  apply(shellJob("flooded", 2, "sleep 12", "Never"));
  pid_t launcher = 0;
  ASSERT_TRUE(eventually(60s, [&] {
    launcher = cluster_.findProcess("ringmaster-launcher",
                                    {{"RINGMASTER_JOB", "flooded"}, {"NODE_RANK", "0"}});
    return launcher > 0 && cluster_.findProcess("sleep", {{"RINGMASTER_JOB", "flooded"}}) > 0;
  })) << logs();
  nlohmann::json pod = cluster_.get("pod", "flooded-worker-0");
  const std::string ip = pod.value("/status/podIP"_json_pointer, std::string());
  ASSERT_FALSE(ip.empty()) << pod.dump(2);
  constexpr int kStorePort = 29510;  // the launcher's rendezvous store
  const long rss_before = rssMiB(launcher);

  std::vector<int> strangers;
  const std::string chunk(1 << 20, 'v');
  for (int i = 0; i < 300; ++i) {
    const int fd = connectTo(ip, kStorePort);
    ASSERT_GE(fd, 0) << "the store at " << ip << ":" << kStorePort << " refused connection " << i;
    strangers.push_back(fd);
    if (i % 3 == 0) {
      // SET of a 64 MiB value, no AUTH first.
      sendSome(fd, bigEndian32(64u << 20) + std::string(1, '\x01') + chunk);
    } else if (i % 3 == 1) {
      // AUTH with a wrong proof.
      sendSome(fd, bigEndian32(65) + std::string(1, '\x05') + std::string(64, 'p'));
    }  // else: idle, until the auth timeout
  }
  std::this_thread::sleep_for(1s);
  const long rss_flooded = rssMiB(launcher);
  for (int fd : strangers) close(fd);

  nlohmann::json job = cluster_.waitForJob("flooded", 120s, testutil::jobFinished);
  EXPECT_EQ(jobPhase(job), "Succeeded") << job.dump(2) << logs();
  EXPECT_LT(rss_flooded - rss_before, 64) << "MiB of launcher growth under the flood";
  std::cout << "reliability (" << testutil::controlPlaneName(GetParam())
            << "): rendezvous store flooded by 300 strangers (100 unauthenticated "
               "64 MiB SETs, 100 wrong proofs, 100 idle): launcher RSS "
            << rss_before << " -> " << rss_flooded << " MiB, job Succeeded" << std::endl;
}

}  // namespace
}  // namespace ringmaster
