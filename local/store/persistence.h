#pragma once
// File primitives for the store's data directory: atomic whole-file writes (temp file, fsync,
// rename, fsync of the directory) for snapshots, and an append-only log for the writes since.
//
// Thread-safety: AppendLog is not thread-safe (the store calls it under its lock).
// Failure: every call returns a core::Status naming the path and the errno text.

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

core::Status writeFileAtomic(const std::filesystem::path& path, std::string_view content);

// Calls `line` for each '\n'-terminated line of `path`; a missing file is an empty one. Stops
// at a final line without '\n' (a write cut short by a crash) and reports its offset in
// `*complete_bytes` (the length of the well-formed prefix).
core::Status readLines(const std::filesystem::path& path,
                       const std::function<core::Status(std::string_view)>& line,
                       size_t* complete_bytes);

class AppendLog {
 public:
  AppendLog() = default;
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  // Opens (creating) `path` for appending, first cutting it to `keep_bytes` if it is longer.
  core::Status open(const std::filesystem::path& path, size_t keep_bytes);
  bool isOpen() const { return fd_ >= 0; }
  // Appends `record` plus '\n' with one write(2); fsync only when `sync`.
  core::Status append(std::string_view record, bool sync);
  core::Status truncate();
  void close();

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace ringmaster::local
