// The base64 codec under Secret data and ConfigMap binaryData.

#include "base64.h"

#include <gtest/gtest.h>

namespace ringmaster::kube::internal {
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

}  // namespace
}  // namespace ringmaster::kube::internal
