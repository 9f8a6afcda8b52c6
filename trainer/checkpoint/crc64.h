#pragma once
// CRC-64/XZ (ECMA-182 polynomial, reflected, init and final xor all ones): the checksum xz
// uses. 64 bits make an undetected corruption of a checkpoint vanishingly unlikely.
//
// Thread-safety: pure functions. Failure: none.

#include <cstddef>
#include <cstdint>

namespace ringmaster::trainer::checkpoint {

// Continues a CRC over `size` more bytes; start with crc = 0. crc64(crc64(0, a), b) equals the
// CRC of a followed by b.
uint64_t crc64(uint64_t crc, const void* data, size_t size);

}  // namespace ringmaster::trainer::checkpoint
