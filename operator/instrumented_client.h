#pragma once
// InstrumentedClient: an ApiClient decorator that (1) limits the request rate to `qps` with a
// token bucket (burst = 2 x qps; watches are not limited, as client-go does), and (2) counts
// every request by verb and HTTP code, and every watch it opens, in OperatorMetrics.
//
// Ownership: borrows the inner client and the metrics (may be null); both must outlive it.
// Thread-safety: safe to share between threads when the inner client is. Failure: the inner
// client's; waiting for a token never fails (a request waits at most 1/qps x queue length).

#include <chrono>
#include <mutex>

#include "operator/operator_metrics.h"
#include "ringmaster/kube/api_client.h"

namespace ringmaster::op {

class InstrumentedClient : public kube::ApiClient {
 public:
  // qps <= 0: no limit.
  InstrumentedClient(kube::ApiClient& inner, OperatorMetrics* metrics, double qps);

  core::Result<kube::ApiResponse> request(const kube::ApiRequest& request) override;
  kube::ApiResult<std::unique_ptr<kube::WatchStream>> watch(const kube::ApiRequest& request,
                                                            kube::WatchSink& sink) override;
  const std::string& defaultNamespace() const override { return inner_.defaultNamespace(); }

 private:
  void takeToken();

  kube::ApiClient& inner_;
  OperatorMetrics* metrics_;
  double qps_;
  double burst_;
  std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace ringmaster::op
