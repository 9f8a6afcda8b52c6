#pragma once
// What the launcher leaves in its container's termination message (the file at
// terminationMessagePath, see ringmaster/kube/termination_message.h), for the operator to show:
//   - on failure: the outcome and the failing process's own last error line,
//     "rank 1 exited with code 1: E CORE [fmnist rank 1/2] dataset: open /nope/...: No such file",
//     or for a user's program "rank 3 exited with code 1: ValueError: bad shard" (ErrorLines);
//   - on success (rank 0's pod): rank 0's trainer summary JSON (--summary-json), compacted.
// The path is the launcher's --termination-message-path (default /dev/termination-log); outside
// a pod it usually does not exist, which is not an error (logged at debug).
//
// Thread-safety: pure functions plus one file write. Failure: writeTerminationMessage returns
// the errno error naming the path; callers log it and carry on.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

// An error line of the core log format ("<time> E <SUBSYSTEM> [prefix] text") without its
// timestamp and with the subsystem's padding collapsed; nullopt for other lines.
std::optional<std::string> errorLineText(std::string_view line);

// What a process's stderr says went wrong, fed one line at a time. The most telling line wins:
//   1. the last error line of the core log format (the built-in trainer's; errorLineText);
//   2. else the exception line that ends a Python traceback ("ValueError: bad shard": the first
//      line after "Traceback (most recent call last):" that is not indented; with chained
//      exceptions the last traceback's);
//   3. else the last line that is not blank (a C++ program's "terminate called after ...", an
//      MPI abort, a shell's "command not found").
// Lines are cut to kMaxLineBytes. It also keeps when the first error began (a core error line
// or a traceback's first line), the time `feed` was given with it: a process that fails because
// its peer did prints its error after the peer's, even when it exits first. Thread-safety: none
// (one relay thread owns one).
class ErrorLines {
 public:
  static constexpr size_t kMaxLineBytes = 1024;
  // `unix_ms`: when the line was read (milliseconds since the epoch; 0: unknown).
  void feed(std::string_view line, int64_t unix_ms = 0);
  // "" when nothing was fed but blank lines.
  std::string best() const;
  // When the first error began; 0 when none did (or its time was unknown).
  int64_t firstErrorUnixMs() const { return first_error_ms_; }

 private:
  std::string core_error_;
  std::string exception_;
  std::string last_;
  bool in_traceback_ = false;
  int64_t first_error_ms_ = 0;
};

// "<reason>: <error line>" (just the reason without one), capped to the kubelet's limit.
std::string failureMessage(std::string_view reason, std::string_view error_line);

// The summary JSON compacted to one line; nullopt when it is not a JSON object or does not fit
// the kubelet's limit.
std::optional<std::string> summaryMessage(std::string_view summary_json);

// Replaces the content of the existing file at `path` with `message` (never creates it).
core::Status writeTerminationMessage(const std::string& path, std::string_view message);

}  // namespace ringmaster::launcher
