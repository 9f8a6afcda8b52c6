#include "local/https/log_file.h"

#include <sys/stat.h>

#include <condition_variable>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;

constexpr size_t kReadBlock = 64 * 1024;
// Non-follow answers up to this size go out as one response; larger ones are streamed.
constexpr uint64_t kSendWholeLimit = 1 << 20;

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> fileId(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

}  // namespace

Headers logFileHeaders() {
  Headers h;
  h.add("Cache-Control", "no-cache, private");
  h.add("Content-Type", "text/plain");
  return h;
}

uint64_t tailOffset(const fs::path& file, int64_t lines) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  if (lines <= 0) return size;
  uint64_t pos = size;
  int64_t newlines = 0;
  bool last_byte = true;
  std::string block;
  while (pos > 0) {
    const uint64_t n = std::min<uint64_t>(kReadBlock, pos);
    pos -= n;
    block.resize(n);
    in.seekg(static_cast<std::streamoff>(pos));
    in.read(block.data(), static_cast<std::streamsize>(n));
    for (uint64_t i = n; i-- > 0;) {
      if (block[i] != '\n') {
        last_byte = false;
        continue;
      }
      // A final newline ends the last line rather than starting an empty one.
      if (last_byte) {
        last_byte = false;
        continue;
      }
      if (++newlines == lines) return pos + i + 1;
    }
  }
  return 0;
}

void sendLogFile(const fs::path& path, const LogFileOptions& options, ResponseWriter& w,
                 const std::function<bool()>& run_over) {
  std::ifstream in(path, std::ios::binary);
  const std::optional<FileId> opened = fileId(path);
  uint64_t start = 0;
  if (options.tail_lines) start = tailOffset(path, *options.tail_lines);
  if (options.since) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 &&
        std::chrono::system_clock::from_time_t(st.st_mtime) < *options.since) {
      in.seekg(0, std::ios::end);
      start = static_cast<uint64_t>(in.tellg());
    }
  }
  in.seekg(static_cast<std::streamoff>(start));
  uint64_t budget = options.limit_bytes ? static_cast<uint64_t>(*options.limit_bytes)
                                        : std::numeric_limits<uint64_t>::max();
  std::string block(kReadBlock, '\0');
  // Reads what the file holds now (up to the budget); false once nothing was read.
  auto readSome = [&](std::string* out) {
    in.clear();
    const uint64_t n = std::min<uint64_t>(kReadBlock, budget);
    if (n == 0) return false;
    in.read(block.data(), static_cast<std::streamsize>(n));
    const auto got_bytes = static_cast<uint64_t>(in.gcount());
    if (got_bytes == 0) return false;
    budget -= got_bytes;
    out->assign(block.data(), got_bytes);
    return true;
  };

  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (!options.follow && !ec && size - std::min(size, start) <= kSendWholeLimit) {
    std::string body, piece;
    while (readSome(&piece)) body += piece;
    (void)w.send(200, logFileHeaders(), body);
    return;
  }
  if (!w.startStream(200, logFileHeaders()).ok()) return;
  std::mutex mu;
  std::condition_variable_any cv;
  std::string piece;
  bool over = !options.follow;
  while (!w.closed()) {
    if (readSome(&piece)) {
      if (!w.writeChunk(piece).ok()) return;
      continue;
    }
    if (budget == 0 || over) break;
    over = fileId(path) != opened || run_over();
    if (over) continue;  // one more read drains what was written before the end
    std::unique_lock lock(mu);
    cv.wait_for(lock, w.closedToken(), std::chrono::milliseconds(200), [] { return false; });
  }
  if (!w.closed()) (void)w.endStream();
}

}  // namespace ringmaster::local
