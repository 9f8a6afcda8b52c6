#pragma once
// Reads IDX files (the MNIST container: "00 00 08 <ndim>" magic, then ndim big-endian uint32
// dims, then the unsigned-byte payload in row-major order), plain or gzip-compressed. Gzip is
// recognised by its magic bytes (1f 8b), not by the file name; concatenated gzip members are
// read as one stream. Only the unsigned-byte element type (0x08) is supported, which is what
// MNIST and Fashion-MNIST use: images have magic 0x00000803, labels 0x00000801.
//
// The file is decompressed once, straight into the payload buffer (no intermediate copy).
//
// Thread-safety: readIdx() has no shared state; call it from any thread.
// Failure: every error names the file. A missing file is kNotFound; anything wrong with the
// content is kDataLoss naming the byte offset in the decompressed stream where it went wrong:
// bad magic (offset 0), a truncated header or payload (the offset where the stream ended and
// the offset the dims say it should reach), bytes past the end the dims imply, a corrupt gzip
// stream (the decompressed offset reached, plus the compressed offset). I/O errors keep their
// errno meaning.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::data {

inline constexpr uint8_t kIdxUnsignedByte = 0x08;
inline constexpr int kIdxMaxDims = 4;

struct IdxArray {
  std::vector<uint32_t> dims;  // dims[0] is the item count (images or labels)
  std::vector<uint8_t> data;   // product(dims) bytes, row-major

  // Offset of data[0] in the (decompressed) file: the magic plus 4 bytes per dim.
  uint64_t payloadOffset() const { return 4 + 4 * static_cast<uint64_t>(dims.size()); }
};

// Reads the whole file at `path`. See the header comment for the errors.
core::Result<IdxArray> readIdx(const std::string& path);

// "60000x28x28" for error messages.
std::string formatDims(const std::vector<uint32_t>& dims);

}  // namespace ringmaster::trainer::data
