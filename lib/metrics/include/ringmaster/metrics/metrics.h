#pragma once
// rm::metrics: a thin layer over prometheus-cpp. It owns a registry, serves it on /metrics, and
// enforces the project's naming rules: prefix "ringmaster_", base units, counters
// end in "_total".
//
// Ownership: Registry owns every metric family; references it hands out stay valid for the
// registry's lifetime. Exposer holds a weak reference to the registry.
// Thread-safety: prometheus-cpp metrics are thread-safe; Registry/Exposer setup is not (set up
// from one thread before training starts). Failure: family registration with a bad name, and an
// exposer that cannot bind, return a Status naming the metric or the address.

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::metrics {

using Labels = std::map<std::string, std::string>;

// Checks a metric name against the naming rules; `is_counter` requires the "_total" suffix.
core::Status checkName(const std::string& name, bool is_counter);

class Registry {
 public:
  Registry();
  // Constant labels (e.g. job, rank) are added to every family registered afterwards.
  explicit Registry(Labels constant_labels);

  core::Result<prometheus::Family<prometheus::Counter>*> counter(const std::string& name,
                                                                 const std::string& help);
  core::Result<prometheus::Family<prometheus::Gauge>*> gauge(const std::string& name,
                                                             const std::string& help);
  core::Result<prometheus::Family<prometheus::Histogram>*> histogram(const std::string& name,
                                                                     const std::string& help);

  // The text exposition format of everything registered (what /metrics serves).
  std::string serialize() const;

  std::shared_ptr<prometheus::Registry> prometheusRegistry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  Labels constant_labels_;
};

// Exponential histogram buckets: start, start*factor, ... (count of them).
prometheus::Histogram::BucketBoundaries exponentialBuckets(double start, double factor, int count);

class Exposer {
 public:
  // Serves `registry` at http://<bind_host>:<port>/metrics; port 0 picks a free port.
  static core::Result<std::unique_ptr<Exposer>> start(const std::string& bind_host, int port,
                                                      const Registry& registry);
  // Serves a collectable of its own at http://<bind_host>:<port><path>: series whose names are
  // another exporter's (the kubelet's cAdvisor ones), computed when scraped. The exposer holds
  // a weak reference: the caller keeps `collectable` alive while it serves.
  static core::Result<std::unique_ptr<Exposer>> start(
      const std::string& bind_host, int port,
      const std::shared_ptr<prometheus::Collectable>& collectable, const std::string& path);
  ~Exposer();
  int port() const { return port_; }

 private:
  struct Impl;
  explicit Exposer(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_;
};

}  // namespace ringmaster::metrics
