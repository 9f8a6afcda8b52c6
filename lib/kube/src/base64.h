#pragma once
// Standard base64 (RFC 4648 §4, with padding), as Kubernetes writes Secret data and ConfigMap
// binaryData. Thread-safety: pure functions. Failure: decode returns nullopt on any character
// outside the alphabet, bad padding, or a length that is not a multiple of 4.

#include <optional>
#include <string>
#include <string_view>

namespace ringmaster::kube::internal {

std::string base64Encode(std::string_view bytes);
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace ringmaster::kube::internal
