#pragma once
// What the `ringmaster local run` e2e tests read off a running job: a rank's Prometheus metrics
// at its pod address, whether they count training steps, and the final test accuracy in a log;
// and one whole run of an example, with its pods' logs.

#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process.h"

namespace ringmaster::e2e {

// GET /metrics from a running rank of pod `pod`, at its pod IP and its `metrics` container
// port ("" while the pod has no IP or the trainer does not serve yet). The address comes from
// one `kubectl get pod` (~90 ms of CPU) and is kept while the port answers: the tests poll.
class RankScraper {
 public:
  RankScraper(std::string kubectl, std::map<std::string, std::string> env, std::string pod)
      : kubectl_(std::move(kubectl)), env_(std::move(env)), pod_(std::move(pod)) {}

  std::string scrape() {
    if (port_ == 0 && !findAddress()) return "";
    http::Response got = testutil::httpGet(ip_, port_, "/metrics");
    if (got.status != 200) port_ = 0;  // not serving yet, or the pod moved: ask kubectl again
    return got.status == 200 ? got.body : "";
  }

 private:
  bool findAddress() {
    using namespace std::chrono_literals;
    testutil::ProcessResult get =
        testutil::run({kubectl_, "get", "pod", pod_, "-o", "json"}, env_, 30s);
    if (get.exit_code != 0) return false;
    const nlohmann::json p = nlohmann::json::parse(get.stdout_text, nullptr, false);
    if (p.is_discarded()) return false;
    ip_ = p.value("/status/podIP"_json_pointer, std::string());
    for (const auto& c : p.value("/spec/containers"_json_pointer, nlohmann::json::array()))
      for (const auto& cp : c.value("ports", nlohmann::json::array()))
        if (cp.value("name", "") == "metrics") port_ = cp.value("containerPort", 0);
    if (ip_.empty()) port_ = 0;
    return port_ != 0;
  }

  std::string kubectl_;
  std::map<std::string, std::string> env_;
  std::string pod_;
  std::string ip_;
  int port_ = 0;
};

// Whether `metrics` (a /metrics page) counts training steps taken by `rank`.
inline bool tookSteps(const std::string& metrics, int rank) {
  const std::string label = "rank=\"" + std::to_string(rank) + "\"";
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("ringmaster_trainer_steps_total{", 0) != 0) continue;
    if (line.find(label) == std::string::npos) continue;
    return std::atof(line.c_str() + line.rfind(' ') + 1) > 0;
  }
  return false;
}

// "... test accuracy 88.7%, ..." in a trainer's "done: " line -> 0.887 (-1 when absent).
inline double testAccuracy(const std::string& log) {
  const std::string key = "test accuracy ";
  size_t at = log.rfind("done: ");
  if (at == std::string::npos) return -1;
  at = log.find(key, at);
  if (at == std::string::npos) return -1;
  return std::atof(log.c_str() + at + key.size()) / 100.0;
}

// `ringmaster local run <manifest>` in `data_dir` to its end, `kubectl logs` of each of `pods`,
// then `ringmaster local down`.
struct ExampleRun {
  testutil::ProcessResult run, down;
  std::map<std::string, testutil::ProcessResult> logs;  // by pod name
};
inline ExampleRun runManifest(const std::string& manifest, const std::string& data_dir,
                              const std::vector<std::string>& pods) {
  using namespace std::chrono_literals;
  const std::string ringmaster = testutil::binaryPath("bin/ringmaster");
  ExampleRun out;
  out.run = testutil::run({ringmaster, "local", "run", manifest, "--data-dir", data_dir}, {}, 600s);
  const std::map<std::string, std::string> env{{"KUBECONFIG", data_dir + "/kubeconfig"}};
  for (const std::string& pod : pods) {
    out.logs[pod] = testutil::run({testutil::findKubectl(), "logs", pod}, env, 30s);
  }
  out.down = testutil::run({ringmaster, "local", "down", "--data-dir", data_dir}, {}, 120s);
  return out;
}

// runManifest of examples/<example>.
inline ExampleRun runExample(const std::string& example, const std::string& data_dir,
                             const std::vector<std::string>& pods) {
  return runManifest(std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/" + example, data_dir,
                     pods);
}

}  // namespace ringmaster::e2e
