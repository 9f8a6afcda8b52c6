#include "trainer/checkpoint/crc64.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster::trainer::checkpoint {
namespace {

TEST(Crc64, MatchesTheXzCheckValue) {
  // The catalogued check value of CRC-64/XZ.
  EXPECT_EQ(crc64(0, "123456789", 9), 0x995DC9BBDF1939FAull);
  EXPECT_EQ(crc64(0, "", 0), 0u);
}

TEST(Crc64, ChainsAcrossPiecesOfAnyLength) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 37 + 11);
  const uint64_t whole = crc64(0, data.data(), data.size());
  for (size_t cut : {0u, 1u, 7u, 8u, 9u, 500u, 999u, 1000u}) {
    uint64_t crc = crc64(0, data.data(), cut);
    crc = crc64(crc, data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc, whole) << "cut at " << cut;
  }
}

TEST(Crc64, DetectsASingleFlippedBit) {
  std::string data(4096, 'a');
  const uint64_t before = crc64(0, data.data(), data.size());
  data[1234] ^= 0x10;
  EXPECT_NE(crc64(0, data.data(), data.size()), before);
}

}  // namespace
}  // namespace ringmaster::trainer::checkpoint
