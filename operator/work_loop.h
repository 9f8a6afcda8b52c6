#pragma once
// What both controllers (TrainingJobs, Experiments) run between their informers and their
// reconciler: the wait for the caches' first list, and the workers that take keys off the queue,
// reconcile them and put them back as the outcome says (forget on success, again after
// requeue_after, with backoff on error).
//
// Thread-safety: runWorkers starts and joins its own threads; the queue is thread-safe.
// Failure: a reconcile error is logged and retried with backoff, never thrown.

#include <functional>
#include <stop_token>
#include <string>
#include <string_view>

#include "operator/operator_metrics.h"
#include "operator/reconciler.h"
#include "ringmaster/kube/workqueue.h"

namespace ringmaster::op {

using ReconcileFn = std::function<core::Result<Action>(const std::string& key)>;

// Blocks until synced() holds or `stop` is requested; whether it holds.
bool waitForCaches(std::stop_token stop, const std::function<bool()>& synced);

// `workers` threads drain `queue` with `reconcile` until `stop` shuts the queue down; returns
// once they finished the keys they held. `what` names the keys in log lines ("job",
// "experiment"); `metrics` (may be null) counts reconciles and the queue's depth.
void runWorkers(std::stop_token stop, kube::WorkQueue& queue, int workers,
                const ReconcileFn& reconcile, std::string_view what, OperatorMetrics* metrics);

}  // namespace ringmaster::op
