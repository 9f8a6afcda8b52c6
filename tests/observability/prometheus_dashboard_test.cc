// The Grafana dashboard against a real Prometheus. The embedded cluster runs
// a 2-replica Fashion-MNIST TrainingJob, a 2-stage pipeline one, a parameter-server one (one
// server, two workers), a job of a program of the user's own that exports nothing, a pbt
// Experiment of two members that meet after every epoch and a one-trial grid search that
// finishes (the search row's: a population's objective over time, the best trial); Debian's
// prometheus scrapes the operator and every trainer rank with the target labels the chart's
// ServiceMonitor/PodMonitor would add, and the kubelet's cAdvisor series as kube-prometheus-stack's
// kubelet ServiceMonitor does; every panel and variable query of
// helm/ringmaster/dashboards/ringmaster.json must return series, the user's job must show in the
// variable and the Jobs and pods row, and promtool must accept every exporter's exposition.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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
using nlohmann::json;

const char* kPrometheus = "/usr/bin/prometheus";
const char* kPromtool = "/usr/bin/promtool";
const char* kJob = "dash";               // metadata.name of the data-parallel job
const char* kPipelineJob = "dash-pipe";  // and of the pipeline-parallel one
const char* kOwnJob = "dash-own";        // and of a program of the user's own, with no metrics
const char* kPsJob = "dash-ps";          // and of the parameter-server one
const char* kPbtSearch = "dash-pbt";     // metadata.name of the pbt Experiment (2 members)
const char* kGridSearch = "dash-grid";   // and of the grid search with one short trial
// Grafana's $__rate_interval is max($__interval + scrape interval, 4 x scrape interval); with the
// 1 s scrapes here anything that spans several samples behaves the same.
const char* kRateInterval = "10s";
constexpr auto kMinScrapeSpan = 10s;  // scraped this long before the queries, so rates have data

// HTTP/1.0 GET to host:port (pod IPs are 127.1.x.y, so not just 127.0.0.1). Returns the status
// code (0: no connection) and the body.
std::pair<int, std::string> httpGet(const std::string& host, int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (fd < 0 || inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    if (fd >= 0) close(fd);
    return {0, ""};
  }
  timeval tv{10, 0};  // a wedged server must not hang the test
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[8192];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, n);
    }
  }
  close(fd);
  const size_t split = out.find("\r\n\r\n");
  int code = 0;
  if (split == std::string::npos || std::sscanf(out.c_str(), "HTTP/%*s %d", &code) != 1)
    return {0, out};
  return {code, out.substr(split + 4)};
}

std::string urlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// Replaces Grafana variables ($name, ${name}, ${name:fmt}, [[name]]) with `values`; names it does
// not know are collected in `unknown` and left in place.
std::string substitute(const std::string& expr, const std::map<std::string, std::string>& values,
                       std::set<std::string>* unknown) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  size_t i = 0;
  while (i < expr.size()) {
    // One of ${name}, ${name:format}, $name, [[name]]: [begin, end) and the name.
    size_t end = std::string::npos;
    std::string name;
    if (expr[i] == '$' && i + 1 < expr.size() && expr[i + 1] == '{') {
      const size_t close = expr.find('}', i + 2);
      if (close != std::string::npos) {
        name = expr.substr(i + 2, close - i - 2);
        name = name.substr(0, name.find(':'));
        end = close + 1;
      }
    } else if (expr[i] == '$') {
      size_t j = i + 1;
      while (j < expr.size() && word(expr[j])) ++j;
      if (j > i + 1) {
        name = expr.substr(i + 1, j - i - 1);
        end = j;
      }
    } else if (expr.compare(i, 2, "[[") == 0) {
      const size_t close = expr.find("]]", i + 2);
      if (close != std::string::npos) {
        name = expr.substr(i + 2, close - i - 2);
        end = close + 2;
      }
    }
    if (end == std::string::npos || name.empty() || !std::all_of(name.begin(), name.end(), word)) {
      out += expr[i++];
      continue;
    }
    const std::string whole = expr.substr(i, end - i);
    auto found = values.find(name);
    if (std::all_of(name.begin(), name.end(), ::isdigit)) {
      out += whole;  // a regex group reference such as label_replace's "$1"
    } else if (found != values.end()) {
      out += found->second;
    } else {
      unknown->insert(name);
      out += whole;
    }
    i = end;
  }
  return out;
}

// One dashboard query: where it comes from and the PromQL to evaluate.
struct DashboardQuery {
  std::string title;  // panel title, or "variable <name>"
  std::string expr;   // as in the dashboard
  std::string label;  // for label_values(): the label whose values must exist
};

void collectPanels(const json& panels, std::vector<DashboardQuery>* out) {
  for (const json& p : panels) {
    for (const json& t : p.value("targets", json::array())) {
      if (t.contains("expr")) out->push_back({p.value("title", "?"), t["expr"], ""});
    }
    if (p.contains("panels")) collectPanels(p["panels"], out);  // collapsed rows
  }
}

// label_values(selector, label) -> {selector, label}; label_values(label) -> {"", label}.
std::optional<std::pair<std::string, std::string>> parseLabelValues(const std::string& q) {
  auto trim = [](std::string t) {
    const size_t b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  const std::string text = trim(q);
  const std::string prefix = "label_values(";
  if (text.rfind(prefix, 0) != 0 || text.back() != ')') return std::nullopt;
  const std::string inside = text.substr(prefix.size(), text.size() - prefix.size() - 1);
  const size_t comma = inside.rfind(',');
  if (comma == std::string::npos) return std::make_pair(std::string(), trim(inside));
  return std::make_pair(trim(inside.substr(0, comma)), trim(inside.substr(comma + 1)));
}

class PrometheusDashboard : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0 || access(kPromtool, X_OK) != 0)
      GTEST_SKIP() << "prometheus (Debian package prometheus) is not installed";
    if (!fs::exists(testutil::kFashionMnistDir))
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }

  void TearDown() override {
    if (prometheus_) {
      prometheus_->signal(SIGTERM);
      auto r = prometheus_->wait(30s);
      if (HasFailure()) std::cout << "prometheus stderr:\n" << r.stderr_text << std::endl;
      prometheus_.reset();
    }
  }

  json kubectlJson(std::vector<std::string> args) {
    args.insert(args.end(), {"-o", "json"});
    auto r = cluster_.kubectl(args);
    if (r.exit_code != 0) return json::object();
    return json::parse(r.stdout_text, nullptr, false);
  }

  // The operator's metrics port, from its start-up line in <data-dir>/operator.log.
  int operatorMetricsPort() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(cluster_.dataDir() + "/operator.log");
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      const std::string marker = "metrics port ";
      const size_t at = s.find(marker);
      if (at != std::string::npos &&
          std::isdigit(static_cast<unsigned char>(s[at + marker.size()]))) {
        return std::atoi(s.c_str() + at + marker.size());
      }
      std::this_thread::sleep_for(200ms);
    }
    return 0;
  }

  // A scrape target with the labels Prometheus would attach.
  struct Target {
    std::string address;  // host:port
    json labels;
  };

  // The job's trainer ranks as the chart's PodMonitor finds them: every pod with the job-name
  // label, its `metrics` container port (+ local rank), and the target labels the Prometheus
  // Operator adds (namespace, pod, container, endpoint) plus the PodMonitor's relabelings
  // (trainingjob, attempt, replica_index, and a trial's experiment: a label whose value is
  // empty is none). Empty until every pod runs with an IP.
  std::vector<Target> trainerTargets(const std::string& job) {
    json pods = kubectlJson({"get", "pods", "-l", std::string("ringmaster.dev/job-name=") + job});
    std::vector<Target> targets;
    if (!pods.contains("items") || pods["items"].empty()) return {};
    for (const json& pod : pods["items"]) {
      const json& status = pod.value("status", json::object());
      const std::string ip = status.value("podIP", "");
      if (status.value("phase", "") != "Running" || ip.empty()) return {};
      const json& meta = pod["metadata"];
      const json labels = meta.value("labels", json::object());
      for (const json& c : pod["spec"]["containers"]) {
        int port = 0, procs = 1;
        for (const json& p : c.value("ports", json::array())) {
          if (p.value("name", "") == "metrics") port = p.value("containerPort", 0);
        }
        for (const json& e : c.value("env", json::array())) {
          if (e.value("name", "") == "LOCAL_WORLD_SIZE") procs = std::stoi(e.value("value", "1"));
        }
        if (port == 0) continue;
        for (int local = 0; local < procs; ++local) {
          Target target{ip + ":" + std::to_string(port + local),
                        {{"namespace", meta.value("namespace", "")},
                         {"pod", meta.value("name", "")},
                         {"container", c.value("name", "")},
                         {"endpoint", "metrics"},
                         {"trainingjob", labels.value("ringmaster.dev/job-name", "")},
                         {"attempt", labels.value("ringmaster.dev/attempt", "")},
                         {"replica_index", labels.value("ringmaster.dev/replica-index", "")}}};
          const std::string experiment = labels.value("ringmaster.dev/experiment", "");
          if (!experiment.empty()) target.labels["experiment"] = experiment;
          targets.push_back(std::move(target));
        }
      }
    }
    return targets;
  }

  // GET on the Prometheus HTTP API; the parsed body (an object without "status" on failure).
  json api(const std::string& path_and_query) {
    auto [code, body] = httpGet("127.0.0.1", prom_port_, path_and_query);
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return json{{"error", std::to_string(code) + body}};
    return j;
  }

  json query(const std::string& promql, double at) {
    char t[64];
    std::snprintf(t, sizeof t, "%.3f", at);
    return api("/api/v1/query?query=" + urlEncode(promql) + "&time=" + t);
  }

  static double unixNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // promtool check metrics on one exporter's exposition; "" when it passes, else why not.
  std::string promtoolCheck(const std::string& name, const std::string& host, int port,
                            const std::string& url_path = "/metrics") {
    auto [code, body] = httpGet(host, port, url_path);
    if (code != 200) return name + ": GET " + url_path + " answered " + std::to_string(code);
    const std::string path = cluster_.dataDir() + "/" + name + ".prom";
    std::ofstream(path) << body;
    auto r = testutil::run(
        {"/bin/sh", "-c", std::string(kPromtool) + " check metrics < \"$0\"", path}, {}, 60s);
    std::cout << "promtool check metrics (" << name << ", " << host << ":" << port << "): exit "
              << r.exit_code << " " << r.stdout_text << r.stderr_text << std::endl;
    if (r.exit_code == 0) return "";
    return name + ": promtool exit " + std::to_string(r.exit_code) + "\n" + r.stdout_text +
           r.stderr_text;
  }

  testutil::LocalCluster cluster_;  // first: outlives Prometheus, whose data lives in it
  std::unique_ptr<testutil::Process> prometheus_;
  int prom_port_ = 0;
};

TEST_F(PrometheusDashboard, EveryDashboardQueryReturnsSeriesAndPromtoolAcceptsBothExporters) {
  const auto test_start = std::chrono::steady_clock::now();
  const char* source_dir = std::getenv("RM_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "RM_SOURCE_DIR is not set (run through ctest)";
  const json dashboard = json::parse(
      testutil::readFile(std::string(source_dir) + "/helm/ringmaster/dashboards/ringmaster.json"),
      nullptr, false);
  ASSERT_TRUE(dashboard.is_object()) << "helm/ringmaster/dashboards/ringmaster.json: not JSON";

  const int operator_port = operatorMetricsPort();
  ASSERT_GT(operator_port, 0) << "no 'metrics port N' in operator.log\n"
                              << testutil::readFile(cluster_.dataDir() + "/operator.log");

  // Jobs that outlive the test on any machine: their ranks must still serve /metrics when the
  // last check reads them, and a bound in steps is seconds on a fast one (30,000 steps of this
  // model took 9 s beside nothing else). `local down` ends them. `extra` goes under spec.trainer,
  // `pod` under spec.
  auto applyLongJob =
      [&](const std::string& name, int replicas, const std::string& extra, const std::string& pod) {
        auto r = cluster_.apply(
            "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\n"
            "metadata: {name: " +
            name + "}\nspec:\n  replicas: " + std::to_string(replicas) + R"(
  image: ringmaster/trainer:0.1.0
  restartPolicy: Never
  trainer:
    model: {type: mlp, hidden: [64]}
    dataset: {name: fashion-mnist, path: )" +
            testutil::kFashionMnistDir + R"(}
    epochs: 100000
    batchSize: 64
    optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}
)" + extra + pod);
        ASSERT_EQ(r.exit_code, 0) << name << ": " << r.stdout_text << r.stderr_text;
      };
  // Data parallelism. Checkpoints every 50 steps keep the checkpoint histogram's rate non-empty;
  // each epoch ends with evaluation (loss, accuracy, allreduce gauges).
  applyLongJob(kJob, 2, "    checkpoint: {path: /ckpt, everySteps: 50, keep: 2}\n", R"(  volumes:
  - name: ckpt
    persistentVolumeClaim: {claimName: dash-ckpt}
  volumeMounts:
  - {name: ckpt, mountPath: /ckpt}
)");
  // A program of the user's own: no trainer metrics, yet its phase, world and pods' CPU and
  // memory reach the dashboard.
  {
    auto r = cluster_.apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: dash-own}
spec:
  replicas: 1
  image: ringmaster/trainer:0.1.0
  command: [/bin/sh, -c, 'while :; do :; done']
  restartPolicy: Never
)");
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  }
  // The pipeline panels' job: two stages, one per pod.
  applyLongJob(kPipelineJob, 2, "    parallelism:\n      pipeline: {stages: 2, microBatches: 4}\n",
               "");
  // The parameter-server panels' job: rank 2 serves, ranks 0 and 1 train against it, each at
  // most 2 steps ahead of the other (so the staleness histogram has more than zeros).
  applyLongJob(kPsJob, 3,
               "    parallelism:\n      parameterServer: {servers: 1, consistency: bounded, "
               "staleness: 2}\n",
               "");
  // The search row's: a population of two that meets in /pbt after every epoch (the bottom
  // half, one member, takes the other's weights each round), trials long as the jobs above; and a
  // grid of one short trial, whose end gives the operator a best objective.
  {
    auto r = cluster_.apply(std::string("apiVersion: ringmaster.dev/v1alpha1\nkind: Experiment\n"
                                        "metadata: {name: ") +
                            kPbtSearch + R"(}
spec:
  algorithm: pbt
  seed: 5
  parameters:
  - {path: optimizer.learningRate, min: 0.001, max: 0.2, scale: log}
  parallelism: 2
  pbt: {directory: /pbt, quantile: 0.5, waitSeconds: 300}
  trialTemplate:
    spec:
      replicas: 1
      image: ringmaster/trainer:0.1.0
      restartPolicy: Never
      trainer:
        model: {type: mlp, hidden: [64]}
        dataset: {name: fashion-mnist, path: )" +
                            testutil::kFashionMnistDir + R"(}
        epochs: 100000
        batchSize: 64
        optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}
      volumes:
      - name: pbt
        persistentVolumeClaim: {claimName: dash-pbt}
      volumeMounts:
      - {name: pbt, mountPath: /pbt}
)");
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
    r = cluster_.apply(std::string("apiVersion: ringmaster.dev/v1alpha1\nkind: Experiment\n"
                                   "metadata: {name: ") +
                       kGridSearch + R"(}
spec:
  algorithm: grid
  parameters:
  - {path: optimizer.learningRate, choices: [0.1]}
  parallelism: 1
  trialTemplate:
    spec:
      replicas: 1
      image: ringmaster/trainer:0.1.0
      restartPolicy: Never
      trainer:
        model: {type: mlp, hidden: [32]}
        dataset: {name: fashion-mnist, path: )" +
                       testutil::kFashionMnistDir + R"(}
        epochs: 1
        batchSize: 128
        optimizer: {type: sgd, learningRate: 0.1, momentum: 0.9}
)");
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  }
  ASSERT_FALSE(HasFailure());

  const std::string member0 = std::string(kPbtSearch) + "-trial-0";
  const std::string member1 = std::string(kPbtSearch) + "-trial-1";
  std::vector<Target> trainers, pipeline_trainers, ps_ranks, members, members1;
  for (auto deadline = std::chrono::steady_clock::now() + 180s;
       (trainers.empty() || pipeline_trainers.empty() || ps_ranks.empty() || members.empty() ||
        members1.empty()) &&
       std::chrono::steady_clock::now() < deadline;) {
    trainers = trainerTargets(kJob);
    pipeline_trainers = trainerTargets(kPipelineJob);
    ps_ranks = trainerTargets(kPsJob);
    members = trainerTargets(member0);
    members1 = trainerTargets(member1);
    if (trainers.empty() || pipeline_trainers.empty() || ps_ranks.empty() || members.empty() ||
        members1.empty())
      std::this_thread::sleep_for(300ms);
  }
  ASSERT_EQ(trainers.size(), 2u) << cluster_.kubectl({"get", "pods", "-o", "wide"}).stdout_text;
  ASSERT_EQ(pipeline_trainers.size(), 2u)
      << cluster_.kubectl({"get", "pods", "-o", "wide"}).stdout_text;
  ASSERT_EQ(ps_ranks.size(), 3u) << cluster_.kubectl({"get", "pods", "-o", "wide"}).stdout_text;
  ASSERT_EQ(members.size() + members1.size(), 2u)
      << cluster_.kubectl({"get", "pods", "-o", "wide"}).stdout_text;
  EXPECT_EQ(members[0].labels.value("experiment", ""), kPbtSearch) << members[0].labels.dump();
  const size_t data_parallel_ranks = trainers.size();
  trainers.insert(trainers.end(), pipeline_trainers.begin(), pipeline_trainers.end());
  trainers.insert(trainers.end(), ps_ranks.begin(), ps_ranks.end());
  trainers.insert(trainers.end(), members.begin(), members.end());
  trainers.insert(trainers.end(), members1.begin(), members1.end());

  // The chart's ServiceMonitor (operator) and PodMonitor (trainers), as static targets with the
  // chart's honorLabels: on for the operator (its job counters' namespace is the TrainingJob's)
  // and for the trainers (the PodMonitor's `trainingjob` is what they say themselves). JSON is
  // YAML.
  json trainer_configs = json::array();
  for (const Target& t : trainers) {
    trainer_configs.push_back(
        json::object({{"targets", json::array({t.address})}, {"labels", t.labels}}));
  }
  json operator_config =
      json::object({{"targets", json::array({"127.0.0.1:" + std::to_string(operator_port)})},
                    {"labels", json::object({{"namespace", "ringmaster-system"},
                                             {"service", "ringmaster-metrics"},
                                             {"pod", "ringmaster-operator"},
                                             {"endpoint", "metrics"}})}});
  // The kubelet's cAdvisor endpoint, which the Node advertises.
  const std::string kubelet_port =
      cluster_
          .kubectl({"get", "node", "local", "-o",
                    "jsonpath={.metadata.annotations.local\\.ringmaster\\.dev/metrics-port}"})
          .stdout_text;
  ASSERT_FALSE(kubelet_port.empty()) << "the local Node advertises no metrics port";
  json kubelet_config = json::object(
      {{"targets", json::array({"127.0.0.1:" + kubelet_port})},
       {"labels", json::object({{"node", "local"}, {"metrics_path", "/metrics/cadvisor"}})}});
  json config = json::object();
  config["global"] = json::object(
      {{"scrape_interval", "1s"}, {"scrape_timeout", "1s"}, {"evaluation_interval", "1s"}});
  config["scrape_configs"] =
      json::array({json::object({{"job_name", "ringmaster-metrics"},
                                 {"honor_labels", true},
                                 {"static_configs", json::array({operator_config})}}),
                   json::object({{"job_name", "default/ringmaster-trainers"},
                                 {"honor_labels", true},
                                 {"static_configs", trainer_configs}}),
                   json::object({{"job_name", "kubelet"},
                                 {"honor_labels", true},
                                 {"metrics_path", "/metrics/cadvisor"},
                                 {"static_configs", json::array({kubelet_config})}})});
  const std::string config_path = cluster_.dataDir() + "/prometheus.yml";
  std::ofstream(config_path) << config.dump(2);
  prom_port_ = testutil::freePort();
  prometheus_ = std::make_unique<testutil::Process>(
      std::vector<std::string>{kPrometheus, "--config.file=" + config_path,
                               "--storage.tsdb.path=" + cluster_.dataDir() + "/prometheus",
                               "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_)});
  prometheus_->start();
  const double prom_start = unixNow();

  // Every target up.
  const size_t want_targets = trainers.size() + 2;
  json targets;
  auto upCount = [](const json& t) {
    size_t up = 0;
    if (t.contains("data"))
      for (const json& a : t["data"].value("activeTargets", json::array()))
        if (a.value("health", "") == "up") ++up;
    return up;
  };
  for (auto deadline = std::chrono::steady_clock::now() + 120s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(500ms)) {
    targets = api("/api/v1/targets");
    if (upCount(targets) == want_targets) break;
  }
  ASSERT_EQ(upCount(targets), want_targets) << targets.dump(2) << prometheus_->stderrSoFar();
  const auto all_up = std::chrono::steady_clock::now();

  // Scraped for a while, every allreduce and pipeline rank finished an epoch (its gauges are
  // set at epoch ends), the parameter server applied a push (its workers evaluate only at
  // the end of the run), both pbt members met for a round (one exploited) and the grid's trial
  // finished.
  bool ready = false;
  const std::string evaluating = std::to_string(trainers.size() - ps_ranks.size());
  const std::string not_ps = std::string("{trainingjob!=\"") + kPsJob + "\"}";
  for (auto deadline = std::chrono::steady_clock::now() + 300s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(500ms)) {
    json acc = query("count(ringmaster_trainer_test_accuracy_ratio" + not_ps + " > 0)", unixNow());
    json ps = query("sum(ringmaster_ps_server_updates_total) > 0", unixNow());
    json rounds = query(std::string("count(ringmaster_trainer_pbt_objective{experiment=\"") +
                            kPbtSearch + "\"} > 0) == 2 and on() sum(ringmaster_trainer_pbt_" +
                            "exploits_total{experiment=\"" + kPbtSearch + "\"}) >= 1",
                        unixNow());
    json best = query(std::string("ringmaster_operator_experiment_best_objective{experiment=\"") +
                          kGridSearch + "\"}",
                      unixNow());
    const json& res = acc["data"]["result"];
    if (std::chrono::steady_clock::now() - all_up >= kMinScrapeSpan && res.is_array() &&
        !res.empty() && res[0]["value"][1] == evaluating &&
        !ps["data"].value("result", json::array()).empty() &&
        !rounds["data"].value("result", json::array()).empty() &&
        !best["data"].value("result", json::array()).empty()) {
      ready = true;
      break;
    }
  }
  ASSERT_TRUE(ready) << "not every rank finished an epoch (or pbt round) while scraped\n"
                     << cluster_.kubectl({"get", "tj", kJob, "-o", "yaml"}).stdout_text
                     << cluster_.kubectl({"get", "exp,tj"}).stdout_text;
  // One instant for every query, a scrape behind now so that all targets' samples are in.
  const double at = unixNow() - 1.0;
  const std::string range = std::to_string(static_cast<int>(std::ceil(at - prom_start))) + "s";

  // The variables: label_values() queries give the values the panels' $namespace/$trainingjob
  // take.
  std::map<std::string, std::string> vars = {{"__rate_interval", kRateInterval},
                                             {"__interval", "1s"},
                                             {"__range", range},
                                             {"__range_s", range.substr(0, range.size() - 1)}};
  std::vector<DashboardQuery> queries;
  std::vector<std::pair<std::string, std::string>> variables;  // name, query
  for (const json& v : dashboard["templating"].value("list", json::array())) {
    if (v.value("type", "") != "query") continue;
    const json& q = v["query"];
    variables.push_back({v["name"], q.is_object() ? q.value("query", "") : q.get<std::string>()});
  }
  std::set<std::string> unknown;
  for (const auto& [name, q] : variables) {
    auto lv = parseLabelValues(q);
    ASSERT_TRUE(lv.has_value()) << "variable " << name << ": not label_values(): " << q;
    const std::string selector = substitute(lv->first, vars, &unknown);
    json r = query(selector, at);
    std::set<std::string> values;
    for (const json& s : r["data"].value("result", json::array()))
      if (s["metric"].contains(lv->second)) values.insert(s["metric"][lv->second]);
    std::string joined;
    for (const std::string& value : values) joined += (joined.empty() ? "" : "|") + value;
    std::printf("%-34s %-4zu %s  -> %s\n", ("variable $" + name).c_str(), values.size(), q.c_str(),
                joined.c_str());
    EXPECT_FALSE(values.empty()) << "variable $" << name << ": " << q << " has no values ("
                                 << selector << " -> " << r.dump() << ")";
    // A multi-value variable under =~ is Grafana's (a|b).
    vars[name] = values.size() == 1 ? joined : "(" + joined + ")";
  }
  EXPECT_EQ(vars["namespace"], "default");
  EXPECT_EQ(vars["trainingjob"], std::string("(") + kJob + "|" + kGridSearch + "-trial-0|" +
                                     kOwnJob + "|" + member0 + "|" + member1 + "|" + kPipelineJob +
                                     "|" + kPsJob + ")");
  EXPECT_EQ(vars["experiment"], std::string("(") + kGridSearch + "|" + kPbtSearch + ")");
  // The search row: the grid's one trial finished (planned 1, succeeded 1) with an objective,
  // and the population's members each show their objective over time, by Experiment.
  {
    json done = query(std::string("ringmaster_operator_experiment_trials{experiment=\"") +
                          kGridSearch + "\", state=~\"planned|succeeded\"}",
                      at);
    ASSERT_EQ(done["data"].value("result", json::array()).size(), 2u) << done.dump();
    for (const json& series : done["data"]["result"])
      EXPECT_EQ(series["value"][1], "1") << done.dump();
    json best = query(std::string("ringmaster_operator_experiment_best_objective{experiment=\"") +
                          kGridSearch + "\", metric=\"testAccuracy\"}",
                      at);
    ASSERT_EQ(best["data"].value("result", json::array()).size(), 1u) << best.dump();
    const double objective = std::stod(best["data"]["result"][0]["value"][1].get<std::string>());
    EXPECT_GT(objective, 0.5) << "one epoch of the MLP: " << best.dump();
    EXPECT_LE(objective, 1.0) << best.dump();
    json population = query(std::string("count by (experiment) (ringmaster_trainer_pbt_objective{"
                                        "experiment=\"") +
                                kPbtSearch + "\"} > 0)",
                            at);
    ASSERT_EQ(population["data"].value("result", json::array()).size(), 1u) << population.dump();
    EXPECT_EQ(population["data"]["result"][0]["value"][1], "2") << population.dump();
  }
  // The user's own program, known without its help: Running, one rank, and its pod's CPU (a
  // busy loop) and memory.
  {
    const std::string own = std::string("{namespace=\"default\", trainingjob=\"") + kOwnJob + "\"}";
    json phase = query("ringmaster_operator_job_phase" + own, at);
    const json& res = phase["data"]["result"];
    ASSERT_TRUE(res.is_array() && res.size() == 1) << phase.dump();
    EXPECT_EQ(res[0]["metric"].value("phase", ""), "Running") << phase.dump();
    json world = query("ringmaster_operator_job_world_size" + own, at);
    ASSERT_FALSE(world["data"]["result"].empty()) << world.dump();
    EXPECT_EQ(world["data"]["result"][0]["value"][1], "1") << world.dump();
    const std::string pod =
        std::string("{namespace=\"default\", pod=\"") + kOwnJob + "-worker-0\"}";
    json cpu = query(std::string("sum(rate(container_cpu_usage_seconds_total") + pod + "[" +
                         kRateInterval + "]))",
                     at);
    ASSERT_FALSE(cpu["data"]["result"].empty()) << cpu.dump();
    // Its share of 2 cores beside five busy ranks (and CI's compiler) is small, never none.
    EXPECT_GT(std::stod(cpu["data"]["result"][0]["value"][1].get<std::string>()), 0.01)
        << "a busy loop's CPU: " << cpu.dump();
    json memory = query("sum(container_memory_working_set_bytes" + pod + ")", at);
    ASSERT_FALSE(memory["data"]["result"].empty()) << memory.dump();
    EXPECT_GT(std::stod(memory["data"]["result"][0]["value"][1].get<std::string>()), 0)
        << memory.dump();
  }
  // Prometheus keeps its own `job` (the scrape job) beside the trainers' `trainingjob`: nothing
  // was renamed to exported_job, and every rank's series carries both.
  {
    json r = query(std::string("count(ringmaster_trainer_steps_total{job=\"default/ringmaster-"
                               "trainers\", trainingjob=\"") +
                       kJob + "\", exported_job=\"\"})",
                   at);
    const json& res = r["data"]["result"];
    ASSERT_TRUE(res.is_array() && !res.empty()) << r.dump();
    EXPECT_EQ(res[0]["value"][1], std::to_string(data_parallel_ranks)) << r.dump();
  }
  // The operator's job counters carry the TrainingJob's namespace, not the operator pod's.
  {
    json r = query("ringmaster_operator_jobs_created_total{namespace=\"default\"}", at);
    const json& res = r["data"]["result"];
    ASSERT_TRUE(res.is_array() && res.size() == 1) << r.dump();
    EXPECT_EQ(res[0]["value"][1], "7")
        << "the four jobs and three trials created, in namespace default: " << r.dump();
  }

  collectPanels(dashboard.value("panels", json::array()), &queries);
  ASSERT_FALSE(queries.empty()) << "no panel targets in the dashboard";
  std::printf("queries at t=%.3f ($__rate_interval=%s, $__range=%s):\n", at, kRateInterval,
              range.c_str());
  for (const DashboardQuery& q : queries) {
    const std::string promql = substitute(q.expr, vars, &unknown);
    json r = query(promql, at);
    const json result = r.contains("data") ? r["data"].value("result", json::array()) : json();
    std::string values;
    for (size_t i = 0; i < result.size() && i < 4; ++i)
      values += std::string(i ? " " : "") + result[i]["value"][1].get<std::string>();
    std::printf("%-34s %-4zu %s  [%s]\n", q.title.c_str(), result.size(), q.expr.c_str(),
                values.c_str());
    EXPECT_EQ(r.value("status", ""), "success") << q.title << ": " << promql << " -> " << r.dump();
    EXPECT_FALSE(result.empty()) << "panel \"" << q.title << "\": no series for " << promql;
  }
  std::fflush(stdout);
  EXPECT_TRUE(unknown.empty()) << "Grafana variables the test does not know: " << [&] {
    std::string s;
    for (const auto& u : unknown) s += "$" + u + " ";
    return s;
  }();

  // Both exporters' exposition, as scraped, passes promtool's parser and linter.
  EXPECT_EQ(promtoolCheck("operator", "127.0.0.1", operator_port), "");
  EXPECT_EQ(promtoolCheck("kubelet", "127.0.0.1", std::stoi(kubelet_port), "/metrics/cadvisor"),
            "");
  const std::string rank0 = trainers[0].address;
  const size_t colon = rank0.rfind(':');
  EXPECT_EQ(promtoolCheck("trainer", rank0.substr(0, colon), std::stoi(rank0.substr(colon + 1))),
            "");
  const std::string stage1 = pipeline_trainers[1].address;
  const size_t stage1_colon = stage1.rfind(':');
  EXPECT_EQ(promtoolCheck("pipeline stage", stage1.substr(0, stage1_colon),
                          std::stoi(stage1.substr(stage1_colon + 1))),
            "");
  // A worker's exposition and the parameter server's (ranks 0 and 2: the last rank serves).
  for (const Target& t : ps_ranks) {
    const std::string pod = t.labels.value("pod", "");
    const std::string role = pod == std::string(kPsJob) + "-worker-2"   ? "parameter server"
                             : pod == std::string(kPsJob) + "-worker-0" ? "ps worker"
                                                                        : "";
    if (role.empty()) continue;
    const size_t at_colon = t.address.rfind(':');
    EXPECT_EQ(promtoolCheck(role, t.address.substr(0, at_colon),
                            std::stoi(t.address.substr(at_colon + 1))),
              "");
  }
  std::printf("wall time to the checks: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - test_start).count());
}

}  // namespace
}  // namespace ringmaster
