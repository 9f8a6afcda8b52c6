#pragma once
// Cutting text for people (termination messages, condition messages) without splitting a
// UTF-8 character: a cut inside one would leave invalid UTF-8, which the API server rejects.
//
// Thread-safety: pure function.

#include <cstddef>
#include <string_view>

namespace ringmaster::core {

// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary.
inline std::string_view utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

}  // namespace ringmaster::core
