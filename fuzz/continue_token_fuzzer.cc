// The list `continue=` query parameter (local/store/meta_util.h): a client hands back a token
// it may have altered. One that decodes must encode to a token that decodes the same.
#include <string_view>

#include "local/store/meta_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ringmaster::local::decodeContinueToken;
  auto token = decodeContinueToken(std::string_view(reinterpret_cast<const char*>(data), size));
  if (token) {
    auto again = decodeContinueToken(ringmaster::local::encodeContinueToken(*token));
    if (!again || again->rv != token->rv || again->start != token->start) __builtin_trap();
  }
  return 0;
}
