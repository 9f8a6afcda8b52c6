#include "trainer/comm/collective_watchdog.h"

#include <unistd.h>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::comm {

using Clock = std::chrono::steady_clock;

CollectiveWatchdog::CollectiveWatchdog(std::string name, std::chrono::milliseconds timeout,
                                       std::chrono::milliseconds poll,
                                       std::chrono::milliseconds exit_grace, Hooks hooks)
    : name_(std::move(name)),
      timeout_(timeout),
      poll_(poll),
      exit_grace_(exit_grace),
      hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { loop(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::arm(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (armed_) return;  // the oldest outstanding work keeps its clock
  armed_ = true;
  armed_what_ = what;
  armed_since_ = Clock::now();
}

void CollectiveWatchdog::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = false;
}

void CollectiveWatchdog::acknowledge() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    acknowledged_ = true;
  }
  wake_.notify_all();
}

core::Status CollectiveWatchdog::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void CollectiveWatchdog::fail(core::Status status) {
  RM_LOG(ERROR, COMM) << status.message() << "; aborting the communicator (exit "
                      << kRetryableExitCode << " follows, retryable)";
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = status;
  }
  failed_.store(true, std::memory_order_release);
  if (hooks_.abort) hooks_.abort(status);
}

void CollectiveWatchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point failed_at{};
  while (!stopping_) {
    wake_.wait_for(lock, poll_);
    if (stopping_) break;
    if (failed_.load(std::memory_order_acquire)) {
      // After a failure, only the exit grace matters.
      if (!acknowledged_ && Clock::now() - failed_at >= exit_grace_) {
        const core::Status status = error_;
        lock.unlock();
        RM_LOG(ERROR, COMM) << name_ << ": the rank did not stop within " << exit_grace_.count()
                            << " ms of the abort; exiting " << kRetryableExitCode;
        if (hooks_.terminate) {
          hooks_.terminate(status);
        } else {
          _exit(kRetryableExitCode);
        }
        lock.lock();
        acknowledged_ = true;  // terminate runs once
      }
      continue;
    }
    lock.unlock();
    const Probe probe = hooks_.probe ? hooks_.probe() : Probe{};
    lock.lock();
    if (stopping_) break;
    core::Status failure;
    if (probe.state == State::kFailed) {
      failure = core::unavailable(name_ + ": " + probe.error);
    } else if (probe.state == State::kIdle) {
      armed_ = false;
    } else if (probe.progress != last_progress_) {
      last_progress_ = probe.progress;
      if (armed_) armed_since_ = Clock::now();
    } else if (armed_ && Clock::now() - armed_since_ >= timeout_) {
      failure = core::timeoutError(
          name_ + ": " + armed_what_ + " made no progress for " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count()) +
          " ms (a peer is gone or stuck)");
    }
    if (!failure.ok()) {
      failed_at = Clock::now();
      lock.unlock();
      fail(std::move(failure));
      lock.lock();
    }
  }
}

}  // namespace ringmaster::trainer::comm
