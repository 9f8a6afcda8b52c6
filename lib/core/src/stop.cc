#include "ringmaster/core/stop.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "ringmaster/core/log.h"

namespace ringmaster::core {

void StopSource::requestStop(std::string reason) {
  {
    std::lock_guard lock(mu_);
    if (stopped_.load()) return;
    reason_ = std::move(reason);
    stopped_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

std::string StopSource::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

bool StopSource::waitFor(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return stopped_.load(); });
}

StopSource& installSignalStop() {
  static StopSource* source = [] {
    auto* s = new StopSource();  // lives until exit: the signal thread refers to it
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([s, set] {
      int signals_seen = 0;
      while (true) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        ++signals_seen;
        if (signals_seen > 1) {
          RM_LOG(WARN, CORE) << "second " << strsignal(sig) << ": exiting now";
          _exit(128 + sig);
        }
        RM_LOG(INFO, CORE) << "received " << strsignal(sig) << ": shutting down";
        s->requestStop(std::string("received ") + strsignal(sig));
      }
    }).detach();
    return s;
  }();
  return *source;
}

void unblockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace ringmaster::core
