#pragma once
// Sending a container's log file over HTTP, as kube-apiserver's pods/log and a kubelet's
// /containerLogs answer: text/plain, from the last `tail_lines` lines (or from the end when the
// file is older than `since`), at most `limit_bytes`; with `follow`, a chunked stream that goes
// on while the container runs and ends once run_over() says its run ended and the file is
// drained, or when the client goes away. Both the embedded API server and the local kubelet
// serve logs this way; they differ only in how they find the file and learn that a run ended.
//
// Thread-safety: runs on the request's connection thread. Failure: an unreadable file is the
// caller's to report before calling; a client that goes away ends the stream quietly.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

#include "local/https/response_writer.h"

namespace ringmaster::local {

struct LogFileOptions {
  bool follow = false;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
  std::optional<std::chrono::system_clock::time_point> since;
};

// The headers of a log answer (text/plain, not cached), also for an empty one.
Headers logFileHeaders();

// Byte offset in `file` where its last `lines` lines begin (0 when it has fewer).
uint64_t tailOffset(const std::filesystem::path& file, int64_t lines);

// Sends `file`; `run_over` is asked each time a follow has drained the file (it also ends when
// the file is replaced: the kubelet rotated it away).
void sendLogFile(const std::filesystem::path& file, const LogFileOptions& options,
                 ResponseWriter& writer, const std::function<bool()>& run_over);

}  // namespace ringmaster::local
