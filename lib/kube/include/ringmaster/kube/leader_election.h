#pragma once
// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, as client-go does it:
//   acquire  GET the Lease; 404 -> POST one naming us (leaseTransitions 0). Held by another
//            identity and not expired -> not leader. Expired or ours -> PUT with the fresh
//            resourceVersion: holder us, renewTime now, acquireTime now and leaseTransitions+1
//            when the holder changes. A 409 means someone else won the race.
//   expiry   judged on *our* clock: a record that has not changed for leaseDurationSeconds
//            since we first observed it is expired (the holder's renewTime may be skewed).
//   renew    every retry_period while leader; when renewals have failed for renew_deadline
//            leadership is lost (on_stopped_leading) and acquiring starts again.
//   release  on stop, the leader writes holderIdentity "", leaseDurationSeconds 1 (client-go's
//            ReleaseOnCancel) so that a successor need not wait out the lease.
// Timestamps are MicroTime (six fractional digits) from the Clock's wall time.
//
// Ownership: borrows the ApiClient and Clock (both must outlive it). Thread-safety: step(),
// run() and release() from one thread; isLeader()/leader() from any thread. Callbacks run on
// the stepping thread. Failure: API errors are logged (KUBE) and count as a failed attempt.

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/clock.h"
#include "ringmaster/kube/lease.h"
#include "ringmaster/kube/resource_client.h"

namespace ringmaster::kube {

class LeaderElector {
 public:
  struct Options {
    std::string lease_name;
    std::string namespace_name;
    std::string identity;  // unique per candidate: "<hostname>_<uuid>"
    std::chrono::seconds lease_duration{15};
    std::chrono::milliseconds renew_deadline{10'000};
    std::chrono::milliseconds retry_period{2'000};
  };
  struct Callbacks {
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
    std::function<void(const std::string& identity)> on_new_leader;  // any holder change seen
  };

  LeaderElector(ApiClient& client, Clock& clock, Options options, Callbacks callbacks = {});

  // One acquire or renew attempt; returns the delay before the next (retry_period).
  std::chrono::milliseconds step();
  // Steps until `stop`, then releases the lease if held.
  void run(std::stop_token stop);
  // Gives the lease up if we hold it (holderIdentity "", leaseDurationSeconds 1).
  core::Status release();

  bool isLeader() const { return leader_.load(); }
  std::string leader() const;  // the last observed holder ("" when unknown)

 private:
  // True when we hold the lease after this attempt.
  bool tryAcquireOrRenew();
  void observe(const Lease& lease);
  void setLeader(bool leader);

  ResourceClient<Lease> leases_;
  Clock& clock_;
  Options options_;
  Callbacks callbacks_;
  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;  // guards observed_holder_
  std::string observed_holder_;
  std::optional<LeaseSpec> observed_spec_;
  Clock::TimePoint observed_time_{};
  Clock::TimePoint last_renew_{};
  std::optional<Lease> last_written_;  // our last successful write (for release)
};

}  // namespace ringmaster::kube
