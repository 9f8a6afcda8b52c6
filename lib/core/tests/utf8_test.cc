// utf8Prefix: never more than the limit, never half a character. utf8InvalidOffset: where
// text stops being well-formed UTF-8.
#include "ringmaster/core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster::core {
namespace {

TEST(Utf8Prefix, CutsOnCharacterBoundaries) {
  const std::string text = "ab\xc3\xa9\xe2\x82\xac";  // "abé€": 1+1+2+3 bytes
  struct Case {
    size_t max;
    std::string want;
  };
  const Case cases[] = {
      {100, text}, {7, text}, {6, "ab\xc3\xa9"}, {5, "ab\xc3\xa9"}, {4, "ab\xc3\xa9"},
      {3, "ab"},   {2, "ab"}, {1, "a"},          {0, ""},
  };
  for (const Case& c : cases) EXPECT_EQ(std::string(utf8Prefix(text, c.max)), c.want) << c.max;
}

TEST(Utf8InvalidOffset, FindsTheFirstMalformedByte) {
  constexpr size_t kValid = std::string_view::npos;
  struct Case {
    std::string text;
    size_t want;
  };
  const Case cases[] = {
      {"", kValid},
      {"plain ascii", kValid},
      {"ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", kValid},  // é € 😀
      {"\xf4\x8f\xbf\xbf", kValid},                        // U+10FFFF
      {"a\xff!", 1},                                       // never in UTF-8
      {"ab\x80", 2},                                       // a lone continuation byte
      {"a\xc3", 1},                                        // cut short at the end
      {"a\xe2\x82z", 1},                                   // cut short by an ASCII byte
      {"\xc0\xaf", 0},                                     // overlong '/'
      {"\xe0\x80\xaf", 0},                                 // overlong, three bytes
      {"\xf0\x80\x80\xaf", 0},                             // overlong, four bytes
      {"ok\xed\xa0\x80", 2},                               // a UTF-16 surrogate
      {"\xf4\x90\x80\x80", 0},                             // past U+10FFFF
      {"caf\xe9", 3},                                      // Latin-1, not UTF-8
  };
  for (const Case& c : cases) EXPECT_EQ(utf8InvalidOffset(c.text), c.want) << c.text;
}

}  // namespace
}  // namespace ringmaster::core
