#include "ringmaster/kube/event.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitEventSource(V& v, S& s) {
  v("component", s.component);
  v("host", s.host);
}

template <class V, class S>
void visitEvent(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v.required("involvedObject", s.involved_object);
  v("reason", s.reason);
  v("message", s.message);
  v("type", s.type);
  v("count", s.count);
  v("firstTimestamp", s.first_timestamp);
  v("lastTimestamp", s.last_timestamp);
  v("eventTime", s.event_time);
  v("source", s.source);
  v("reportingComponent", s.reporting_component);
  v("reportingInstance", s.reporting_instance);
  v("action", s.action);
  v("related", s.related);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(EventSource, visitEventSource)
RM_KUBE_DEFINE_CODEC(Event, visitEvent)

}  // namespace ringmaster::kube
