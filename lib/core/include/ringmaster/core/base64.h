#pragma once
// Base64, the one codec of the repository.
//   base64Encode/Decode        standard (RFC 4648 section 4, padded), as Kubernetes writes
//                              Secret data, ConfigMap binaryData and kubeconfig certificates.
//   base64UrlEncode/Decode     URL-safe (section 5, unpadded), as kube-apiserver writes list
//                              continue tokens; decode also takes padding and the standard
//                              alphabet, as clients may send either.
// Written here rather than with OpenSSL's EVP_DecodeBlock, which accepts what the API server
// refuses (padding inside the text, spaces) and would add libcrypto to every component.
// Thread-safety: pure functions. Failure: decode returns nullopt on any character outside the
// alphabet, bad padding, or a length no encoding produces.

#include <optional>
#include <string>
#include <string_view>

namespace ringmaster::core {

std::string base64Encode(std::string_view bytes);
std::optional<std::string> base64Decode(std::string_view text);
std::string base64UrlEncode(std::string_view bytes);
std::optional<std::string> base64UrlDecode(std::string_view text);

}  // namespace ringmaster::core
