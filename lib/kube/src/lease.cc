#include "ringmaster/kube/lease.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitLeaseSpec(V& v, S& s) {
  v("holderIdentity", s.holder_identity);
  v("leaseDurationSeconds", s.lease_duration_seconds);
  v("acquireTime", s.acquire_time);
  v("renewTime", s.renew_time);
  v("leaseTransitions", s.lease_transitions);
}

template <class V, class S>
void visitLease(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(LeaseSpec, visitLeaseSpec)
RM_KUBE_DEFINE_CODEC(Lease, visitLease)

}  // namespace ringmaster::kube
