#include "trainer/checkpoint/crc64.h"

#include <array>

namespace ringmaster::trainer::checkpoint {
namespace {

constexpr uint64_t kPolyReflected = 0xC96C5795D7870F42ull;

// Slice-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
using Tables = std::array<std::array<uint64_t, 256>, 8>;

constexpr Tables makeTables() {
  Tables t{};
  for (uint64_t b = 0; b < 256; ++b) {
    uint64_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kPolyReflected : crc >> 1;
    t[0][b] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr Tables kTables = makeTables();

}  // namespace

uint64_t crc64(uint64_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    // Little-endian assembly of 8 bytes, independent of host byte order.
    uint64_t word = 0;
    for (int i = 7; i >= 0; --i) word = (word << 8) | p[i];
    crc ^= word;
    crc = kTables[7][crc & 0xff] ^ kTables[6][(crc >> 8) & 0xff] ^ kTables[5][(crc >> 16) & 0xff] ^
          kTables[4][(crc >> 24) & 0xff] ^ kTables[3][(crc >> 32) & 0xff] ^
          kTables[2][(crc >> 40) & 0xff] ^ kTables[1][(crc >> 48) & 0xff] ^ kTables[0][crc >> 56];
  }
  for (; size > 0; --size, ++p) crc = kTables[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace ringmaster::trainer::checkpoint
