#pragma once
// Cutting text for people (termination messages, condition messages) without splitting a
// UTF-8 character: a cut inside one would leave invalid UTF-8, which the API server rejects.
//
// Thread-safety: pure functions.

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

// The byte offset of the first byte that does not start or continue a well-formed UTF-8
// character (overlong forms, surrogates and code points past U+10FFFF included, as JSON
// serializers refuse them), or npos when all of `text` is valid UTF-8.
inline size_t utf8InvalidOffset(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (b < 0x80) {
      len = 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (text.size() - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace ringmaster::core
