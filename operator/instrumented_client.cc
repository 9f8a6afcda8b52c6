#include "operator/instrumented_client.h"

#include <thread>

namespace ringmaster::op {

InstrumentedClient::InstrumentedClient(kube::ApiClient& inner, OperatorMetrics* metrics, double qps)
    : inner_(inner),
      metrics_(metrics),
      qps_(qps),
      burst_(std::max(1.0, 2 * qps)),
      tokens_(burst_),
      last_(std::chrono::steady_clock::now()) {}

void InstrumentedClient::takeToken() {
  if (qps_ <= 0) return;
  std::chrono::duration<double> wait{0};
  {
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
    tokens_ -= 1;  // may go negative: the debt is this caller's wait
    if (tokens_ < 0) wait = std::chrono::duration<double>(-tokens_ / qps_);
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

core::Result<kube::ApiResponse> InstrumentedClient::request(const kube::ApiRequest& request) {
  takeToken();
  core::Result<kube::ApiResponse> response = inner_.request(request);
  if (metrics_ != nullptr) {
    metrics_->apiRequest(kube::verbName(request.verb), response.ok() ? response->status_code : 0);
  }
  return response;
}

kube::ApiResult<std::unique_ptr<kube::WatchStream>> InstrumentedClient::watch(
    const kube::ApiRequest& request, kube::WatchSink& sink) {
  if (metrics_ != nullptr) metrics_->watchStarted();
  kube::ApiResult<std::unique_ptr<kube::WatchStream>> stream = inner_.watch(request, sink);
  if (metrics_ != nullptr) {
    metrics_->apiRequest("WATCH", stream.ok() ? 200 : stream.error().httpCode());
  }
  return stream;
}

}  // namespace ringmaster::op
