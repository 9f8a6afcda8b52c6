#include "ringmaster/metrics/metrics.h"

#include <prometheus/text_serializer.h>

#include <cctype>
#include <cmath>
#include <memory>

#include "ringmaster/http/probe_server.h"

namespace ringmaster::metrics {

core::Status checkName(const std::string& name, bool is_counter) {
  static const std::string kPrefix = "ringmaster_";
  if (name.rfind(kPrefix, 0) != 0)
    return core::invalidArgument("metric " + name + ": name must start with " + kPrefix);
  for (char c : name) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      return core::invalidArgument("metric " + name + ": only [a-z0-9_] allowed");
  }
  const bool has_total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
  if (is_counter && !has_total)
    return core::invalidArgument("metric " + name + ": a counter name must end in _total");
  if (!is_counter && has_total)
    return core::invalidArgument("metric " + name + ": only counters may end in _total");
  for (const char* bad : {"_milliseconds", "_ms", "_kb", "_mb", "_percent"}) {
    if (name.find(bad) != std::string::npos)
      return core::invalidArgument("metric " + name + ": use base units (seconds, bytes, ratio)");
  }
  return core::Status::Ok();
}

Registry::Registry() : Registry(Labels{}) {}
Registry::Registry(Labels constant_labels)
    : registry_(std::make_shared<prometheus::Registry>()),
      constant_labels_(std::move(constant_labels)) {}

core::Result<prometheus::Family<prometheus::Counter>*> Registry::counter(const std::string& name,
                                                                         const std::string& help) {
  RM_RETURN_IF_ERROR(checkName(name, /*is_counter=*/true));
  return &prometheus::BuildCounter()
              .Name(name)
              .Help(help)
              .Labels(constant_labels_)
              .Register(*registry_);
}

core::Result<prometheus::Family<prometheus::Gauge>*> Registry::gauge(const std::string& name,
                                                                     const std::string& help) {
  RM_RETURN_IF_ERROR(checkName(name, /*is_counter=*/false));
  return &prometheus::BuildGauge()
              .Name(name)
              .Help(help)
              .Labels(constant_labels_)
              .Register(*registry_);
}

core::Result<prometheus::Family<prometheus::Histogram>*> Registry::histogram(
    const std::string& name, const std::string& help) {
  RM_RETURN_IF_ERROR(checkName(name, /*is_counter=*/false));
  return &prometheus::BuildHistogram()
              .Name(name)
              .Help(help)
              .Labels(constant_labels_)
              .Register(*registry_);
}

std::string Registry::serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

prometheus::Histogram::BucketBoundaries exponentialBuckets(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries bounds;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) bounds.push_back(v);
  return bounds;
}

struct Exposer::Impl {
  std::unique_ptr<http::ProbeServer> server;
};

Exposer::Exposer(std::unique_ptr<Impl> impl, int port) : impl_(std::move(impl)), port_(port) {}
Exposer::~Exposer() = default;

core::Result<std::unique_ptr<Exposer>> Exposer::start(const std::string& bind_host, int port,
                                                      const Registry& registry) {
  return start(bind_host, port, registry.prometheusRegistry(), "/metrics");
}

// Served by the project's ProbeServer, not prometheus-cpp's civetweb exposer: civetweb looks at
// its stop flag only between 2 s polls, so every trainer, kubelet and operator took ~2 s to exit.
core::Result<std::unique_ptr<Exposer>> Exposer::start(
    const std::string& bind_host, int port,
    const std::shared_ptr<prometheus::Collectable>& collectable, const std::string& path) {
  std::weak_ptr<prometheus::Collectable> weak = collectable;
  auto scrape = [weak]() -> http::Answer {
    auto source = weak.lock();
    if (!source) return {503, "metrics source gone\n"};
    return {200, prometheus::TextSerializer().Serialize(source->Collect()),
            "text/plain; version=0.0.4; charset=utf-8"};
  };
  auto server = http::ProbeServer::start(bind_host, port, {{path, std::move(scrape)}});
  if (!server.ok()) {
    return core::unavailable("metrics endpoint: " + server.status().message());
  }
  auto impl = std::make_unique<Impl>();
  impl->server = std::move(*server);
  const int bound = impl->server->port();
  return std::unique_ptr<Exposer>(new Exposer(std::move(impl), bound));
}

}  // namespace ringmaster::metrics
