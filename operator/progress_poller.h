#pragma once
// ProgressPoller: rank 0's progress read off the reconcile path. The reconciler asks it as it
// would ask any ProgressSource, and gets at once the newest reading a background thread took of
// that address (Unavailable until there is one); the thread reads every address asked for and
// not yet forgotten through the source it wraps (the HTTP scrape), one at a time, each once per
// interval on its own schedule (a new address at once, without re-reading the others). A trainer
// that answers slowly or not at all therefore delays no reconcile pass, whichever job it belongs
// to. When a reading differs from the one before, the poller tells its listener (onChange), so
// that a job is reconciled when its progress moved rather than on a timer: an idle job costs a
// read per interval and no reconcile pass. The schedule is kept in due order: with a thousand
// running jobs, a scan of every address at each reading was a third of the idle operator's CPU.
//
// Thread-safety: read(), forget() and onChange() may be called from many threads; the polling
// thread is the only one that calls the wrapped source and the listener (never under the lock
// read() takes). Failure: read() returns Unavailable before the first reading of an address,
// else the wrapped source's last result (its error, too). Stops and joins its thread on
// destruction.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "operator/progress.h"

namespace ringmaster::op {

// Progress reads a second the operator spends on all Running jobs together, at most: each job's
// rank 0 is read every `base`, or less often once `running` jobs would need more reads than
// that (75 jobs or fewer: every 5 s; 1000: every 67 s; 3000: every 200 s), so that an idle
// operator stays well under 1% of a core per 1000 Running jobs (bench/operator measures it).
inline constexpr size_t kProgressReadsPerSecond = 15;
std::chrono::milliseconds progressInterval(std::chrono::milliseconds base, size_t running);

class ProgressPoller : public ProgressSource {
 public:
  // Reads each address every progressInterval(interval, addresses).
  ProgressPoller(ProgressSource& source, std::chrono::milliseconds interval);
  ~ProgressPoller() override;
  ProgressPoller(const ProgressPoller&) = delete;
  ProgressPoller& operator=(const ProgressPoller&) = delete;

  core::Result<kube::TrainingProgress> read(const std::string& host, int port) override;
  void forget(const std::string& host, int port) override;
  bool onChange(ChangeListener listener) override;

  // Addresses being polled, and those of them waiting for their next reading (for tests).
  size_t watched() const;
  size_t scheduled() const;

 private:
  using Clock = std::chrono::steady_clock;
  using Address = ProgressAddress;
  struct Target {
    std::optional<core::Result<kube::TrainingProgress>> last;  // none before the first reading
    std::optional<Clock::time_point> due;  // its entry in schedule_; none while being read
  };

  void poll(std::stop_token stop);
  void tell(const Address& address);

  ProgressSource& source_;
  const std::chrono::milliseconds interval_;
  std::mutex listener_mu_;  // held while the listener runs, so that onChange(nullptr) waits
  ChangeListener listener_;
  mutable std::mutex mu_;
  std::condition_variable_any asked_;  // a new address: read it now rather than next interval
  std::map<Address, Target> targets_;
  // Every target's next reading (but the one being read), earliest first; a new address is due
  // at once.
  std::set<std::pair<Clock::time_point, Address>> schedule_;
  bool fresh_ = false;   // an address was added since the thread last looked
  std::jthread thread_;  // last: it starts once the members above exist
};

}  // namespace ringmaster::op
