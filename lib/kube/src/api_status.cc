#include "ringmaster/kube/api_status.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitStatusCause(V& v, S& s) {
  v("reason", s.reason);
  v("message", s.message);
  v("field", s.field);
}

template <class V, class S>
void visitStatusDetails(V& v, S& s) {
  v("name", s.name);
  v("group", s.group);
  v("kind", s.kind);
  v("uid", s.uid);
  v("causes", s.causes);
  v("retryAfterSeconds", s.retry_after_seconds);
}

template <class V, class S>
void visitApiStatus(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v("metadata", s.metadata);
  v("status", s.status);
  v("message", s.message);
  v("reason", s.reason);
  v("details", s.details);
  v("code", s.code);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(StatusCause, visitStatusCause)
RM_KUBE_DEFINE_CODEC(StatusDetails, visitStatusDetails)
RM_KUBE_DEFINE_CODEC(ApiStatus, visitApiStatus)

ApiStatus ApiStatus::failure(int32_t code, std::string reason, std::string message) {
  ApiStatus s;
  setTypeMeta(s);
  s.metadata = ListMeta{};
  s.status = "Failure";
  s.message = std::move(message);
  s.reason = std::move(reason);
  s.code = code;
  return s;
}

}  // namespace ringmaster::kube
