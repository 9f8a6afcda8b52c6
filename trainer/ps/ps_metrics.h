#pragma once
// The parameter-server mode's Prometheus metrics, beside the trainer's own (trainer_metrics.h)
// in the same registry, whose constant labels (trainingjob, rank) they carry:
//  - a server's: requests, bytes in (pushed gradients) and out (pulled values), the time a request
//    waited for the consistency model, updates, and the staleness of every applied push;
//  - a worker's: each step's pull and push round trips to all servers, and their bytes.
// The server's are a ServerObserver, fed by the server as it serves; a worker's are fed from
// its steps' timing (PsWorker::lastStep).
//
// Ownership: references point into the metrics::Registry passed to create(), which must outlive
// them. Thread-safety: prometheus-cpp metrics are thread-safe; observe() from one thread.

#include <memory>

#include "ringmaster/core/status.h"
#include "ringmaster/metrics/metrics.h"
#include "trainer/ps/parameter_server.h"
#include "trainer/ps/ps_worker.h"

namespace ringmaster::trainer::ps {

class PsServerMetrics final : public ServerObserver {
 public:
  // Series of server `server` (label `server`), every one there from the start at zero.
  static core::Result<std::unique_ptr<PsServerMetrics>> create(metrics::Registry& registry,
                                                               int server);
  void served(Request request, size_t bytes, double waited_seconds) override;
  void applied(int64_t staleness, uint64_t pushes) override;

 private:
  PsServerMetrics() = default;
  prometheus::Counter* pulls_ = nullptr;      // ringmaster_ps_server_requests_total{request=pull}
  prometheus::Counter* pushes_ = nullptr;     // ...{request=push}
  prometheus::Counter* bytes_in_ = nullptr;   // ringmaster_ps_server_bytes_total{direction=in}
  prometheus::Counter* bytes_out_ = nullptr;  // ...{direction=out}
  prometheus::Histogram* pull_wait_seconds_ = nullptr;  // ringmaster_ps_server_wait_seconds
  prometheus::Histogram* push_wait_seconds_ = nullptr;
  prometheus::Counter* updates_ = nullptr;      // ringmaster_ps_server_updates_total
  prometheus::Histogram* staleness_ = nullptr;  // ringmaster_ps_staleness_steps
};

struct PsWorkerMetrics {
  prometheus::Histogram* pull_seconds = nullptr;  // ringmaster_ps_worker_pull_seconds
  prometheus::Histogram* push_seconds = nullptr;  // ringmaster_ps_worker_push_seconds
  prometheus::Counter* bytes_pulled =
      nullptr;  // ringmaster_ps_worker_bytes_total{direction=pulled}
  prometheus::Counter* bytes_pushed = nullptr;  // ...{direction=pushed}

  static core::Result<PsWorkerMetrics> create(metrics::Registry& registry);
  // One step's figures.
  void observe(const WorkerStepTiming& step) const;
};

}  // namespace ringmaster::trainer::ps
