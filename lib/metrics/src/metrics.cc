#include "ringmaster/metrics/metrics.h"

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <cctype>
#include <cmath>

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
  std::unique_ptr<prometheus::Exposer> exposer;
};

Exposer::Exposer(std::unique_ptr<Impl> impl, int port) : impl_(std::move(impl)), port_(port) {}
Exposer::~Exposer() = default;

core::Result<std::unique_ptr<Exposer>> Exposer::start(const std::string& bind_host, int port,
                                                      const Registry& registry) {
  return start(bind_host, port, registry.prometheusRegistry(), "/metrics");
}

core::Result<std::unique_ptr<Exposer>> Exposer::start(
    const std::string& bind_host, int port,
    const std::shared_ptr<prometheus::Collectable>& collectable, const std::string& path) {
  const std::string address = bind_host + ":" + std::to_string(port);
  auto impl = std::make_unique<Impl>();
  try {
    // civetweb throws when it cannot bind; this is the library's edge.
    impl->exposer = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return core::unavailable("metrics endpoint: cannot listen on " + address + ": " + e.what());
  }
  impl->exposer->RegisterCollectable(collectable, path);
  auto ports = impl->exposer->GetListeningPorts();
  if (ports.empty()) return core::internalError("metrics endpoint " + address + ": no port bound");
  const int bound = ports.front();
  return std::unique_ptr<Exposer>(new Exposer(std::move(impl), bound));
}

}  // namespace ringmaster::metrics
