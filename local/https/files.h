#pragma once
// Small file helpers for the PKI and kubeconfig writers: whole-file reads and atomic writes
// (temporary file, fsync, rename) with an exact mode, so a crash never leaves half a key and a
// key is never readable by others, whatever the umask.
//
// Thread-safety: no shared state. Failure: Status naming the path and errno.

#include <filesystem>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

core::Result<std::string> readFile(const std::filesystem::path& path);
core::Status writeFileAtomic(const std::filesystem::path& path, std::string_view content,
                             unsigned mode);
// Creates `dir` (and parents) if missing, with `mode` for the directories it creates.
core::Status ensureDirectory(const std::filesystem::path& dir, unsigned mode);

}  // namespace ringmaster::local
