#include "ringmaster/core/stop.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "ringmaster/core/log.h"

namespace ringmaster::core {

void StopSource::requestStop(std::string reason) {
  std::map<uint64_t, std::function<void()>> callbacks;
  std::unique_lock running(running_callbacks_, std::defer_lock);
  {
    std::lock_guard lock(mu_);
    if (stopped_.load()) return;
    reason_ = std::move(reason);
    stopped_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
    running.lock();
  }
  cv_.notify_all();
  for (auto& [id, wake] : callbacks) wake();
}

StopCallback::StopCallback(const StopSource& source, std::function<void()> wake) : source_(source) {
  {
    std::lock_guard lock(source_.mu_);
    if (!source_.stopped_.load()) {
      id_ = source_.next_callback_++;
      source_.callbacks_.emplace(id_, std::move(wake));
      registered_ = true;
      return;
    }
  }
  wake();
}

StopCallback::~StopCallback() {
  if (!registered_) return;
  {
    std::lock_guard lock(source_.mu_);
    if (source_.callbacks_.erase(id_) == 1) return;
  }
  // Taken by a stop under way: wait until its callbacks (this one's among them) have run.
  std::lock_guard running(source_.running_callbacks_);
}

std::string StopSource::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

bool StopSource::waitFor(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return stopped_.load(); });
}

namespace {
int g_signal_pipe[2] = {-1, -1};
std::atomic<int> g_signals_seen{0};

// Async-signal-safe: records the signal in a pipe; a second one exits at once.
void onStopSignal(int sig) {
  if (g_signals_seen.fetch_add(1) > 0) _exit(128 + sig);
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_signal_pipe[1], &byte, 1);
  (void)ignored;
}
}  // namespace

StopSource& installSignalStop() {
  // A handler (not a blocked mask + sigwait) because libraries start threads before main()
  // (OpenBLAS, Open MPI) and a process-directed signal may land on any of them.
  static StopSource* source = [] {
    auto* s = new StopSource();  // lives until exit: the watcher thread refers to it
    if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
      RM_LOG(ERROR, CORE) << "cannot create the signal pipe: " << strerror(errno)
                          << "; SIGTERM will not stop cleanly";
      return s;
    }
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    std::thread([s] {
      unsigned char sig = 0;
      while (read(g_signal_pipe[0], &sig, 1) != 1) {
        if (errno != EINTR) return;
      }
      RM_LOG(INFO, CORE) << "received " << strsignal(sig) << ": shutting down";
      s->requestStop(std::string("received ") + strsignal(sig));
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
