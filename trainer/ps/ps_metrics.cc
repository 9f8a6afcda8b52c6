#include "trainer/ps/ps_metrics.h"

#include <string>

namespace ringmaster::trainer::ps {
namespace {

// A round trip on loopback is tens of microseconds; a pull held back by a slow worker, seconds.
prometheus::Histogram::BucketBoundaries latencyBuckets() {
  return metrics::exponentialBuckets(1e-5, 2, 22);
}

// Steps behind the slowest worker: exact where it matters (0-4, bounded staleness' usual
// bounds), then doubling.
prometheus::Histogram::BucketBoundaries stalenessBuckets() {
  return {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128};
}

}  // namespace

core::Result<std::unique_ptr<PsServerMetrics>> PsServerMetrics::create(metrics::Registry& r,
                                                                       int server) {
  std::unique_ptr<PsServerMetrics> m(new PsServerMetrics());
  const std::string id = std::to_string(server);
  RM_ASSIGN_OR_RETURN(auto requests, r.counter("ringmaster_ps_server_requests_total",
                                               "Pulls and pushes this parameter server answered"));
  m->pulls_ = &requests->Add({{"server", id}, {"request", "pull"}});
  m->pushes_ = &requests->Add({{"server", id}, {"request", "push"}});
  RM_ASSIGN_OR_RETURN(auto bytes,
                      r.counter("ringmaster_ps_server_bytes_total",
                                "Bytes of gradients pushed to (in) and of parameters pulled from "
                                "(out) this parameter server"));
  m->bytes_in_ = &bytes->Add({{"server", id}, {"direction", "in"}});
  m->bytes_out_ = &bytes->Add({{"server", id}, {"direction", "out"}});
  RM_ASSIGN_OR_RETURN(
      auto wait, r.histogram("ringmaster_ps_server_wait_seconds",
                             "Time a pull or push waited before this parameter server answered "
                             "it: for the slowest worker (sync, bounded staleness) or its lock"));
  m->pull_wait_seconds_ = &wait->Add({{"server", id}, {"request", "pull"}}, latencyBuckets());
  m->push_wait_seconds_ = &wait->Add({{"server", id}, {"request", "push"}}, latencyBuckets());
  RM_ASSIGN_OR_RETURN(auto updates, r.counter("ringmaster_ps_server_updates_total",
                                              "Optimizer steps this parameter server took"));
  m->updates_ = &updates->Add({{"server", id}});
  RM_ASSIGN_OR_RETURN(
      auto staleness,
      r.histogram("ringmaster_ps_staleness_steps",
                  "Steps a pushed gradient's step was ahead of the slowest live worker when this "
                  "parameter server applied it (0 in sync; at most the bound under bounded)"));
  m->staleness_ = &staleness->Add({{"server", id}}, stalenessBuckets());
  return m;
}

void PsServerMetrics::served(Request request, size_t bytes, double waited_seconds) {
  const auto b = static_cast<double>(bytes);
  if (request == Request::kPull) {
    pulls_->Increment();
    bytes_out_->Increment(b);
    pull_wait_seconds_->Observe(waited_seconds);
  } else {
    pushes_->Increment();
    bytes_in_->Increment(b);
    push_wait_seconds_->Observe(waited_seconds);
  }
}

void PsServerMetrics::applied(int64_t staleness, uint64_t pushes) {
  updates_->Increment();
  // One observation per push: the histogram counts pushes, as the server's counters do.
  for (uint64_t i = 0; i < pushes; ++i) staleness_->Observe(static_cast<double>(staleness));
}

core::Result<PsWorkerMetrics> PsWorkerMetrics::create(metrics::Registry& r) {
  PsWorkerMetrics m;
  RM_ASSIGN_OR_RETURN(
      auto pull, r.histogram("ringmaster_ps_worker_pull_seconds",
                             "Wall time of one step's pull of its parameters from every server"));
  m.pull_seconds = &pull->Add({}, latencyBuckets());
  RM_ASSIGN_OR_RETURN(auto push,
                      r.histogram("ringmaster_ps_worker_push_seconds",
                                  "Wall time of one step's push of its gradients to every server"));
  m.push_seconds = &push->Add({}, latencyBuckets());
  RM_ASSIGN_OR_RETURN(auto bytes,
                      r.counter("ringmaster_ps_worker_bytes_total",
                                "Bytes of parameters this worker pulled and gradients it pushed"));
  m.bytes_pulled = &bytes->Add({{"direction", "pulled"}});
  m.bytes_pushed = &bytes->Add({{"direction", "pushed"}});
  return m;
}

void PsWorkerMetrics::observe(const WorkerStepTiming& step) const {
  pull_seconds->Observe(step.pull_seconds);
  push_seconds->Observe(step.push_seconds);
  bytes_pulled->Increment(static_cast<double>(step.bytes_pulled));
  bytes_pushed->Increment(static_cast<double>(step.bytes_pushed));
}

}  // namespace ringmaster::trainer::ps
