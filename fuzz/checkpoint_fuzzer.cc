// Training checkpoint files (trainer/checkpoint/checkpoint.h). Random bytes rarely carry a
// valid CRC-64, so a first input byte of 'C' makes the target fix up the size field and the
// checksum, which lets the fuzzer reach the field decoding behind them.
#include <lzma.h>

#include <cstring>
#include <string>

#include "fuzz/memfd_path.h"
#include "trainer/checkpoint/checkpoint.h"

namespace {

constexpr size_t kSizeFieldOffset = 16;  // magic (8), version (4), reserved (4)

std::string withValidFraming(std::string bytes) {
  if (bytes.size() < kSizeFieldOffset + 8 + 8) return bytes;
  const uint64_t size = bytes.size();
  std::memcpy(bytes.data() + kSizeFieldOffset, &size, sizeof size);
  const size_t body = bytes.size() - 8;
  const uint64_t crc = lzma_crc64(reinterpret_cast<const uint8_t*>(bytes.data()), body, 0);
  std::memcpy(bytes.data() + body, &crc, sizeof crc);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!bytes.empty() && bytes[0] == 'C') bytes = withValidFraming(bytes.substr(1));
  (void)ringmaster::trainer::checkpoint::readCheckpointFile(
      ringmaster::fuzz::writeToMemfd(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  return 0;
}
