#include "trainer/data/idx.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>

namespace ringmaster::trainer::data {
namespace {

using core::Result;
using core::Status;

constexpr size_t kInputChunk = size_t{1} << 20;
// Deflate cannot expand data by more than ~1032:1; dims that claim more than that are corrupt,
// and refusing them early avoids allocating gigabytes for a bogus header.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The decompressed byte stream of one file, from a plain fd or through zlib's inflate.
// Owns the fd and the z_stream; not copyable; single-threaded. Not zlib's gzread: it silently
// skips garbage after the last gzip member and cannot say at which compressed offset data broke.
class StreamReader {
 public:
  StreamReader() = default;
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;
  ~StreamReader() {
    if (inflate_ready_) inflateEnd(&zs_);
    if (fd_ >= 0) ::close(fd_);
  }

  Status open(const std::string& path) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return core::errnoError("open " + path, errno);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return core::errnoError("fstat " + path, errno);
    if (S_ISDIR(st.st_mode)) return core::invalidArgument(path + ": is a directory, not a file");
    file_size_ = static_cast<uint64_t>(st.st_size);
    uint8_t head[2] = {0, 0};
    ssize_t got = ::pread(fd_, head, sizeof head, 0);
    if (got < 0) return core::errnoError("read " + path, errno);
    gzip_ = got == 2 && head[0] == 0x1f && head[1] == 0x8b;
    if (gzip_) {
      // 15 + 16: a gzip wrapper with the largest window.
      if (inflateInit2(&zs_, 15 + 16) != Z_OK) {
        return core::internalError(path + ": inflateInit2 failed: out of memory");
      }
      inflate_ready_ = true;
      in_.resize(kInputChunk);
    }
    return Status::Ok();
  }

  bool gzip() const { return gzip_; }
  uint64_t fileSize() const { return file_size_; }
  uint64_t offset() const { return out_offset_; }

  // Reads up to n bytes into dst; fewer only at the end of the stream.
  Result<size_t> read(uint8_t* dst, size_t n) {
    Result<size_t> got = gzip_ ? readGzip(dst, n) : readPlain(dst, n);
    if (got.ok()) out_offset_ += *got;
    return got;
  }

 private:
  Result<size_t> readPlain(uint8_t* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::read(fd_, dst + done, n - done);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return core::errnoError("read " + path_, errno);
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  Result<size_t> readGzip(uint8_t* dst, size_t n) {
    call_start_ = dst;
    // zlib counts in uInt; feed large requests in pieces.
    size_t done = 0;
    while (done < n) {
      size_t piece = std::min<size_t>(n - done, std::numeric_limits<uInt>::max());
      zs_.next_out = dst + done;
      zs_.avail_out = static_cast<uInt>(piece);
      RM_RETURN_IF_ERROR(inflateInto());
      done += piece - zs_.avail_out;
      if (zs_.avail_out > 0) break;  // end of stream
    }
    return done;
  }

  // Inflates until the output window set in zs_ is full or the stream ends.
  Status inflateInto() {
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !input_eof_) RM_RETURN_IF_ERROR(fillInput());
      if (member_done_) {
        if (zs_.avail_in == 0) return Status::Ok();  // clean end of the last member
        // More bytes after a member: the next member of a concatenated gzip file. Garbage
        // here fails inflate's header check, as it does for gzip(1).
        inflateReset(&zs_);
        member_done_ = false;
      }
      if (zs_.avail_in == 0) {
        return corrupt("the compressed data ends before the gzip stream does");
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_done_ = true;
      } else if (rc == Z_MEM_ERROR) {
        return core::internalError(path_ + ": inflate: out of memory");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {  // Z_BUF_ERROR: needs more input
        return corrupt(zs_.msg != nullptr ? zs_.msg : "inflate error " + std::to_string(rc));
      }
    }
    return Status::Ok();
  }

  Status fillInput() {
    for (;;) {
      ssize_t r = ::read(fd_, in_.data(), in_.size());
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return core::errnoError("read " + path_, errno);
      if (r == 0) input_eof_ = true;
      in_read_ += static_cast<uint64_t>(r);
      zs_.next_in = in_.data();
      zs_.avail_in = static_cast<uInt>(r);
      return Status::Ok();
    }
  }

  Status corrupt(const std::string& what) const {
    // Decompressed offset including what the current read() call has produced so far.
    uint64_t offset = out_offset_ + static_cast<uint64_t>(zs_.next_out - call_start_);
    return core::dataLoss(path_ + ": corrupt gzip stream at decompressed offset " +
                          std::to_string(offset) + " (compressed offset " +
                          std::to_string(in_read_ - zs_.avail_in) + "): " + what);
  }

  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  bool gzip_ = false;
  bool inflate_ready_ = false;
  z_stream zs_{};
  std::vector<uint8_t> in_;
  uint64_t in_read_ = 0;  // compressed bytes read from the file so far
  bool input_eof_ = false;
  bool member_done_ = false;
  uint64_t out_offset_ = 0;  // decompressed bytes returned by completed read() calls
  const uint8_t* call_start_ = nullptr;
};

Status dataError(const std::string& path, const std::string& what) {
  return core::dataLoss(path + ": " + what);
}

// Reads exactly n bytes or fails naming `what` and where the stream ended.
Status readExactly(StreamReader& in, const std::string& path, uint8_t* dst, size_t n,
                   const std::string& what) {
  uint64_t start = in.offset();
  RM_ASSIGN_OR_RETURN(size_t got, in.read(dst, n));
  if (got < n) {
    return dataError(path, "truncated " + what + ": the data ends at offset " +
                               std::to_string(start + got) + " but the " + what +
                               " runs to offset " + std::to_string(start + n));
  }
  return Status::Ok();
}

uint32_t bigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

std::string formatDims(const std::vector<uint32_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(dims[i]);
  }
  return out;
}

Result<IdxArray> readIdx(const std::string& path) {
  StreamReader in;
  RM_RETURN_IF_ERROR(in.open(path));

  uint8_t magic[4];
  RM_RETURN_IF_ERROR(readExactly(in, path, magic, sizeof magic, "IDX magic"));
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != kIdxUnsignedByte || magic[3] < 1 ||
      magic[3] > kIdxMaxDims) {
    char text[96];
    std::snprintf(text, sizeof text,
                  "bad IDX magic 0x%08x at offset 0 (expected 0x000008NN, NN = 1..%d dims)",
                  bigEndian32(magic), kIdxMaxDims);
    return dataError(path, std::string(text) + (in.gzip() ? " in the decompressed data" : ""));
  }

  IdxArray out;
  const int ndim = magic[3];
  uint8_t dim_bytes[4 * kIdxMaxDims];
  RM_RETURN_IF_ERROR(readExactly(in, path, dim_bytes, 4 * ndim, "IDX header"));
  uint64_t payload = 1;
  for (int i = 0; i < ndim; ++i) {
    out.dims.push_back(bigEndian32(dim_bytes + 4 * i));
    if (__builtin_mul_overflow(payload, uint64_t{out.dims.back()}, &payload)) {
      return dataError(path, "IDX dims " + formatDims(out.dims) + " overflow 64 bits at offset " +
                                 std::to_string(4 + 4 * i));
    }
  }
  const uint64_t end = out.payloadOffset() + payload;
  const std::string dims_text = "dims " + formatDims(out.dims);
  // Check the size before allocating, so a bogus header cannot ask for gigabytes.
  if (!in.gzip() && in.fileSize() != end) {
    return dataError(
        path, (in.fileSize() < end ? "truncated payload: the file ends at offset "
                                   : "dims do not match the file length: it ends at offset ") +
                  std::to_string(in.fileSize()) + " but " + dims_text +
                  " put the end of the payload at offset " + std::to_string(end));
  }
  if (in.gzip() && end > in.fileSize() * kMaxDeflateRatio + 1024) {
    return dataError(path, dims_text + " need " + std::to_string(end) +
                               " decompressed bytes, more than a gzip file of " +
                               std::to_string(in.fileSize()) + " bytes can hold");
  }
  if (payload > std::numeric_limits<size_t>::max()) {
    return dataError(path, dims_text + " do not fit in memory");
  }

  out.data.resize(static_cast<size_t>(payload));
  RM_RETURN_IF_ERROR(readExactly(in, path, out.data.data(), out.data.size(), "payload"));
  uint8_t extra;
  RM_ASSIGN_OR_RETURN(size_t more, in.read(&extra, 1));
  if (more != 0) {
    return dataError(path, "dims do not match the file length: unexpected data at offset " +
                               std::to_string(end) + " where " + dims_text + " end the payload");
  }
  return out;
}

}  // namespace ringmaster::trainer::data
