#include "operator/work_loop.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "ringmaster/core/log.h"

namespace ringmaster::op {
namespace {

void drain(kube::WorkQueue& queue, const ReconcileFn& reconcile, std::string_view what,
           OperatorMetrics* metrics) {
  while (std::optional<std::string> key = queue.get()) {
    const auto start = std::chrono::steady_clock::now();
    core::Result<Action> action = reconcile(*key);
    if (metrics != nullptr) {
      metrics->reconciled(std::chrono::steady_clock::now() - start, action.ok());
      metrics->workqueueDepth(queue.len());
    }
    if (!action.ok()) {
      RM_LOG(WARN, RECONCILE) << "reconcile " << what << " " << *key
                              << " failed, retrying with backoff: " << action.status().toString();
      queue.addRateLimited(*key);
    } else {
      queue.forget(*key);
      if (action->requeue_after) queue.addAfter(*key, *action->requeue_after);
    }
    queue.done(*key);
  }
}

}  // namespace

bool waitForCaches(std::stop_token stop, const std::function<bool()>& synced) {
  std::mutex mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested() && !synced()) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, std::chrono::milliseconds(50), [] { return false; });
  }
  return !stop.stop_requested();
}

void runWorkers(std::stop_token stop, kube::WorkQueue& queue, int workers,
                const ReconcileFn& reconcile, std::string_view what, OperatorMetrics* metrics) {
  std::stop_callback on_stop(stop, [&queue] { queue.shutDown(); });
  std::vector<std::jthread> threads;
  if (!stop.stop_requested()) {
    for (int i = 0; i < std::max(1, workers); ++i) {
      threads.emplace_back([&] { drain(queue, reconcile, what, metrics); });
    }
  }
  for (std::jthread& t : threads) t.join();
}

}  // namespace ringmaster::op
