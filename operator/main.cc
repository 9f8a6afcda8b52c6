// ringmaster-operator: runs TrainingJobs (crds/trainingjob.yaml) to completion on Kubernetes.
// In a cluster it uses its service account; outside one, a kubeconfig (--kubeconfig, $KUBECONFIG,
// ~/.kube/config). With --leader-elect, replicas compete for the Lease
// <lease-namespace>/ringmaster-operator and only the holder reconciles. SIGTERM stops the
// workers after the keys they hold, releases the Lease and exits 0.
// Exit codes: 0 clean stop, 1 start-up failure (config, ports), 2 usage.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <thread>

#include "operator/controller.h"
#include "operator/instrumented_client.h"
#include "operator/operator_metrics.h"
#include "operator/progress.h"
#include "operator/progress_poller.h"
#include "operator/search_controller.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/http/probe_server.h"
#include "ringmaster/kube/client_factory.h"
#include "ringmaster/kube/event_recorder.h"
#include "ringmaster/kube/kubeconfig.h"
#include "ringmaster/kube/leader_election.h"
#include "ringmaster/metrics/metrics.h"

namespace rm = ringmaster;

namespace {

struct Config {
  std::string kubeconfig;
  std::string namespace_name;
  int64_t workers = 4;
  double qps = 50;
  bool leader_elect = true;
  std::string lease_namespace;
  std::string lease_name = "ringmaster-operator";
  // kube-controller-manager's defaults; a shorter lease fails over faster and renews more often.
  double lease_duration_seconds = 15;
  double renew_deadline_seconds = 10;
  double retry_period_seconds = 2;
  double pod_batch_seconds =
      std::chrono::duration<double>(rm::op::Controller::Options{}.pod_batch_period).count();
  int64_t metrics_port = 8383;
  int64_t health_port = 8384;
  std::string bind_address = "0.0.0.0";
  std::string trainer_image = "ringmaster/trainer:0.1.0";
  bool allow_host_path = false;
};

int fail(const rm::core::Status& status) {
  RM_LOG(ERROR, CORE) << status.toString();
  return status.exitCode();
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

std::string identity() {
  std::random_device rd;
  char suffix[17];
  std::snprintf(suffix, sizeof(suffix), "%08x%08x", rd(), rd());
  return hostname() + "_" + suffix;
}

}  // namespace

int main(int argc, char** argv) {
  rm::core::log::initFromEnv();
  Config config;
  rm::core::FlagSet flags("ringmaster-operator",
                          "Runs TrainingJobs (ringmaster.dev/v1alpha1): creates each job's "
                          "Service, ConfigMap and worker pods, restarts the gang on failure and "
                          "reports status and progress. Runs Experiments: hyperparameter "
                          "searches whose trials are TrainingJobs.");
  flags.addString("kubeconfig", &config.kubeconfig,
                  "kubeconfig file; empty: $KUBECONFIG, in-cluster service account, "
                  "~/.kube/config (in that order)");
  flags.addString("namespace", &config.namespace_name,
                  "watch TrainingJobs in this namespace only; empty: all namespaces",
                  "RINGMASTER_NAMESPACE");
  flags.addInt("workers", &config.workers, "reconciles running at once (different jobs)");
  flags.addDouble("qps", &config.qps,
                  "API requests per second (token bucket, burst 2x; watches exempt; 0: no limit)");
  flags.addDouble("pod-batch-seconds", &config.pod_batch_seconds,
                  "a pod's change reconciles its job this many seconds later, together with its "
                  "gang's other changes in that time (one status write for all; 0: at once)");
  flags.addBool("leader-elect", &config.leader_elect,
                "only the holder of the Lease reconciles (run two replicas for failover)");
  flags.addString("lease-namespace", &config.lease_namespace,
                  "namespace of the leader Lease; empty: the kubeconfig's (in-cluster: the "
                  "operator's own) namespace",
                  "POD_NAMESPACE");
  flags.addString("lease-name", &config.lease_name, "name of the leader Lease");
  flags.addDouble("leader-elect-lease-duration", &config.lease_duration_seconds,
                  "seconds a standby waits after the last renewal before taking the Lease");
  flags.addDouble("leader-elect-renew-deadline", &config.renew_deadline_seconds,
                  "seconds the leader keeps retrying a renewal before it stops leading");
  flags.addDouble("leader-elect-retry-period", &config.retry_period_seconds,
                  "seconds between acquire and renew attempts");
  flags.addInt("metrics-port", &config.metrics_port,
               "serve Prometheus /metrics on this port (0: any free port, -1: off)");
  flags.addInt("health-port", &config.health_port,
               "serve /healthz, /readyz and /metrics on this port (0: any, -1: off)");
  flags.addString("bind-address", &config.bind_address,
                  "IPv4 address the metrics and health ports listen on");
  flags.addString("trainer-image", &config.trainer_image,
                  "worker image for TrainingJobs that name none (spec.image)",
                  "RINGMASTER_TRAINER_IMAGE");
  flags.addBool("allow-host-path", &config.allow_host_path,
                "let TrainingJobs mount hostPath volumes (the node's files); off: refused");
  bool help = false;
  rm::core::Status parsed = flags.parse(argc, argv, &help);
  if (help) {
    std::cout << flags.help();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << parsed.message() << "\n\n" << flags.help();
    return 2;
  }
  if (config.workers < 1) return fail(rm::core::usageError("--workers: must be at least 1"));
  if (!(config.pod_batch_seconds >= 0 && config.pod_batch_seconds <= 60)) {
    return fail(rm::core::usageError("--pod-batch-seconds: must be between 0 and 60"));
  }
  // client-go's rule: the leader must give up before a standby may take over.
  if (!(config.retry_period_seconds > 0 &&
        config.renew_deadline_seconds > config.retry_period_seconds &&
        config.lease_duration_seconds > config.renew_deadline_seconds)) {
    return fail(rm::core::usageError(
        "--leader-elect-lease-duration (" + std::to_string(config.lease_duration_seconds) +
        ") must exceed --leader-elect-renew-deadline (" +
        std::to_string(config.renew_deadline_seconds) +
        "), which must exceed --leader-elect-retry-period (" +
        std::to_string(config.retry_period_seconds) + "), which must be positive"));
  }

  rm::core::StopSource& stop = rm::core::installSignalStop();
  auto kubeconfig =
      rm::kube::loadKubeConfig(rm::kube::KubeConfigSources::fromEnvironment(config.kubeconfig));
  if (!kubeconfig.ok()) return fail(kubeconfig.status());
  auto transport = rm::kube::makeApiClient(*kubeconfig);
  if (!transport.ok()) return fail(transport.status());
  if (config.lease_namespace.empty()) config.lease_namespace = kubeconfig->namespace_name;

  rm::metrics::Registry registry;
  auto metrics = rm::op::OperatorMetrics::create(registry);
  if (!metrics.ok()) return fail(metrics.status());
  rm::op::InstrumentedClient client(**transport, metrics->get(), config.qps);

  std::unique_ptr<rm::metrics::Exposer> exposer;
  if (config.metrics_port >= 0) {
    auto started = rm::metrics::Exposer::start(config.bind_address,
                                               static_cast<int>(config.metrics_port), registry);
    if (!started.ok()) return fail(started.status());
    exposer = std::move(started).value();
  }
  std::atomic<bool> ready{false};
  std::unique_ptr<rm::http::ProbeServer> health;
  if (config.health_port >= 0) {
    std::map<std::string, rm::http::ProbeServer::Handler> routes;
    routes["/healthz"] = [] { return rm::http::Answer{200, "ok\n"}; };
    routes["/readyz"] = [&ready] {
      return ready ? rm::http::Answer{200, "ok\n"}
                   : rm::http::Answer{503, "informer caches not synced\n"};
    };
    routes["/metrics"] = [&registry] {
      return rm::http::Answer{200, registry.serialize(), "text/plain; version=0.0.4"};
    };
    auto started = rm::http::ProbeServer::start(config.bind_address,
                                                static_cast<int>(config.health_port), routes);
    if (!started.ok()) return fail(started.status());
    health = std::move(started).value();
  }
  RM_LOG(INFO, CORE) << "ringmaster-operator: API server " << kubeconfig->server << " ("
                     << kubeconfig->source << "), namespace "
                     << (config.namespace_name.empty() ? "(all)" : config.namespace_name)
                     << ", workers " << config.workers << ", qps " << config.qps
                     << ", leader-elect " << (config.leader_elect ? "on" : "off")
                     << ", metrics port " << (exposer ? exposer->port() : -1) << ", health port "
                     << (health ? health->port() : -1) << ", trainer image "
                     << config.trainer_image;

  rm::kube::Clock& clock = rm::kube::realClock();
  rm::kube::EventRecorder events(
      client, clock, {"ringmaster-operator", hostname(), "", 4096, rm::kube::kEventQueueLength});
  rm::op::Controller::Options controller_options;
  // Rank 0's metrics are scraped off the reconcile path, as often as a running job's status is
  // refreshed; a pass reads the newest scrape.
  rm::op::HttpProgressSource scrape;
  rm::op::ProgressPoller progress(scrape, controller_options.reconciler.progress_interval);
  controller_options.namespace_name = config.namespace_name;
  controller_options.workers = static_cast<int>(config.workers);
  controller_options.pod_batch_period = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(config.pod_batch_seconds * 1000)));
  controller_options.reconciler.validate.default_image = config.trainer_image;
  controller_options.reconciler.validate.allow_host_path = config.allow_host_path;

  std::unique_ptr<rm::kube::LeaderElector> elector;
  std::jthread elector_thread;
  if (config.leader_elect) {
    rm::kube::LeaderElector::Options options;
    options.lease_name = config.lease_name;
    options.namespace_name = config.lease_namespace;
    options.identity = identity();
    auto millis = [](double seconds) {
      return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    };
    // The Lease stores whole seconds (leaseDurationSeconds); round up, never below 1.
    options.lease_duration = std::chrono::seconds(
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(config.lease_duration_seconds))));
    options.renew_deadline = millis(config.renew_deadline_seconds);
    options.retry_period = millis(config.retry_period_seconds);
    rm::kube::LeaderElector::Callbacks callbacks;
    callbacks.on_new_leader = [](const std::string& who) {
      RM_LOG(INFO, KUBE) << "leader is now " << (who.empty() ? "(none)" : who);
    };
    RM_LOG(INFO, KUBE) << "leader election on Lease " << config.lease_namespace << "/"
                       << config.lease_name << " as " << options.identity << " (lease "
                       << options.lease_duration.count() << " s, renew deadline "
                       << config.renew_deadline_seconds << " s, retry "
                       << config.retry_period_seconds << " s)";
    elector = std::make_unique<rm::kube::LeaderElector>(client, clock, options, callbacks);
    elector_thread = std::jthread([&elector](std::stop_token s) { elector->run(s); });
  }

  rm::op::SearchController::Options search_options;
  search_options.namespace_name = config.namespace_name;
  search_options.validate = controller_options.reconciler.validate;

  // The TrainingJob controller and the Experiment (search) controller run together, on the
  // leader only.
  std::unique_ptr<rm::op::Controller> controller;
  std::unique_ptr<rm::op::SearchController> search;
  std::jthread controller_thread, search_thread;
  auto stopController = [&] {
    if (!controller) return;
    controller_thread.request_stop();
    search_thread.request_stop();
    controller_thread.join();
    search_thread.join();
    controller.reset();
    search.reset();
  };
  while (!stop.stopRequested()) {
    const bool leading = !elector || elector->isLeader();
    (*metrics)->leader(leading);
    if (leading && !controller) {
      RM_LOG(INFO, RECONCILE) << "leading: starting the controller";
      controller = std::make_unique<rm::op::Controller>(client, events, clock, progress,
                                                        metrics->get(), controller_options);
      controller_thread = std::jthread([c = controller.get()](std::stop_token s) { c->run(s); });
      search_options.metrics = metrics->get();
      search = std::make_unique<rm::op::SearchController>(client, events, clock, search_options);
      search_thread = std::jthread([c = search.get()](std::stop_token s) { c->run(s); });
    } else if (!leading && controller) {
      RM_LOG(WARN, RECONCILE) << "lost the leader Lease: stopping the controller";
      stopController();
    }
    // Ready: a leader with synced caches, or a standby (it has nothing to sync).
    ready = controller ? controller->synced() : true;
    stop.waitFor(std::chrono::milliseconds(200));
  }
  RM_LOG(INFO, CORE) << "stopping (" << stop.reason() << ")";
  ready = false;
  stopController();
  if (elector_thread.joinable()) {
    elector_thread.request_stop();
    elector_thread.join();  // releases the Lease
  }
  (*metrics)->leader(false);
  RM_LOG(INFO, CORE) << "ringmaster-operator stopped";
  return 0;
}
