// ringmaster-trainer's parameter-server mode as plain processes: ranks 0 and 1 train (rank 0
// hosts the rendezvous store), rank 2 serves the parameters, over TCP. Checks that every
// process exits 0 and that worker 0's final test accuracy shows learning, and that a worker
// killed and started again rejoins while the others go on, and that under async a fast worker
// takes the steps a straggler does not (the PsFaults cases, which train longer: ctest runs them as
// ps_fault_test, with the training tests); prints sync parameter-server throughput beside
// allreduce's for the same job (not asserted).

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "process.h"

namespace ringmaster::testutil {
namespace {

std::string trainer() { return binaryPath("bin/ringmaster-trainer"); }

// The same small job for every rank: an MLP, batch 64 per worker, `epochs` epochs (one is 469
// steps per worker with two workers).
std::vector<std::string> job(std::vector<std::string> extra, const std::string& epochs = "1") {
  std::vector<std::string> argv = {trainer(),
                                   "--data",
                                   kFashionMnistDir,
                                   "--hidden",
                                   "128",
                                   "--batch-size",
                                   "64",
                                   "--epochs",
                                   epochs,
                                   "--lr",
                                   "0.05",
                                   "--momentum",
                                   "0.9",
                                   "--blas-threads",
                                   "1",
                                   "--log-every-steps",
                                   "50",
                                   "--rendezvous-timeout-seconds",
                                   "60"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::map<std::string, std::string> rankEnv(int rank, int world, int port) {
  return {{"RANK", std::to_string(rank)},     {"WORLD_SIZE", std::to_string(world)},
          {"MASTER_ADDR", "127.0.0.1"},       {"MASTER_PORT", std::to_string(port)},
          {"RINGMASTER_USE_AGENT_STORE", ""}, {"RINGMASTER_JOB", "ps-test"}};
}

// Starts `world` ranks of `argv`, meeting at rank 0's store on `port`.
std::vector<std::unique_ptr<Process>> startWorld(const std::vector<std::string>& argv, int world,
                                                 int port) {
  std::vector<std::unique_ptr<Process>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::make_unique<Process>(argv, rankEnv(r, world, port)));
    ranks.back()->start();
  }
  return ranks;
}

// Waits for every rank, in rank order.
std::vector<ProcessResult> waitAll(std::vector<std::unique_ptr<Process>>& ranks) {
  std::vector<ProcessResult> results;
  for (auto& p : ranks) results.push_back(p->wait(std::chrono::seconds(240)));
  return results;
}

// Starts `world` ranks of `argv` and waits for all of them.
std::vector<ProcessResult> runWorld(const std::vector<std::string>& argv, int world) {
  std::vector<std::unique_ptr<Process>> ranks = startWorld(argv, world, freePort());
  return waitAll(ranks);
}

// The number after `label` in the last line that has it; -1 when none does.
double figureAfter(const std::string& text, const std::string& label) {
  const size_t at = text.rfind(label);
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + label.size());
}

void expectAllExitZero(const std::vector<ProcessResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_FALSE(results[r].signaled) << results[r].stderr_text;
    EXPECT_EQ(results[r].exit_code, 0) << results[r].stderr_text;
  }
}

// Whether `p` wrote `text` to its stderr within two minutes (false once it exits without).
bool waitForLine(Process& p, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && p.running() &&
         p.stderrSoFar().find(text) == std::string::npos)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a live process
  return p.stderrSoFar().find(text) != std::string::npos;
}

// Two workers, one server: worker 0 (rank 0) reports the final parameters' test accuracy.
void trainsAndReports(const std::string& consistency) {
  auto results = runWorld(job({"--ps-servers", "1", "--ps-consistency", consistency}), 3);
  expectAllExitZero(results);
  const std::string& server = results[2].stderr_text;
  EXPECT_NE(server.find("listening on 127.0.0.1:"), std::string::npos) << server;
  EXPECT_NE(server.find("worker 0 left"), std::string::npos) << server;
  EXPECT_NE(server.find("worker 1 left"), std::string::npos) << server;
  EXPECT_NE(server.find("done, every worker left"), std::string::npos) << server;
  const std::string& worker0 = results[0].stderr_text;
  EXPECT_NE(worker0.find("epoch 1 step 450 loss"), std::string::npos) << worker0;
  EXPECT_NE(worker0.find("done: 1 epochs, 469 steps, test accuracy "), std::string::npos)
      << worker0;
  const double accuracy = figureAfter(worker0, "test accuracy ");
  EXPECT_GT(accuracy, 70) << worker0;
  EXPECT_EQ(results[1].stderr_text.find("test accuracy"), std::string::npos)
      << "only worker 0 evaluates:\n"
      << results[1].stderr_text;
}

TEST(PsTrainer, SyncOneServerTwoWorkersLearns) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  trainsAndReports("sync");
}

TEST(PsTrainer, BoundedStalenessTwoLearns) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  trainsAndReports("2");
}

TEST(PsTrainer, NoWorkerLeftIsAUsageErrorNamingTheFlag) {
  auto r = run({trainer(), "--ps-servers", "1"}, rankEnv(0, 1, freePort()));
  EXPECT_FALSE(r.signaled) << r.stderr_text;
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("--ps-servers 1 in a world of 1"), std::string::npos)
      << r.stderr_text;
  auto bad =
      run({trainer(), "--ps-servers", "1", "--ps-consistency", "often"}, rankEnv(1, 2, freePort()));
  EXPECT_EQ(bad.exit_code, 2) << bad.stderr_text;
  EXPECT_NE(bad.stderr_text.find("--ps-consistency"), std::string::npos) << bad.stderr_text;
}

// SIGTERM mid-training: the server and both workers stop and exit 143.
TEST(PsTrainer, SigtermStopsServerAndWorkers) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::vector<std::string> argv = job({"--ps-servers", "1"}, "50");
  std::vector<std::unique_ptr<Process>> ranks = startWorld(argv, 3, freePort());
  ASSERT_TRUE(waitForLine(*ranks[0], "step 50 loss")) << ranks[0]->stderrSoFar() << "\nserver:\n"
                                                      << ranks[2]->stderrSoFar();
  // Workers first, as a pod's deletion would reach them about together.
  ranks[0]->signal(SIGTERM);
  ranks[1]->signal(SIGTERM);
  ranks[2]->signal(SIGTERM);
  for (size_t r = 0; r < ranks.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    auto result = ranks[r]->wait(std::chrono::seconds(60));
    EXPECT_FALSE(result.signaled) << result.stderr_text;
    EXPECT_EQ(result.exit_code, 143) << result.stderr_text;
  }
}

// A worker killed mid-run (SIGKILL: no LEAVE) and started again: the server drops it at once,
// so worker 0 goes on alone under sync instead of waiting; the new process finds itself gone
// from the server and rejoins at worker 0's step. Nothing else restarts, and worker 0 finishes.
TEST(PsFaults, AKilledWorkerStartedAgainRejoinsWhileTheOthersGoOn) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  // 10 epochs (4,690 steps): worker 0 is far from done when worker 1 comes back.
  const std::vector<std::string> argv =
      job({"--ps-servers", "1", "--ps-consistency", "sync"}, "10");
  const int port = freePort();
  std::vector<std::unique_ptr<Process>> ranks = startWorld(argv, 3, port);
  ASSERT_TRUE(waitForLine(*ranks[0], "step 100 loss")) << ranks[0]->stderrSoFar() << "\nserver:\n"
                                                       << ranks[2]->stderrSoFar();
  ranks[1]->signal(SIGKILL);
  const ProcessResult killed = ranks[1]->wait(std::chrono::seconds(30));
  EXPECT_TRUE(killed.signaled) << killed.stderr_text;
  ASSERT_TRUE(waitForLine(*ranks[2], "worker 1 (")) << ranks[2]->stderrSoFar();

  Process again(argv, rankEnv(1, 3, port));
  again.start();
  const ProcessResult rejoined = again.wait(std::chrono::seconds(240));
  EXPECT_FALSE(rejoined.signaled) << rejoined.stderr_text;
  EXPECT_EQ(rejoined.exit_code, 0) << rejoined.stderr_text;
  EXPECT_NE(rejoined.stderr_text.find("rejoined 1 parameter server(s) at step "), std::string::npos)
      << rejoined.stderr_text;
  for (int r : {0, 2}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const ProcessResult result = ranks[static_cast<size_t>(r)]->wait(std::chrono::seconds(240));
    EXPECT_FALSE(result.signaled) << result.stderr_text;
    EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  }
  const std::string server = ranks[2]->stderrSoFar();
  EXPECT_NE(server.find("dropped its connection without LEAVE"), std::string::npos) << server;
  // The step it rejoined at is the one worker 0 had reached, not 0: nothing was trained twice.
  const double step = figureAfter(server, "worker 1 rejoined at step ");
  EXPECT_GT(step, 100) << server;
  EXPECT_NE(server.find("done, every worker left"), std::string::npos) << server;
  const std::string worker0 = ranks[0]->stderrSoFar();
  EXPECT_NE(worker0.find("done: 10 epochs, 4690 steps, test accuracy "), std::string::npos)
      << worker0;
  EXPECT_GT(figureAfter(worker0, "test accuracy "), 75) << worker0;
}

// The server SIGKILLed mid-run, after it wrote checkpoints every 100 steps: its workers fail (it
// is gone), and the next attempt's world (a new store, as a gang restart's) resumes at the newest
// step the server saved, not at 0; it loses at most the steps since, and worker 0 finishes the
// run's steps with the accuracy of an unbroken run.
TEST(PsFaults, AKilledServerIsBroughtBackFromItsCheckpointAndTheRunResumesThere) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  TempDir dir;
  const std::vector<std::string> argv =
      job({"--ps-servers", "1", "--ps-consistency", "sync", "--checkpoint-dir", dir.path(),
           "--checkpoint-every", "100"},
          "4");
  std::vector<std::unique_ptr<Process>> ranks = startWorld(argv, 3, freePort());
  const std::string saved = dir.path() + "/ps-server-0-of-1/" + "ckpt-000000000300.rmck";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (!std::filesystem::exists(saved) && std::chrono::steady_clock::now() < deadline &&
         ranks[2]->running())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling the server's files
  ASSERT_TRUE(std::filesystem::exists(saved)) << ranks[2]->stderrSoFar();
  ranks[2]->signal(SIGKILL);
  std::vector<ProcessResult> first = waitAll(ranks);
  EXPECT_TRUE(first[2].signaled);
  // Worker 0's last logged step before the server went (every 50 steps).
  const double reached = figureAfter(first[0].stderr_text, " step ");
  for (int r : {0, 1}) EXPECT_NE(first[static_cast<size_t>(r)].exit_code, 0);

  std::vector<std::unique_ptr<Process>> again = startWorld(argv, 3, freePort());
  std::vector<ProcessResult> second = waitAll(again);
  expectAllExitZero(second);
  const double resumed =
      figureAfter(second[2].stderr_text, "resuming from its checkpoint at step ");
  EXPECT_GE(resumed, 300) << second[2].stderr_text;
  EXPECT_LE(resumed, reached + 100) << "resumed past where worker 0 was";
  EXPECT_GE(resumed, reached - 150) << "lost more than the checkpoint interval (and one log "
                                       "interval) of steps: worker 0 had reached "
                                    << reached;
  const std::string& worker0 = second[0].stderr_text;
  EXPECT_EQ(figureAfter(worker0, "resumed from the parameter servers' checkpoint at step "),
            resumed)
      << worker0;
  EXPECT_NE(worker0.find("done: 4 epochs, 1876 steps, test accuracy "), std::string::npos)
      << worker0;
  EXPECT_GT(figureAfter(worker0, "test accuracy "), 80) << worker0;
  std::printf(
      "server killed near step %.0f (after its checkpoint of step 300); the next attempt "
      "resumed at step %.0f\n",
      reached, resumed);
}

// Async with worker 1 at half speed (stopped and continued every 20 ms): the run is the servers'
// steps x workers pushes, whoever pushes them, so worker 0 takes more of them than the straggler
// and both stop once the servers have them all.
TEST(PsFaults, UnderAsyncAFastWorkerTakesTheStepsAStragglerDoesNotGetTo) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::vector<std::string> argv = job({"--ps-servers", "1", "--ps-consistency", "async"});
  std::vector<std::unique_ptr<Process>> ranks = startWorld(argv, 3, freePort());
  std::atomic<bool> straggling{true};
  std::thread straggler([&] {
    while (straggling && ranks[1]->running()) {
      ranks[1]->signal(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ranks[1]->signal(SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<ProcessResult> results = waitAll(ranks);
  straggling = false;
  straggler.join();
  expectAllExitZero(results);
  const double fast = figureAfter(results[0].stderr_text, "ps worker 0: ");
  const double slow = figureAfter(results[1].stderr_text, "ps worker 1: ");
  // One epoch is 469 steps a worker: 938 pushes, give or take the one in flight when they ended.
  EXPECT_GE(fast + slow, 938) << results[0].stderr_text << results[1].stderr_text;
  EXPECT_LE(fast + slow, 939) << results[0].stderr_text << results[1].stderr_text;
  std::printf("async, worker 1 at half speed: worker 0 trained %.0f steps, worker 1 %.0f\n", fast,
              slow);
  EXPECT_GT(fast, slow) << "worker 0 " << fast << " steps, the straggler " << slow;
  EXPECT_GT(figureAfter(results[0].stderr_text, "test accuracy "), 70) << results[0].stderr_text;
}

// An elastic job's world (RINGMASTER_WORKER_PODS): 3 worker slots and a server, 2 workers at the
// start. A third worker joins mid-run (the job scaled up) and the second is stopped (scaled
// down); the servers never wait for the empty slot, take the newcomer at their step, drop the
// one that left, and the run ends after the data set's batches x epochs pushes, whoever made
// them, with the accuracy of a run that never scaled.
TEST(PsElastic, WorkersJoinAndLeaveWhileTheRunGoesOn) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::vector<std::string> argv =
      job({"--ps-servers", "1", "--ps-consistency", "async"}, "6");
  const int port = freePort();
  auto elasticEnv = [port](int rank, int worker_pods) {
    std::map<std::string, std::string> env = rankEnv(rank, 4, port);
    env["NNODES"] = "4";
    env["RINGMASTER_WORKER_PODS"] = std::to_string(worker_pods);
    return env;
  };
  std::vector<std::unique_ptr<Process>> ranks;
  for (int r : {0, 1, 3}) {
    ranks.push_back(std::make_unique<Process>(argv, elasticEnv(r, 2)));
    ranks.back()->start();
  }
  Process& server = *ranks[2];
  ASSERT_TRUE(waitForLine(*ranks[0], "step 100 loss")) << ranks[0]->stderrSoFar() << "\nserver:\n"
                                                       << server.stderrSoFar();
  EXPECT_NE(server.stderrSoFar().find("for 2 of up to 3 worker(s), async"), std::string::npos)
      << server.stderrSoFar();
  // Scaled up: the third worker's pod is made with the job's new count. Meanwhile worker 1 is
  // held and worker 0 (whose process hosts the store the newcomer reads) slowed to a crawl, so
  // that however loaded this machine, the run is not over before the newcomer is up.
  ranks[1]->signal(SIGSTOP);
  std::atomic<bool> crawling{true};
  std::thread crawl([&] {
    while (crawling) {
      ranks[0]->signal(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      ranks[0]->signal(SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  Process joined(argv, elasticEnv(2, 3));
  joined.start();
  const bool came = waitForLine(server, "worker 2 rejoined at step ");
  crawling = false;
  crawl.join();
  ranks[1]->signal(SIGCONT);
  ASSERT_TRUE(came) << server.stderrSoFar() << joined.stderrSoFar();
  // At the others' step, not 0: what they trained is not trained again.
  EXPECT_GT(figureAfter(server.stderrSoFar(), "worker 2 rejoined at step "), 0);
  // Scaled down: the second worker's pod is deleted.
  ranks[1]->signal(SIGTERM);
  const ProcessResult left = ranks[1]->wait(std::chrono::seconds(60));
  EXPECT_EQ(left.exit_code, 143) << left.stderr_text;
  for (Process* p : {ranks[0].get(), &joined, &server}) {
    const ProcessResult result = p->wait(std::chrono::seconds(240));
    EXPECT_FALSE(result.signaled) << result.stderr_text;
    EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  }
  EXPECT_NE(joined.stderrSoFar().find(": joined 1 parameter server(s) at step "), std::string::npos)
      << joined.stderrSoFar();
  const std::string log = server.stderrSoFar();
  EXPECT_NE(log.find("worker 1 left"), std::string::npos) << log;
  // 6 epochs of the whole data set at batch 64: 938 batches each, give or take the pushes in
  // flight when the last one went in.
  const double pushes = figureAfter(log, "done, every worker left: ");
  EXPECT_GE(pushes, 6 * 938) << log;
  EXPECT_LE(pushes, 6 * 938 + 2) << log;
  const std::string worker0 = ranks[0]->stderrSoFar();
  EXPECT_NE(worker0.find("done: 6 epochs, 5628 steps, test accuracy "), std::string::npos)
      << worker0;
  EXPECT_GT(figureAfter(worker0, "test accuracy "), 80) << worker0;
  std::printf("elastic: worker 2 joined at step %.0f, the run took %.0f pushes\n%s\n",
              figureAfter(log, "worker 2 rejoined at step "), pushes, log.c_str());
}

// Throughput of the same job both ways, on this machine: printed for the record.
TEST(PsTrainer, PrintsSyncThroughputBesideAllreduce) {
  if (!haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto ps = runWorld(job({"--ps-servers", "1", "--ps-consistency", "sync"}), 3);
  expectAllExitZero(ps);
  auto allreduce = runWorld(job({"--backend", "tcp"}), 2);
  expectAllExitZero(allreduce);
  const double ps_rate = figureAfter(ps[0].stderr_text, "%, ");
  const double ar_rate = figureAfter(allreduce[0].stderr_text, "%, ");
  std::printf(
      "throughput, 2 workers x batch 64, mlp hidden 128, 1 epoch: sync parameter "
      "server (1 server) %.0f samples/s, allreduce (tcp, 2 ranks) %.0f samples/s\n",
      ps_rate, ar_rate);
}

}  // namespace
}  // namespace ringmaster::testutil
