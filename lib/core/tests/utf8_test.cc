// utf8Prefix: never more than the limit, never half a character.
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

}  // namespace
}  // namespace ringmaster::core
