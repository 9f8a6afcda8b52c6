#pragma once
// List<T>: the reply to a LIST (PodList, TrainingJobList, ...): apiVersion, kind "<Kind>List",
// metadata {resourceVersion, continue, remainingItemCount}, items. Items of a list may lack
// apiVersion/kind (the server leaves them out for built-in kinds); they stay absent.
//
// Thread-safety: plain value. Failure: decode returns InvalidArgument naming the field path
// ("items[3].spec.replicas: expected integer, got string").

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/detail/object_codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

template <class T>
struct List {
  std::string api_version;
  std::string kind;
  ListMeta metadata;
  std::vector<T> items;
  nlohmann::json extra;
  bool operator==(const List&) const = default;
};

namespace detail {
template <class V, class S>
void visitList(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v.required("items", s.items);
}
}  // namespace detail

template <class T>
core::Status fromJson(const nlohmann::json& j, const FieldPath& path, List<T>& out) {
  out = List<T>{};
  detail::ObjectDecoder decoder(j, path);
  detail::visitList(decoder, out);
  return decoder.finish(out.extra);
}

template <class T>
nlohmann::json toJson(const List<T>& in) {
  detail::ObjectEncoder encoder(in.extra);
  detail::visitList(encoder, in);
  return encoder.take();
}

}  // namespace ringmaster::kube
