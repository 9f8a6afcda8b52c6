#include "ringmaster/rendezvous/heartbeat.h"

#include "ringmaster/core/log.h"

namespace ringmaster::rendezvous {

std::string heartbeatBeatsKey(int rank) { return "heartbeat/" + std::to_string(rank) + "/beats"; }
std::string heartbeatStepKey(int rank) { return "heartbeat/" + std::to_string(rank) + "/step"; }
std::string heartbeatDoneKey(int rank) { return "heartbeat/" + std::to_string(rank) + "/done"; }

core::Result<Heartbeat> readHeartbeat(Store& store, int rank) {
  const std::string context = "heartbeat of rank " + std::to_string(rank);
  Heartbeat hb;
  core::Result<int64_t> beats = store.add(heartbeatBeatsKey(rank), 0);
  if (!beats.ok()) return beats.status().withContext(context);
  hb.beats = *beats;
  core::Result<int64_t> step = store.add(heartbeatStepKey(rank), 0);
  if (!step.ok()) return step.status().withContext(context);
  hb.step = *step;
  core::Result<int64_t> done = store.add(heartbeatDoneKey(rank), 0);
  if (!done.ok()) return done.status().withContext(context);
  hb.done = *done != 0;
  return hb;
}

HeartbeatPublisher::HeartbeatPublisher(std::unique_ptr<Store> store, std::string prefix, int rank,
                                       std::function<int64_t()> step,
                                       std::chrono::milliseconds interval)
    : store_(std::move(store)),
      scoped_(store_.get(), std::move(prefix)),
      rank_(rank),
      step_(std::move(step)),
      interval_(interval) {
  if (core::Status st = publishOnce(); !st.ok()) {
    giveUp(st);
    return;
  }
  thread_ = std::thread([this] { loop(); });
}

HeartbeatPublisher::~HeartbeatPublisher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!failed_) {
    core::Status st = scoped_.set(heartbeatDoneKey(rank_), toBytes("1"));
    if (!st.ok())
      RM_LOG(DEBUG, RDZV) << "rank " << rank_ << ": could not mark done: " << st.message();
  }
}

core::Status HeartbeatPublisher::publishOnce() {
  // Step first: an observer that sees a new beat also sees a step at least this fresh.
  RM_RETURN_IF_ERROR(scoped_.set(heartbeatStepKey(rank_), toBytes(std::to_string(step_()))));
  core::Result<int64_t> beats = scoped_.add(heartbeatBeatsKey(rank_), 1);
  return beats.ok() ? core::Status::Ok() : beats.status();
}

void HeartbeatPublisher::giveUp(const core::Status& why) {
  failed_ = true;
  if (!stopping_)
    RM_LOG(WARN, RDZV) << "rank " << rank_ << ": heartbeats stopped: " << why.message();
}

void HeartbeatPublisher::loop() {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, interval_, [this] { return stopping_; });  // the constructor beat once
  while (!stopping_) {
    lock.unlock();
    core::Status st = publishOnce();
    lock.lock();
    if (!st.ok()) {
      giveUp(st);
      return;
    }
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace ringmaster::rendezvous
