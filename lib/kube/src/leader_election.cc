#include "ringmaster/kube/leader_election.h"

#include <condition_variable>

#include "ringmaster/core/log.h"

namespace ringmaster::kube {
namespace {
const ResourceType kLeases{"coordination.k8s.io", "v1", "leases", true};
}  // namespace

LeaderElector::LeaderElector(ApiClient& client, Clock& clock, Options options, Callbacks callbacks)
    : leases_(client, kLeases, options.namespace_name, options.renew_deadline),
      clock_(clock),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)) {}

std::string LeaderElector::leader() const {
  std::lock_guard lock(mu_);
  return observed_holder_;
}

void LeaderElector::observe(const Lease& lease) {
  if (observed_spec_ && *observed_spec_ == lease.spec) return;
  observed_spec_ = lease.spec;
  observed_time_ = clock_.now();
  const std::string holder = lease.spec.holder_identity.value_or("");
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    changed = holder != observed_holder_;
    observed_holder_ = holder;
  }
  if (changed && !holder.empty() && callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

void LeaderElector::setLeader(bool leader) {
  if (leader_.exchange(leader) == leader) return;
  RM_LOG(INFO, KUBE) << "lease " << options_.namespace_name << "/" << options_.lease_name << ": "
                     << options_.identity << (leader ? " became leader" : " lost leadership");
  if (leader && callbacks_.on_started_leading) callbacks_.on_started_leading();
  if (!leader && callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

bool LeaderElector::tryAcquireOrRenew() {
  const MicroTime now(clock_.wallNow());
  ApiResult<Lease> current = leases_.get(options_.lease_name);
  if (!current.ok() && current.error().isNotFound()) {
    Lease lease;
    lease.metadata.name = options_.lease_name;
    lease.metadata.namespace_name = options_.namespace_name;
    lease.spec.holder_identity = options_.identity;
    lease.spec.lease_duration_seconds = static_cast<int32_t>(options_.lease_duration.count());
    lease.spec.acquire_time = now;
    lease.spec.renew_time = now;
    lease.spec.lease_transitions = 0;
    ApiResult<Lease> created = leases_.create(lease);
    if (!created.ok()) {
      RM_LOG(DEBUG, KUBE) << "lease create: " << created.status().toString();
      return false;
    }
    observe(*created);
    last_written_ = std::move(created).value();
    return true;
  }
  if (!current.ok()) {
    RM_LOG(WARN, KUBE) << "lease get: " << current.status().toString();
    return false;
  }
  observe(*current);
  const std::string holder = current->spec.holder_identity.value_or("");
  const bool ours = holder == options_.identity;
  const auto duration = std::chrono::seconds(current->spec.lease_duration_seconds.value_or(0));
  if (!ours && !holder.empty() && observed_time_ + duration > clock_.now()) return false;

  Lease next = std::move(current).value();
  next.spec.holder_identity = options_.identity;
  next.spec.lease_duration_seconds = static_cast<int32_t>(options_.lease_duration.count());
  next.spec.renew_time = now;
  if (!ours) {
    next.spec.acquire_time = now;
    next.spec.lease_transitions = next.spec.lease_transitions.value_or(0) + 1;
  }
  ApiResult<Lease> updated = leases_.update(next);
  if (!updated.ok()) {
    RM_LOG(DEBUG, KUBE) << "lease update: " << updated.status().toString();
    return false;
  }
  observe(*updated);
  last_written_ = std::move(updated).value();
  return true;
}

std::chrono::milliseconds LeaderElector::step() {
  const bool held = tryAcquireOrRenew();
  if (held) {
    last_renew_ = clock_.now();
    setLeader(true);
  } else if (isLeader() && clock_.now() - last_renew_ >= options_.renew_deadline) {
    last_written_.reset();
    setLeader(false);
  }
  return options_.retry_period;
}

void LeaderElector::run(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    std::chrono::milliseconds delay = step();
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, delay, [] { return false; });
  }
  core::Status released = release();
  if (!released.ok()) RM_LOG(WARN, KUBE) << released.toString();
}

core::Status LeaderElector::release() {
  if (!isLeader() || !last_written_) return core::Status::Ok();
  const MicroTime now(clock_.wallNow());
  Lease lease = *last_written_;
  lease.spec.holder_identity = "";
  lease.spec.lease_duration_seconds = 1;
  lease.spec.acquire_time = now;
  lease.spec.renew_time = now;
  ApiResult<Lease> updated = leases_.update(lease);
  last_written_.reset();
  setLeader(false);
  if (!updated.ok()) return updated.status().withContext("releasing the lease");
  return core::Status::Ok();
}

}  // namespace ringmaster::kube
