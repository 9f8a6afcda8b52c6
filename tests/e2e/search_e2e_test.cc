// e2e, hyperparameter search, under `ringmaster local up` and again on a real control plane
// (envtest) that the local kubelet and operator join, driven with real kubectl:
//   - the example's Experiment (8 trials, 4 at a time) runs to Succeeded with the operator
//     SIGKILLed and started again once its first trials exist: every trial exists exactly once
//     (indices 0-7, one TrialCreated Event each), every one succeeded, and the best trial the
//     status names is the one with the highest test accuracy among the trials' own statuses;
//     `kubectl get exp` and `describe` show it;
//   - bad searches are refused naming the field: by the API server (the schema) where it can
//     tell, else by the operator (Failed, InvalidSpec) before any trial exists;
//   - the pbt example's 4 members meet after each epoch: one exploit a round, in place (no
//     restart, each under 2 s), every member's lineage in its status and the winner's in the
//     Experiment's; a member whose trainer is SIGKILLed after round 1 comes back, replays its
//     round and trains on from epoch 2;
//   - a search over a PyTorch program of the user's own (Debian's python3-torch): each trial's
//     values reach it as environment variables, and its objective is the test accuracy the
//     program itself wrote (RINGMASTER_SUMMARY_FILE) and printed;
//   - population-based training of such a program through checkpoints: 4 members, 3 runs each,
//     every run resuming from its member's checkpoint (or a copy of a better member's), one
//     exploit a round, every member's lineage in its status; a member whose pod dies after a
//     round (its launcher SIGKILLed: the node lost under it) comes back, replays its rounds and
//     runs on from the next interval, the search counting every trial once;
// and `ringmaster local run` of both search examples as a user runs them.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "local_cluster.h"
#include "local_run_checks.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Why a PyTorch program cannot run here ("" when it can).
std::string torchMissing() {
  auto r = testutil::run({"/usr/bin/python3", "-c", "import torch, numpy"}, {}, 120s);
  if (r.exit_code == 0) return "";
  return "needs Debian's python3-torch (scripts/setup installs it): " + r.stderr_text;
}

std::string readExample(const std::string& name) {
  std::ifstream in(std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class SearchE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testutil::kFashionMnistDir))
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }
  void TearDown() override { operator_.reset(); }

  // SIGKILLs the operator `local up` started and starts another with its flags (a shorter
  // Lease, so that the new one leads sooner).
  void killAndRestartOperator() {
    ASSERT_EQ(cluster_.killOperator(), "");
    operator_ = std::make_unique<testutil::Process>(std::vector<std::string>{
        testutil::binaryPath("bin/ringmaster-operator"), "--kubeconfig", cluster_.kubeconfig(),
        "--bind-address", "127.0.0.1", "--metrics-port", "0", "--health-port", "0",
        "--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2",
        "--leader-elect-retry-period", "0.5"});
    operator_->start();
  }

  // The Experiment `name` once it has ended, Succeeded or Failed (as it was after 600 s if not).
  json endedExperiment(const std::string& name) {
    json experiment;
    EXPECT_TRUE(testutil::eventually(600s, [&] {
      experiment = cluster_.get("experiment", name);
      const std::string phase = experiment.value("/status/phase"_json_pointer, std::string());
      return phase == "Succeeded" || phase == "Failed";
    })) << experiment.dump(2);
    return experiment;
  }

  // How many exploits the trials of `experiment` took in each round, from their lineage.
  std::map<int64_t, int> exploitsByRound(const std::string& experiment) {
    std::map<int64_t, int> by_round;
    for (const json& t : trials(experiment)) {
      for (const json& e : t.value("/status/progress/pbt/lineage"_json_pointer, json::array()))
        ++by_round[e.value("round", int64_t{0})];
    }
    return by_round;
  }

  json trials(const std::string& experiment) {
    testutil::ProcessResult r = cluster_.kubectl(
        {"get", "trainingjobs", "-l", "ringmaster.dev/experiment=" + experiment, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return json::parse(r.stdout_text, nullptr, false).value("items", json::array());
  }

  testutil::LocalCluster cluster_{GetParam()};
  std::unique_ptr<testutil::Process> operator_;
};

TEST_P(SearchE2e, EightTrialsFourAtATimeSurviveTheOperatorKilled) {
  ASSERT_EQ(cluster_.apply(readExample("fashion-mnist-search.yaml")).exit_code, 0);
  // The first four trials exist: kill the operator while they run.
  json experiment;
  ASSERT_TRUE(testutil::eventually(
      120s,
      [&] {
        experiment = cluster_.get("experiment", "fmnist-search");
        return experiment.value("/status/trialsCreated"_json_pointer, 0) >= 4;
      },
      testutil::kPromptly))
      << experiment.dump(2);
  EXPECT_LE(experiment.value("/status/trialsRunning"_json_pointer, 0), 4) << experiment.dump(2);
  ASSERT_NO_FATAL_FAILURE(killAndRestartOperator());

  experiment = endedExperiment("fmnist-search");
  ASSERT_EQ(experiment["status"]["phase"], "Succeeded") << experiment.dump(2);
  EXPECT_TRUE(testutil::hasCondition(experiment, "Succeeded", "True", "TrialsCompleted"))
      << experiment.dump(2);
  const json& status = experiment["status"];
  EXPECT_EQ(status.value("trials", 0), 8);
  EXPECT_EQ(status.value("trialsCreated", 0), 8);
  EXPECT_EQ(status.value("trialsSucceeded", 0), 8);
  EXPECT_EQ(status.value("trialsFailed", -1), 0);
  EXPECT_EQ(status.value("trialsRunning", -1), 0);
  EXPECT_EQ(status.value("progress", ""), "8/8");

  // Every trial once, each Succeeded with an accuracy; the best is the status's.
  std::set<std::string> indices;
  std::string best_name;
  double best = -1;
  for (const json& t : trials("fmnist-search")) {
    const std::string name = t["metadata"]["name"];
    indices.insert(t["metadata"]["labels"].value("ringmaster.dev/trial-index", ""));
    EXPECT_EQ(t.value("/status/phase"_json_pointer, std::string()), "Succeeded") << name;
    EXPECT_EQ(t["metadata"]["ownerReferences"][0]["kind"], "Experiment") << name;
    const double accuracy = t.value("/status/progress/testAccuracy"_json_pointer, -1.0);
    EXPECT_GT(accuracy, 0.3) << name;
    if (accuracy > best) best = accuracy, best_name = name;
  }
  EXPECT_EQ(indices, (std::set<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(status["bestTrial"].value("name", ""), best_name) << status.dump(2);
  EXPECT_DOUBLE_EQ(status["bestTrial"].value("objective", 0.0), best);
  EXPECT_TRUE(status["bestTrial"]["parameters"].contains("optimizer.learningRate"));
  EXPECT_TRUE(status["bestTrial"]["parameters"].contains("optimizer.momentum"));

  // Each trial was created once: one TrialCreated Event per trial, across both operators.
  testutil::ProcessResult events = cluster_.kubectl(
      {"get", "events", "--field-selector", "involvedObject.name=fmnist-search", "-o", "json"});
  int created = 0;
  for (const json& e : json::parse(events.stdout_text).value("items", json::array())) {
    if (e.value("reason", "") == "TrialCreated") created += e.value("count", 1);
  }
  EXPECT_EQ(created, 8) << events.stdout_text;

  testutil::ProcessResult get = cluster_.kubectl({"get", "exp", "fmnist-search"});
  EXPECT_NE(get.stdout_text.find("ALGORITHM   PHASE       TRIALS   RUNNING   BEST"),
            std::string::npos)
      << get.stdout_text;
  EXPECT_NE(get.stdout_text.find("Succeeded   8/8"), std::string::npos) << get.stdout_text;
  EXPECT_NE(get.stdout_text.find(best_name), std::string::npos) << get.stdout_text;
  testutil::ProcessResult describe = cluster_.kubectl({"describe", "exp", "fmnist-search"});
  EXPECT_NE(describe.stdout_text.find("TrialCreated"), std::string::npos) << describe.stdout_text;
  EXPECT_NE(describe.stdout_text.find("8 of 8 trials succeeded"), std::string::npos)
      << describe.stdout_text;
}

TEST_P(SearchE2e, BadSearchesAreRefusedNamingTheField) {
  const std::string good = readExample("fashion-mnist-search.yaml");
  auto with = [&](const std::string& from, const std::string& to, const std::string& name) {
    std::string yaml = good;
    const size_t at = yaml.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    yaml.replace(at, from.size(), to);
    yaml.replace(yaml.find("name: fmnist-search"), 19, "name: " + name);
    return yaml;
  };
  // The schema refuses these at the door.
  struct Refused {
    std::string from, to, says;
  };
  for (const Refused& r : std::vector<Refused>{
           {"parallelism: 4", "parallelism: 0", "spec.parallelism"},
           {"min: 0.002, max: 0.5, scale: log", "min: 0, max: 0.5, scale: log",
            "a log-scale range must lie above 0"},
           {"  maxTrials: 8\n", "", "spec.maxTrials: required for a random search"},
           {"algorithm: random", "algorithm: bayes", "spec.algorithm"}}) {
    SCOPED_TRACE(r.to);
    testutil::ProcessResult applied = cluster_.apply(with(r.from, r.to, "refused"));
    EXPECT_NE(applied.exit_code, 0) << applied.stdout_text;
    EXPECT_NE(applied.stderr_text.find(r.says), std::string::npos) << applied.stderr_text;
  }
  // A path the schema cannot judge: the operator fails the search before any trial exists.
  ASSERT_EQ(cluster_
                .apply(with("path: optimizer.learningRate", "path: optimizer.learningRat",
                            "no-such-field"))
                .exit_code,
            0);
  json experiment;
  ASSERT_TRUE(testutil::eventually(60s, [&] {
    experiment = cluster_.get("experiment", "no-such-field");
    return experiment.value("/status/phase"_json_pointer, std::string()) == "Failed";
  })) << experiment.dump(2);
  EXPECT_TRUE(testutil::hasCondition(experiment, "Failed", "True", "InvalidSpec"));
  const std::string message = experiment.dump();
  EXPECT_NE(message.find("spec.parameters[0]"), std::string::npos) << message;
  EXPECT_NE(message.find("optimizer.learningRat"), std::string::npos) << message;
  EXPECT_EQ(trials("no-such-field").size(), 0u);
}

// The user's own PyTorch program as the trial: 4 trials, 2 at a time. Each pod's environment
// holds the trial's values, the program printed them and its accuracy, and that accuracy (from
// its own summary file, through the termination message) is the trial's objective.
TEST_P(SearchE2e, APyTorchProgramIsSearchedThroughItsEnvironmentAndItsOwnSummary) {
  if (std::string why = torchMissing(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(cluster_.apply(readExample("pytorch-search.yaml")).exit_code, 0);
  json experiment = endedExperiment("torch-search");
  ASSERT_EQ(experiment["status"]["phase"], "Succeeded") << experiment.dump(2);
  EXPECT_EQ(experiment["status"].value("trialsSucceeded", 0), 4) << experiment.dump(2);

  double best = -1;
  std::string best_name;
  std::set<std::string> rates;
  for (const json& t : trials("torch-search")) {
    const std::string name = t["metadata"]["name"];
    SCOPED_TRACE(name);
    EXPECT_EQ(t.value("/status/phase"_json_pointer, std::string()), "Succeeded");
    const json values =
        json::parse(t["metadata"]["annotations"].value("ringmaster.dev/trial-parameters", "{}"));
    ASSERT_TRUE(values.contains("env.LEARNING_RATE")) << values.dump();
    // The pod's environment carries the values as text.
    const json pod = cluster_.get("pod", name + "-worker-0");
    std::map<std::string, std::string> env;
    for (const json& c : pod["spec"]["containers"])
      for (const json& e : c.value("env", json::array()))
        env[e.value("name", "")] = e.value("value", "");
    ASSERT_TRUE(env.count("LEARNING_RATE")) << pod.dump(2);
    EXPECT_EQ(std::stod(env["LEARNING_RATE"]), values["env.LEARNING_RATE"].get<double>());
    EXPECT_EQ(std::stod(env["MOMENTUM"]), values["env.MOMENTUM"].get<double>());
    rates.insert(env["LEARNING_RATE"]);
    // The program's own words: its values and its accuracy, which the status holds.
    const double accuracy = t.value("/status/progress/testAccuracy"_json_pointer, -1.0);
    EXPECT_GT(accuracy, 0.5) << t["status"].dump(2);
    const std::string log = cluster_.podLog(name + "-worker-0");
    char printed[64];
    std::snprintf(printed, sizeof printed, "test accuracy %.4f", accuracy);
    EXPECT_NE(log.find(printed), std::string::npos) << log;
    // Python's repr and the operator's JSON both write a double's shortest text (a whole
    // momentum comes back from the API server as "0", which Python prints as 0.0).
    EXPECT_NE(log.find("lr " + env["LEARNING_RATE"] + " momentum "), std::string::npos) << log;
    if (accuracy > best) best = accuracy, best_name = name;
  }
  EXPECT_EQ(rates.size(), 4u) << "four draws, four learning rates";
  const json& best_trial = experiment["status"]["bestTrial"];
  EXPECT_EQ(best_trial.value("name", ""), best_name) << best_trial.dump(2);
  EXPECT_DOUBLE_EQ(best_trial.value("objective", 0.0), best);
  EXPECT_TRUE(best_trial["parameters"].contains("env.LEARNING_RATE")) << best_trial.dump(2);
}

// Population-based training of the user's own PyTorch program: the launcher runs it 3 times per
// member, and the population meets between runs through checkpoints.
TEST_P(SearchE2e, APyTorchPopulationMeetsThroughCheckpoints) {
  if (std::string why = torchMissing(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(cluster_.apply(readExample("pytorch-pbt.yaml")).exit_code, 0);
  json experiment = endedExperiment("torch-pbt");
  ASSERT_EQ(experiment["status"]["phase"], "Succeeded") << experiment.dump(2);
  EXPECT_EQ(experiment["status"].value("trialsSucceeded", 0), 4) << experiment.dump(2);

  for (const json& t : trials("torch-pbt")) {
    const std::string name = t["metadata"]["name"];
    SCOPED_TRACE(name);
    const json pbt = t.value("/status/progress/pbt"_json_pointer, json::object());
    EXPECT_EQ(pbt.value("member", ""), name) << t["status"].dump(2);
    EXPECT_TRUE(pbt["parameters"].contains("env.LEARNING_RATE")) << pbt.dump();
    EXPECT_GT(t.value("/status/progress/testAccuracy"_json_pointer, 0.0), 0.5);
    const std::string log = cluster_.podLog(name + "-worker-0");
    // Every run resumed from a checkpoint one epoch further on: its own, or after an exploit a
    // copy of the source's.
    for (const char* run : {"interval 1, epoch 1:", "interval 2, epoch 2:", "interval 3, epoch 3:"})
      EXPECT_NE(log.find(run), std::string::npos) << run << "\n" << log;
    for (const json& e : pbt.value("lineage", json::array())) {
      const std::string source = e.value("source", "");
      EXPECT_NE(source, name);
      EXPECT_NE(log.find("pbt round " + std::to_string(e.value("round", 0)) + ": " + name),
                std::string::npos)
          << log;
      EXPECT_NE(log.find("continues from " + source), std::string::npos) << log;
      EXPECT_GT(e.value("sourceObjective", 0.0), e.value("objective", 1.0)) << e.dump();
    }
  }
  // A quarter of 4: one member exploits in each of the 2 rounds.
  EXPECT_EQ(exploitsByRound("torch-pbt"), (std::map<int64_t, int>{{1, 1}, {2, 1}}));
  const json& best = experiment["status"]["bestTrial"];
  EXPECT_TRUE(best["parameters"].contains("env.MOMENTUM")) << best.dump(2);
}

// A member of that population whose pod dies after its first round (the launcher SIGKILLed, as
// when its node is lost): the job restarts it, the new launcher replays round 1 from the
// population's directory and runs on from interval 2; the search ends with 4 trials, each made
// once, and the same one exploit a round.
TEST_P(SearchE2e, APyTorchMemberLostAfterARoundRunsOnFromTheNextInterval) {
  if (std::string why = torchMissing(); !why.empty()) GTEST_SKIP() << why;
  std::string yaml = readExample("pytorch-pbt.yaml");
  const std::string never = "      restartPolicy: Never\n";
  ASSERT_NE(yaml.find(never), std::string::npos);
  yaml.replace(yaml.find(never), never.size(),
               "      restartPolicy: OnFailure\n      backoffLimit: 2\n");
  ASSERT_EQ(cluster_.apply(yaml).exit_code, 0);
  const std::string victim = "torch-pbt-trial-1";
  ASSERT_TRUE(testutil::eventually(300s, [&] {
    return cluster_.podLog(victim + "-worker-0").find("pbt round 1: " + victim) !=
           std::string::npos;
  })) << cluster_.podLog(victim + "-worker-0");
  const pid_t launcher = cluster_.findProcess("ringmaster-launcher", {{"RINGMASTER_JOB", victim}});
  ASSERT_GT(launcher, 0);
  ASSERT_EQ(kill(launcher, SIGKILL), 0);

  json experiment = endedExperiment("torch-pbt");
  ASSERT_EQ(experiment["status"]["phase"], "Succeeded") << experiment.dump(2);
  EXPECT_EQ(experiment["status"].value("trialsCreated", 0), 4);
  EXPECT_EQ(experiment["status"].value("trialsSucceeded", 0), 4);
  for (const json& t : trials("torch-pbt")) {
    const std::string name = t["metadata"]["name"];
    EXPECT_EQ(t["status"].value("restarts", 0), name == victim ? 1 : 0) << name;
  }
  EXPECT_EQ(exploitsByRound("torch-pbt"), (std::map<int64_t, int>{{1, 1}, {2, 1}}));
  const std::string log = cluster_.podLog(victim + "-worker-0");
  // Killed after round 1, or later on a busy machine: the new pod runs only what was left, each
  // run one epoch on from the restored checkpoint.
  const std::string resumed = "pbt member " + victim + " resumes after round ";
  const size_t at = log.find(resumed);
  ASSERT_NE(at, std::string::npos) << log;
  const int replayed = std::atoi(log.c_str() + at + resumed.size());
  EXPECT_GE(replayed, 1) << log;
  for (int interval = 1; interval <= 3; ++interval) {
    const std::string run =
        "interval " + std::to_string(interval) + ", epoch " + std::to_string(interval) + ":";
    EXPECT_EQ(log.find(run) != std::string::npos, interval > replayed) << run << "\n" << log;
  }
}

// A built-in trainer's member killed after its first round (its pod restarts: the example's
// restartPolicy OnFailure): the new trainer replays round 1 from the population's directory,
// loads the checkpoint it had continued from and trains on from epoch 2; the search still has
// one exploit a round and 4 trials made once.
TEST_P(SearchE2e, APbtMemberKilledAfterARoundTrainsOnFromItsNextEpoch) {
  ASSERT_EQ(cluster_.apply(readExample("fashion-mnist-pbt.yaml")).exit_code, 0);
  const std::string victim = "fmnist-pbt-trial-1";
  ASSERT_TRUE(testutil::eventually(300s, [&] {
    return cluster_.podLog(victim + "-worker-0").find("pbt round 1 at step") != std::string::npos;
  })) << cluster_.podLog(victim + "-worker-0");
  const pid_t trainer = cluster_.findProcess("ringmaster-trainer", {{"RINGMASTER_JOB", victim}});
  ASSERT_GT(trainer, 0);
  ASSERT_EQ(kill(trainer, SIGKILL), 0);

  json experiment = endedExperiment("fmnist-pbt");
  ASSERT_EQ(experiment["status"]["phase"], "Succeeded") << experiment.dump(2);
  EXPECT_EQ(experiment["status"].value("trialsCreated", 0), 4);
  EXPECT_EQ(experiment["status"].value("trialsSucceeded", 0), 4);
  for (const json& t : trials("fmnist-pbt")) {
    const std::string name = t["metadata"]["name"];
    EXPECT_EQ(t["status"].value("restarts", 0), name == victim ? 1 : 0) << name;
  }
  EXPECT_EQ(exploitsByRound("fmnist-pbt"), (std::map<int64_t, int>{{1, 1}, {2, 1}, {3, 1}}));
  const std::string log = cluster_.podLog(victim + "-worker-0");
  // Killed after round 1, or later on a busy machine: it replays what it had met in and meets in
  // the rest.
  const std::string resumed = "pbt: member " + victim + " resumes after round ";
  const size_t at = log.find(resumed);
  ASSERT_NE(at, std::string::npos) << log;
  const int replayed = std::atoi(log.c_str() + at + resumed.size());
  EXPECT_GE(replayed, 1) << log;
  for (int round = 1; round <= 3; ++round) {
    const bool met =
        log.find("pbt round " + std::to_string(round) + " at step") != std::string::npos;
    EXPECT_EQ(met, round > replayed) << "round " << round << "\n" << log;
  }
}

// Population-based training: 4 members, 4 epochs, 3 rounds of one exploit each, in place.
TEST_P(SearchE2e, PbtMembersExploitInPlaceAndTheBestKeepsItsLineage) {
  ASSERT_EQ(cluster_.apply(readExample("fashion-mnist-pbt.yaml")).exit_code, 0);
  json experiment = endedExperiment("fmnist-pbt");
  ASSERT_EQ(experiment["status"]["phase"], "Succeeded") << experiment.dump(2);
  EXPECT_EQ(experiment["status"].value("trialsSucceeded", 0), 4);

  int exploits = 0;
  double best = -1;
  json best_trial;
  for (const json& t : trials("fmnist-pbt")) {
    const std::string name = t["metadata"]["name"];
    EXPECT_EQ(t.value("/status/phase"_json_pointer, std::string()), "Succeeded") << name;
    EXPECT_EQ(t.value("/status/restarts"_json_pointer, -1), 0)
        << name << ": exploits restart nothing";
    const json pbt = t.value("/status/progress/pbt"_json_pointer, json::object());
    EXPECT_EQ(pbt.value("member", ""), name) << t["status"].dump(2);
    EXPECT_TRUE(pbt["parameters"].contains("optimizer.learningRate")) << pbt.dump();
    for (const json& e : pbt.value("lineage", json::array())) {
      ++exploits;
      EXPECT_NE(e.value("source", ""), name);
      EXPECT_GE(e.value("sourceObjective", 0.0), e.value("objective", 1.0)) << e.dump();
      EXPECT_TRUE(e["parameters"].contains("optimizer.momentum")) << e.dump();
    }
    // Every exploit of this member took under 2 s, in its own words.
    const std::string log = cluster_.podLog(name + "-worker-0");
    for (size_t at = log.find("exploit took "); at != std::string::npos;
         at = log.find("exploit took ", at + 1)) {
      EXPECT_LT(std::atoi(log.c_str() + at + 13), 2000) << log.substr(at, 40);
    }
    const double accuracy = t.value("/status/progress/testAccuracy"_json_pointer, -1.0);
    if (accuracy > best) best = accuracy, best_trial = t;
  }
  EXPECT_EQ(exploits, 3) << "one of four members exploits in each of the three rounds";
  const json& reported = experiment["status"]["bestTrial"];
  EXPECT_EQ(reported.value("name", ""), best_trial["metadata"].value("name", "?"));
  EXPECT_DOUBLE_EQ(reported.value("objective", 0.0), best);
  EXPECT_EQ(reported["parameters"], best_trial["status"]["progress"]["pbt"]["parameters"])
      << "the values the winner ended on";
  EXPECT_EQ(reported.value("lineage", json::array()),
            best_trial["status"]["progress"]["pbt"].value("lineage", json::array()));
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, SearchE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

// The user's path: the example through `ringmaster local run`, its trials printed best first.
TEST(LocalRunSearchE2e, TheExampleRunsToSucceededAndNamesTheBestTrial) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testutil::TempDir dir;
  e2e::ExampleRun example = e2e::runExample("fashion-mnist-search.yaml", dir.path(), {});
  const std::string out = example.run.stdout_text + example.run.stderr_text;
  ASSERT_EQ(example.run.exit_code, 0) << out;
  EXPECT_EQ(example.down.exit_code, 0) << example.down.stderr_text;
  EXPECT_NE(out.find("fmnist-search: Succeeded (TrialsCompleted): 8 of 8 trials succeeded"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  best trial fmnist-search-trial-"), std::string::npos) << out;
  EXPECT_NE(out.find("TRIAL"), std::string::npos) << out;
  // The table: the starred row first, then 7 more rows.
  const size_t header = out.find("TRIAL");
  ASSERT_NE(header, std::string::npos);
  std::istringstream rows(out.substr(header));
  std::string line;
  std::getline(rows, line);
  int listed = 0;
  while (std::getline(rows, line) && line.find("fmnist-search-trial-") != std::string::npos) {
    if (listed == 0) {
      EXPECT_EQ(line.rfind("  * ", 0), 0u) << line;
    }
    EXPECT_NE(line.find("Succeeded"), std::string::npos) << line;
    ++listed;
  }
  EXPECT_EQ(listed, 8) << out;
}

// The pbt example of the user's own PyTorch program through `ringmaster local run`: every
// member succeeded, one exploit a round.
TEST(LocalRunSearchE2e, ThePyTorchPbtExampleRunsToSucceeded) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (std::string why = torchMissing(); !why.empty()) GTEST_SKIP() << why;
  testutil::TempDir dir;
  e2e::ExampleRun example = e2e::runExample("pytorch-pbt.yaml", dir.path(), {});
  const std::string out = example.run.stdout_text + example.run.stderr_text;
  ASSERT_EQ(example.run.exit_code, 0) << out;
  EXPECT_EQ(example.down.exit_code, 0) << example.down.stderr_text;
  EXPECT_NE(out.find("torch-pbt: Succeeded (TrialsCompleted): 4 of 4 trials succeeded"),
            std::string::npos)
      << out;
  int exploits = 0, rows = 0;
  for (size_t at = out.find("torch-pbt-trial-"); at != std::string::npos;
       at = out.find("torch-pbt-trial-", at + 1)) {
    const size_t end = out.find('\n', at);
    const std::string line = out.substr(at, end - at);
    const size_t open = line.rfind(" (");
    if (line.find("Succeeded") == std::string::npos || open == std::string::npos) continue;
    exploits += std::atoi(line.c_str() + open + 2);
    ++rows;
  }
  EXPECT_EQ(rows, 4) << out;
  EXPECT_EQ(exploits, 2) << "one exploit in each of the 2 rounds\n" << out;
}

// The user's own PyTorch program searched through `ringmaster local run`: every trial
// succeeded with the accuracy its program wrote, best first.
TEST(LocalRunSearchE2e, ThePyTorchSearchExampleRunsToSucceeded) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (std::string why = torchMissing(); !why.empty()) GTEST_SKIP() << why;
  testutil::TempDir dir;
  e2e::ExampleRun example = e2e::runExample("pytorch-search.yaml", dir.path(), {});
  const std::string out = example.run.stdout_text + example.run.stderr_text;
  ASSERT_EQ(example.run.exit_code, 0) << out;
  EXPECT_EQ(example.down.exit_code, 0) << example.down.stderr_text;
  EXPECT_NE(out.find("torch-search: Succeeded (TrialsCompleted): 4 of 4 trials succeeded"),
            std::string::npos)
      << out;
  const size_t header = out.find("TRIAL");
  ASSERT_NE(header, std::string::npos) << out;
  std::istringstream rows(out.substr(header));
  std::string line;
  std::getline(rows, line);
  int listed = 0;
  double previous = 2;
  while (std::getline(rows, line) && line.find("torch-search-trial-") != std::string::npos) {
    std::istringstream words(line.substr(4));
    std::string name, state;
    double accuracy = -1;
    words >> name >> state >> accuracy;
    EXPECT_EQ(state, "Succeeded") << line;
    EXPECT_GT(accuracy, 0.5) << line;
    EXPECT_LE(accuracy, previous) << "best first: " << line;
    previous = accuracy;
    EXPECT_NE(line.find("env.LEARNING_RATE"), std::string::npos) << line;
    ++listed;
  }
  EXPECT_EQ(listed, 4) << out;
}

}  // namespace
}  // namespace ringmaster
