#pragma once
// One parameter server: it holds the values of the pieces a ShardPlan gives it (shard_plan.h),
// answers the workers' pulls with them, and turns the workers' pushed gradients of those pieces
// into updates with an optimizer of its own (optim::Optimizer: the data-parallel engine's math,
// element by element; only rounding may differ, by about an ulp, where a piece moves an element
// between the update kernel's vector loop and its remainder). It knows nothing of transports:
// the in-process connection (ps_worker.h) calls it directly, a networked one would call it from
// its request handlers.
//
// Steps count from 0; a worker's clock is the number of steps it has pushed, i.e. the step it
// pulls and pushes next (StalenessClock, staleness_gate.h). Per consistency model:
//  - sync: the pushes of step t are kept until every live worker has pushed t; then their mean
//    (summed in worker order, times 1/count, as allreduce-mean data parallelism does) is one
//    optimizer step, and only after it may a pull of step t+1 return.
//  - async: every push is one optimizer step at once, W the live workers when it arrives, with
//    the momentum, gradient scale and weight decay of pushStep (push_step.h): W pushes then move
//    the parameters as far as one sync step on their mean, and momentum remembers as many samples,
//    so the optimizer's settings mean the same in both modes. A push that other pushes overtook
//    more than W - 1 times since its pull counts less (stalenessScale).
//  - bounded staleness s: pushes are applied as in async, and a pull of step n waits until
//    n - (slowest live worker's clock) <= s.
// In both loose modes a pull for a step (PullView::kForStep) answers the values moved on along
// the momentum by the updates the worker's push will likely find applied (lookahead, push_step.h).
// The clock lives under the server's own mutex (not in a StalenessGate), so that applying step t
// and releasing the pulls of t+1 are one critical section.
//
// Staleness recorded for an applied push of step n: n minus the slowest live worker's clock when
// it is applied (StalenessClock::staleness): 0 in sync, at most s under bound s, unbounded async.
//
// Workers: 0..workers-1 are live from the start; addWorker() joins one at the slowest live clock
// or a clock it names (a worker added while a sync step is in progress takes part in it): a
// worker process that died and was started again rejoins this way, and the others never wait.
// removeWorker() drops one (dead or done): the live workers' pushes then complete the step it left
// open, and a gradient it pushed before it left still counts.
//
// Thread-safety: every member may be called from any thread; many workers pull and push at once
// (an update runs under the server's mutex). Failure: kInvalidArgument (a buffer whose size is
// not elements(), a step other than the worker's clock), kNotFound (a worker that is not live,
// also for a wait cut short by its removal), kAlreadyExists (addWorker of a live worker),
// kTimeout (a pull or push still waiting at wait_timeout), kCancelled (after close()).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/optim/optimizer.h"
#include "trainer/ps/shard_plan.h"
#include "trainer/ps/staleness_gate.h"

namespace ringmaster::trainer::ps {

// What a server reports as it serves, for its metrics (ps_metrics.h). Called under the server's
// mutex, so an observer must be quick and must not call back into the server.
class ServerObserver {
 public:
  enum class Request { kPull, kPush };
  virtual ~ServerObserver() = default;
  // A pull or push answered: `bytes` of values or gradients, after `waited_seconds` in which the
  // consistency model (or the server's lock) held it back.
  virtual void served(Request request, size_t bytes, double waited_seconds) = 0;
  // `pushes` pushed gradients went into one update, each `staleness` steps stale.
  virtual void applied(int64_t staleness, uint64_t pushes) = 0;
};

// One server's state at a step every worker can resume at: what its checkpoint holds. Sync takes
// one when step `step` is applied; async and bounded staleness when the pushes reach `step` x
// the workers the server started with (every server reaches that count, so the servers' snapshots
// of one step are a cut of the run).
struct ServerSnapshot {
  int64_t step = 0;
  std::vector<float> values;
  int64_t optimizer_step = 0;
  std::vector<std::vector<float>> optimizer_state;
};

struct ServerOptions {
  Consistency consistency = Consistency::sync();
  optim::OptimizerConfig optimizer;
  // The learning rate of the update of step `step` (a schedule); empty: the optimizer's own.
  // Sync: the step's; async and bounded staleness: the run's progress, updates / the workers it
  // started with, so that a worker running ahead of the others does not run the schedule ahead.
  std::function<double(int64_t step)> learning_rate_at;
  // How long a pull (or a push) may wait for the consistency model to let it through.
  std::chrono::milliseconds wait_timeout = std::chrono::seconds(60);
  ServerObserver* observer = nullptr;  // optional; borrowed, outlives the server
  // Take a snapshot every this many steps (takeSnapshot); 0: never.
  int64_t snapshot_every = 0;
  // An elastic run's server (loose consistency only): workers join and leave for good as the job
  // scales, so the schedule, the snapshots and a restore count pushes, whoever made them, where a
  // fixed world counts steps of the workers it started with; a restore leaves the clocks alone.
  bool elastic = false;
};

struct ServerCounters {
  uint64_t pulls = 0, pushes = 0;  // answered
  uint64_t bytes_pulled = 0, bytes_pushed = 0;
  uint64_t pushes_applied = 0;            // pushes whose gradient went into an update
  uint64_t updates = 0;                   // optimizer steps taken
  std::map<int64_t, uint64_t> staleness;  // staleness of an applied push -> how many

  int64_t maxStaleness() const { return staleness.empty() ? 0 : staleness.rbegin()->first; }
};

// What a pull is for: a worker's step (which a loose server answers looking ahead along the
// momentum), or the values as they stand (the final parameters, an evaluation).
enum class PullView : uint8_t { kForStep, kAsStored };

class ParameterServer {
 public:
  // `initial`: the values of `pieces`, concatenated in their order. Workers 0..workers-1 start
  // live at clock 0. kInvalidArgument for a size mismatch, a negative worker count or a bad
  // optimizer configuration.
  static core::Result<std::unique_ptr<ParameterServer>> create(int server,
                                                               std::vector<Piece> pieces,
                                                               std::span<const float> initial,
                                                               int workers, ServerOptions options);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int id() const { return id_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  // Floats held: the sum of the pieces' elements; the size of every pull and push buffer.
  size_t elements() const { return elements_; }
  // As given, a negative bound read as 0 (sync). Fixed at create().
  const Consistency& consistency() const { return clock_.consistency(); }

  // The pieces' values as step `step` may see them (waits as described above) into `values`.
  core::Status pull(WorkerId worker, int64_t step, std::span<float> values,
                    PullView view = PullView::kForStep);
  // The worker's gradient of the pieces for step `step`; advances its clock to step + 1.
  core::Status push(WorkerId worker, int64_t step, std::span<const float> gradients);
  // Where `worker` stands: live at its clock, or not live and the clock addWorker() would join
  // it at by default. A worker process that restarted asks this before it rejoins.
  WorkerStanding standing(WorkerId worker) const;
  // Joins `worker` at `clock` (default: the slowest live clock, or the last there was); returns
  // the step it runs first. A worker rejoining several servers joins each at the same clock.
  core::Result<int64_t> addWorker(WorkerId worker, std::optional<int64_t> clock = std::nullopt);
  core::Status removeWorker(WorkerId worker);

  // Replaces the values (a restored checkpoint); the optimizer state stays.
  core::Status load(std::span<const float> values);
  // Resumes from `snapshot` before any worker pulled or pushed: values, optimizer state and every
  // worker's clock (and the counts the schedule and the run's push budget follow) at its step.
  // kInvalidArgument for a snapshot of other sizes, kInternal once a worker pulled or pushed.
  core::Status restore(const ServerSnapshot& snapshot);
  // The newest snapshot taken since the last call (older ones not taken are dropped), for the
  // caller to write outside the server's lock.
  std::optional<ServerSnapshot> takeSnapshot();
  std::vector<float> values() const;
  ServerCounters counters() const;
  // Pushes answered so far (counters().pushes, without the copy): a loose-consistency run ends
  // once its servers took steps x workers of them.
  uint64_t pushes() const;
  // Workers live now (joined and neither left nor removed).
  size_t liveWorkers() const;
  // Fails waiting calls and every later pull, push and membership change with kCancelled.
  void close();

 private:
  ParameterServer(int server, std::vector<Piece> pieces, size_t elements, ServerOptions options);
  bool isSync() const { return consistency().isSync(); }
  // With mu_ held: checks the worker and its clock, then waits until step may be served.
  core::Status waitForStep(std::unique_lock<std::mutex>& lock, WorkerId worker, int64_t step,
                           const char* what);
  // With mu_ held: sync only; applies the pending step once no live worker still owes it.
  void completeStepIfReady();
  // With mu_ held: makes optimizer_ run `config` (a push's), keeping its state.
  core::Status useOptimizer(const optim::OptimizerConfig& config);
  // With mu_ held: one optimizer step of scratch_ for step `step`.
  void apply(int64_t step);
  // With mu_ held: keeps a snapshot at `step` when it is one of snapshot_every's.
  void snapshotAt(int64_t step);

  const int id_;
  int workers_ = 1;  // at create(), at least 1: the loose modes' schedule counts updates / it
  const std::vector<Piece> pieces_;
  const size_t elements_;
  const ServerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  StalenessClock clock_;
  std::vector<float> values_;
  std::unique_ptr<optim::Optimizer> optimizer_;  // null when the server holds no piece
  optim::OptimizerConfig step_config_;           // what optimizer_ runs
  // By worker: the step it last pulled and the updates applied before that pull.
  std::map<WorkerId, std::pair<int64_t, uint64_t>> pulled_at_;
  // Loose modes, by worker: the updates its next push will likely find applied since its pull
  // (expectedUpdates), how far its pulls look ahead.
  std::map<WorkerId, double> expected_updates_;
  // Sync: the gradients pushed for pending_step_, by worker.
  std::map<WorkerId, std::vector<float>> pending_;
  int64_t pending_step_ = 0;
  std::vector<float> scratch_;  // the gradient an update applies
  ServerCounters counters_;
  std::optional<ServerSnapshot> snapshot_;  // taken, not yet handed out
  bool closed_ = false;
};

}  // namespace ringmaster::trainer::ps
