// The base64 codec: standard (Secret data, ConfigMap binaryData) and URL-safe (continue tokens).

#include "ringmaster/core/base64.h"

#include <gtest/gtest.h>

namespace ringmaster::core {
namespace {

TEST(Base64, EncodesRfc4648Vectors) {
  EXPECT_EQ(base64Encode(""), "");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64, DecodesWhatItEncodes) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += char(i);
  for (std::size_t n = 0; n <= all.size(); n += 37) {
    std::string bytes = all.substr(0, n);
    EXPECT_EQ(base64Decode(base64Encode(bytes)), bytes) << n;
  }
}

TEST(Base64, RejectsMalformedText) {
  for (const char* bad : {"Zg=", "Zg", "Z===", "Zm9v!", "Zm9v YmFy", "=Zm9", "Zg==Zg=="}) {
    EXPECT_FALSE(base64Decode(bad).has_value()) << bad;
  }
}

TEST(Base64Url, EncodesUnpaddedWithTheUrlAlphabet) {
  EXPECT_EQ(base64UrlEncode(""), "");
  EXPECT_EQ(base64UrlEncode("f"), "Zg");
  EXPECT_EQ(base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(base64UrlEncode("foo"), "Zm9v");
  EXPECT_EQ(base64UrlEncode("\xfb\xff\xbf"), "-_-_");  // "+/+/" in the standard alphabet
}

TEST(Base64Url, DecodesItsOwnPaddedAndStandardText) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += char(i);
  for (std::size_t n = 0; n <= all.size(); n += 37) {
    std::string bytes = all.substr(0, n);
    EXPECT_EQ(base64UrlDecode(base64UrlEncode(bytes)), bytes) << n;
    EXPECT_EQ(base64UrlDecode(base64Encode(bytes)), bytes) << n;  // padded, '+' and '/'
  }
}

TEST(Base64Url, RejectsMalformedText) {
  for (const char* bad : {"Z", "Zm9vY", "Zm9v!", "Zm 9v", "Zg==Zg"}) {
    EXPECT_FALSE(base64UrlDecode(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace ringmaster::core
