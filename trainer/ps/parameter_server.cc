#include "trainer/ps/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "ringmaster/core/deadline.h"
#include "trainer/ps/push_step.h"

namespace ringmaster::trainer::ps {
namespace {

using Clock = std::chrono::steady_clock;

std::string workerName(WorkerId worker) { return "worker " + std::to_string(worker); }

}  // namespace

core::Result<std::unique_ptr<ParameterServer>> ParameterServer::create(
    int server, std::vector<Piece> pieces, std::span<const float> initial, int workers,
    ServerOptions options) {
  const std::string where = "parameter server " + std::to_string(server);
  if (workers < 0) {
    return core::invalidArgument(where + ": workers must be >= 0, got " + std::to_string(workers));
  }
  if (options.elastic && options.consistency.isSync()) {
    return core::invalidArgument(where +
                                 ": an elastic run's workers come and go, which a sync "
                                 "step (every live worker's batch) cannot keep; use async "
                                 "or bounded staleness");
  }
  size_t elements = 0;
  for (const Piece& piece : pieces) {
    if (piece.elements < 1) {
      return core::invalidArgument(where + ": a piece of tensor " + std::to_string(piece.tensor) +
                                   " has no elements");
    }
    elements += static_cast<size_t>(piece.elements);
  }
  if (initial.size() != elements) {
    return core::invalidArgument(where + ": " + std::to_string(initial.size()) +
                                 " initial values for pieces of " + std::to_string(elements));
  }
  // A server without pieces still checks the configuration it was given.
  const optim::OptimizerConfig first =
      pushStep(options.consistency, options.optimizer, workers).optimizer;
  RM_RETURN_IF_ERROR(optim::Optimizer::create(options.optimizer, 1).status());
  RM_ASSIGN_OR_RETURN(auto optimizer,
                      optim::Optimizer::create(first, std::max<size_t>(elements, 1)));
  std::unique_ptr<ParameterServer> ps(
      new ParameterServer(server, std::move(pieces), elements, std::move(options)));
  if (elements > 0) ps->optimizer_ = std::move(optimizer);
  // An elastic run counts pushes: one "step" of progress each.
  ps->workers_ = ps->options_.elastic ? 1 : std::max(workers, 1);
  ps->step_config_ = first;
  ps->values_.assign(initial.begin(), initial.end());
  ps->scratch_.resize(elements);
  for (WorkerId w = 0; w < workers; ++w) RM_RETURN_IF_ERROR(ps->clock_.join(w, 0));
  return ps;
}

ParameterServer::ParameterServer(int server, std::vector<Piece> pieces, size_t elements,
                                 ServerOptions options)
    : id_(server),
      pieces_(std::move(pieces)),
      elements_(elements),
      options_(std::move(options)),
      clock_(options_.consistency) {}

ParameterServer::~ParameterServer() = default;

core::Status ParameterServer::waitForStep(std::unique_lock<std::mutex>& lock, WorkerId worker,
                                          int64_t step, const char* what) {
  const std::string where = "parameter server " + std::to_string(id_) + ": " + what + " of " +
                            workerName(worker) + " for step " + std::to_string(step);
  if (closed_) return core::cancelled(where + ": server closed");
  const std::optional<int64_t> clock = clock_.clockOf(worker);
  if (!clock) return core::notFound(where + ": not a live worker");
  if (step != *clock) {
    return core::invalidArgument(where + ": its clock is " + std::to_string(*clock));
  }
  const bool allowed = changed_.wait_for(lock, options_.wait_timeout, [&] {
    return closed_ || !clock_.clockOf(worker) || clock_.mayStart(step);
  });
  if (closed_) return core::cancelled(where + ": server closed while waiting");
  if (!clock_.clockOf(worker)) return core::notFound(where + ": removed while waiting");
  if (!allowed) {
    return core::timeoutError(where + ": still waits for the slowest worker (clock " +
                              std::to_string(clock_.minClock().value_or(0)) + ", " +
                              toString(consistency()) + ")");
  }
  return core::Status::Ok();
}

core::Status ParameterServer::pull(WorkerId worker, int64_t step, std::span<float> values,
                                   PullView view) {
  if (values.size() != elements_) {
    return core::invalidArgument("parameter server " + std::to_string(id_) + ": pull into " +
                                 std::to_string(values.size()) + " floats, holds " +
                                 std::to_string(elements_));
  }
  const Clock::time_point arrived = Clock::now();
  std::unique_lock lock(mu_);
  RM_RETURN_IF_ERROR(waitForStep(lock, worker, step, "pull"));
  if (options_.observer)
    options_.observer->served(ServerObserver::Request::kPull, elements_ * sizeof(float),
                              core::secondsSince(arrived));
  const std::vector<float>* velocity = optimizer_ ? optimizer_->velocity() : nullptr;
  float ahead = 0;
  if (!isSync() && view == PullView::kForStep && velocity && velocity->size() == elements_) {
    const auto found = expected_updates_.find(worker);
    const double updates = found != expected_updates_.end()
                               ? found->second
                               : static_cast<double>(clock_.liveWorkers()) - 1.0;
    ahead = static_cast<float>(lookahead(step_config_, optimizer_->learningRate(), updates));
  }
  // One pass over the values either way: a copy, or the copy moved on along the momentum.
  if (ahead == 0.0f) {
    std::copy(values_.begin(), values_.end(), values.begin());
  } else {
    for (size_t i = 0; i < elements_; ++i) values[i] = values_[i] - ahead * (*velocity)[i];
  }
  pulled_at_[worker] = {step, counters_.updates};
  ++counters_.pulls;
  counters_.bytes_pulled += elements_ * sizeof(float);
  return core::Status::Ok();
}

core::Status ParameterServer::push(WorkerId worker, int64_t step,
                                   std::span<const float> gradients) {
  if (gradients.size() != elements_) {
    return core::invalidArgument("parameter server " + std::to_string(id_) + ": push of " +
                                 std::to_string(gradients.size()) + " floats, holds " +
                                 std::to_string(elements_));
  }
  {
    const Clock::time_point arrived = Clock::now();
    std::unique_lock lock(mu_);
    // Normally at once: the worker pulled this step. A push without that pull waits the same.
    RM_RETURN_IF_ERROR(waitForStep(lock, worker, step, "push"));
    if (options_.observer)
      options_.observer->served(ServerObserver::Request::kPush, elements_ * sizeof(float),
                                core::secondsSince(arrived));
    ++counters_.pushes;
    counters_.bytes_pushed += elements_ * sizeof(float);
    if (isSync()) {
      // Every pending gradient is of the slowest clock's step, which is this one.
      pending_step_ = step;
      pending_[worker].assign(gradients.begin(), gradients.end());
      RM_RETURN_IF_ERROR(clock_.advance(worker, step + 1));
      completeStepIfReady();
    } else {
      const int workers = static_cast<int>(clock_.liveWorkers());
      const PushStep rule = pushStep(consistency(), options_.optimizer, workers);
      RM_RETURN_IF_ERROR(useOptimizer(rule.optimizer));
      // Updates by the other workers since this worker pulled the step (a round without a pull:
      // as many as a normal round).
      const auto pulled = pulled_at_.find(worker);
      const int64_t since = pulled != pulled_at_.end() && pulled->second.first == step
                                ? static_cast<int64_t>(counters_.updates - pulled->second.second)
                                : workers - 1;
      const auto scale = static_cast<float>(rule.gradient_scale * stalenessScale(workers, since));
      const auto expected = expected_updates_.try_emplace(worker, workers - 1.0).first;
      expected->second = expectedUpdates(expected->second, since);
      for (size_t i = 0; i < elements_; ++i) scratch_[i] = gradients[i] * scale;
      const int64_t staleness = clock_.staleness(step);
      ++counters_.staleness[staleness];
      ++counters_.pushes_applied;
      if (options_.observer) options_.observer->applied(staleness, 1);
      apply(step);
      RM_RETURN_IF_ERROR(clock_.advance(worker, step + 1));
      const auto workers_at_start = static_cast<uint64_t>(workers_);
      if (counters_.pushes % workers_at_start == 0)
        snapshotAt(static_cast<int64_t>(counters_.pushes / workers_at_start));
    }
  }
  changed_.notify_all();
  return core::Status::Ok();
}

void ParameterServer::completeStepIfReady() {
  if (pending_.empty()) return;
  const std::optional<int64_t> slowest = clock_.minClock();
  if (slowest && *slowest <= pending_step_) return;  // a live worker still owes this step
  auto it = pending_.begin();
  std::copy(it->second.begin(), it->second.end(), scratch_.begin());
  for (++it; it != pending_.end(); ++it) {
    for (size_t i = 0; i < elements_; ++i) scratch_[i] += it->second[i];
  }
  const float scale = 1.0f / static_cast<float>(pending_.size());
  for (size_t i = 0; i < elements_; ++i) scratch_[i] *= scale;
  const int64_t staleness = clock_.staleness(pending_step_);
  counters_.staleness[staleness] += pending_.size();
  counters_.pushes_applied += pending_.size();
  if (options_.observer) options_.observer->applied(staleness, pending_.size());
  apply(pending_step_);
  pending_.clear();
  snapshotAt(pending_step_ + 1);
}

void ParameterServer::snapshotAt(int64_t step) {
  if (options_.snapshot_every <= 0 || step <= 0 || step % options_.snapshot_every != 0) return;
  ServerSnapshot snapshot;
  snapshot.step = step;
  snapshot.values = values_;
  if (optimizer_) {
    snapshot.optimizer_step = optimizer_->stepCount();
    for (const std::vector<float>* buffer : optimizer_->state())
      snapshot.optimizer_state.push_back(*buffer);
  }
  snapshot_ = std::move(snapshot);
}

std::optional<ServerSnapshot> ParameterServer::takeSnapshot() {
  std::lock_guard lock(mu_);
  std::optional<ServerSnapshot> taken = std::move(snapshot_);
  snapshot_.reset();
  return taken;
}

core::Status ParameterServer::restore(const ServerSnapshot& snapshot) {
  const std::string where =
      "parameter server " + std::to_string(id_) + ": restore step " + std::to_string(snapshot.step);
  if (snapshot.values.size() != elements_) {
    return core::invalidArgument(where + ": " + std::to_string(snapshot.values.size()) +
                                 " values for pieces of " + std::to_string(elements_));
  }
  std::lock_guard lock(mu_);
  if (counters_.pulls > 0 || counters_.pushes > 0 || !pending_.empty()) {
    return core::internalError(where + ": workers already pulled or pushed");
  }
  if (optimizer_) {
    const std::vector<std::vector<float>*> state = optimizer_->state();
    if (state.size() != snapshot.optimizer_state.size()) {
      return core::invalidArgument(where + ": " + std::to_string(snapshot.optimizer_state.size()) +
                                   " optimizer buffers, the optimizer keeps " +
                                   std::to_string(state.size()));
    }
    for (size_t i = 0; i < state.size(); ++i) {
      if (snapshot.optimizer_state[i].size() != state[i]->size()) {
        return core::invalidArgument(where + ": optimizer buffer " + std::to_string(i) + " of " +
                                     std::to_string(snapshot.optimizer_state[i].size()) +
                                     " floats, not " + std::to_string(state[i]->size()));
      }
      *state[i] = snapshot.optimizer_state[i];
    }
    optimizer_->setStepCount(snapshot.optimizer_step);
  }
  values_ = snapshot.values;
  const auto workers = static_cast<uint64_t>(workers_);
  const auto step = static_cast<uint64_t>(snapshot.step);
  // Sync took `step` updates of every worker's push; the loose modes `step` x workers pushes,
  // each an update.
  counters_.pushes = step * workers;
  counters_.pushes_applied = counters_.pushes;
  counters_.updates = isSync() ? step : step * workers;
  for (WorkerId w = 0; w < workers_ && !options_.elastic; ++w) {
    if (clock_.clockOf(w)) RM_RETURN_IF_ERROR_CTX(clock_.advance(w, snapshot.step), where);
  }
  pending_step_ = snapshot.step;
  return core::Status::Ok();
}

core::Status ParameterServer::useOptimizer(const optim::OptimizerConfig& config) {
  if (config.momentum == step_config_.momentum && config.weight_decay == step_config_.weight_decay)
    return core::Status::Ok();
  if (optimizer_) {
    // The per-push momentum follows the live workers; the momentum buffer carries over.
    RM_ASSIGN_OR_RETURN(auto next, optim::Optimizer::create(config, elements_));
    const std::vector<std::vector<float>*> from = optimizer_->state(), to = next->state();
    for (size_t i = 0; i < from.size() && i < to.size(); ++i) *to[i] = *from[i];
    next->setStepCount(optimizer_->stepCount());
    next->setLearningRate(optimizer_->learningRate());
    optimizer_ = std::move(next);
  }
  step_config_ = config;
  return core::Status::Ok();
}

void ParameterServer::apply(int64_t step) {
  const auto progress = static_cast<int64_t>(counters_.updates) / workers_;
  ++counters_.updates;
  if (!optimizer_) return;
  if (options_.learning_rate_at)
    optimizer_->setLearningRate(options_.learning_rate_at(isSync() ? step : progress));
  optimizer_->step(values_, scratch_);
}

WorkerStanding ParameterServer::standing(WorkerId worker) const {
  std::lock_guard lock(mu_);
  if (const std::optional<int64_t> clock = clock_.clockOf(worker)) return {true, *clock};
  return {false, clock_.joinClock()};
}

core::Result<int64_t> ParameterServer::addWorker(WorkerId worker, std::optional<int64_t> clock) {
  int64_t joined = 0;
  {
    std::lock_guard lock(mu_);
    if (closed_) return core::cancelled("parameter server " + std::to_string(id_) + ": closed");
    RM_RETURN_IF_ERROR_CTX(clock_.join(worker, clock), "parameter server " + std::to_string(id_));
    joined = *clock_.clockOf(worker);
  }
  changed_.notify_all();
  return joined;
}

core::Status ParameterServer::removeWorker(WorkerId worker) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return core::cancelled("parameter server " + std::to_string(id_) + ": closed");
    RM_RETURN_IF_ERROR(clock_.leave(worker));
    pulled_at_.erase(worker);
    expected_updates_.erase(worker);
    if (isSync()) completeStepIfReady();
  }
  changed_.notify_all();
  return core::Status::Ok();
}

core::Status ParameterServer::load(std::span<const float> values) {
  if (values.size() != elements_) {
    return core::invalidArgument("parameter server " + std::to_string(id_) + ": load of " +
                                 std::to_string(values.size()) + " floats, holds " +
                                 std::to_string(elements_));
  }
  std::lock_guard lock(mu_);
  std::copy(values.begin(), values.end(), values_.begin());
  return core::Status::Ok();
}

std::vector<float> ParameterServer::values() const {
  std::lock_guard lock(mu_);
  return values_;
}

uint64_t ParameterServer::pushes() const {
  std::lock_guard lock(mu_);
  return counters_.pushes;
}

ServerCounters ParameterServer::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

size_t ParameterServer::liveWorkers() const {
  std::lock_guard lock(mu_);
  return clock_.liveWorkers();
}

void ParameterServer::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace ringmaster::trainer::ps
