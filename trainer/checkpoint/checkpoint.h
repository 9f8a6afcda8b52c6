#pragma once
// Training checkpoints: one file per saved step, written atomically, verified on load.
//
// Files: <dir>/ckpt-<step, zero-padded to 12 digits>.rmck. Writing goes to a temporary file
// (ckpt-<step>.rmck.tmp-XXXXXX) in the same directory, which is fsync'd, renamed over the final
// name and followed by an fsync of the directory, so a crash leaves either the old set of files
// or the new one plus perhaps a temporary file, never a half-written checkpoint under a final
// name. Loading ignores (and deletes) leftover temporary files.
//
// Format, version 1, all integers little-endian:
//   "RMCKPT\n\x1a"  magic (8 bytes; the \n and \x1a catch text-mode mangling)
//   u32 version, u32 reserved (0), u64 file size in bytes
//   i64 epoch, i64 step, i64 step_in_epoch, i64 optimizer_step
//   str model_signature, str optimizer_type          (str: u32 length + bytes)
//   u64 n + n f32 params
//   u32 k, then k times: u64 n + n f32 optimizer state
//   u64 CRC-64/XZ of every byte before it
//
// Ownership: callers own their Checkpoint values. Thread-safety: the functions share no state,
// but one directory must have one writer at a time (rank 0 writes; others only read).
// Failure: write errors (I/O, a full disk) return a Status naming the file and the call, and
// leave no temporary file behind. Loading skips a corrupt or truncated file with a WARN line
// naming it and the problem, then tries the next older one; a checkpoint for another model
// signature is a kInvalidArgument error, not skipped, since it means the model changed under
// the same checkpoint path.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::checkpoint {

inline constexpr uint32_t kFormatVersion = 1;

struct Checkpoint {
  int64_t epoch = 0;            // epochs completed
  int64_t step = 0;             // global optimizer steps done; names the file
  int64_t step_in_epoch = 0;    // steps done in the current (incomplete) epoch
  std::string model_signature;  // e.g. "mlp:784-512-512-10"; must match on load
  std::vector<float> params;
  std::string optimizer_type;  // e.g. "sgd"
  int64_t optimizer_step = 0;
  std::vector<std::vector<float>> optimizer_state;  // e.g. momentum buffers
};

// "ckpt-000000000500.rmck".
std::string checkpointFileName(int64_t step);

// Writes `ckpt` to dir (created, with parents, when missing) as described above, then deletes
// the oldest checkpoint files (by step) so that keep_last remain, always keeping the one just
// written. kInvalidArgument for a negative step or keep_last < 1. A failure to prune is only
// logged (WARN): the new checkpoint is already safe.
core::Status writeCheckpoint(const std::string& dir, const Checkpoint& ckpt, int keep_last = 3);

// The valid checkpoint with the highest step in dir, or nullopt when dir is missing or holds
// none (corrupt files are skipped with a WARN each). kInvalidArgument when the newest valid
// checkpoint has a model_signature other than expected_signature; kInvalidArgument for a
// checkpoint of an unknown format version; I/O errors other than corruption are returned.
core::Result<std::optional<Checkpoint>> loadNewestCheckpoint(const std::string& dir,
                                                             const std::string& expected_signature);

// Reads and verifies one file (no signature check). kNotFound when missing, kDataLoss naming
// the file and the problem when corrupt or truncated.
core::Result<Checkpoint> readCheckpointFile(const std::string& path);

// The run marker: a number drawn when a run starts fresh and written (atomically, as text) to
// <dir>/run-marker.rmck, so that directories written by one run can be told from another's.
core::Status writeRunMarker(const std::string& dir, uint64_t run);
// A fresh run marker: random, in [1, 2^63 - 1] (0 means "none", and it fits an int64 on the wire).
uint64_t drawRunMarker();

// dir's run marker; nullopt when it has none. kDataLoss when the file holds no number.
core::Result<std::optional<uint64_t>> readRunMarker(const std::string& dir);

// Deletes every checkpoint file in dir (a missing dir is an error: the caller read it).
core::Status removeCheckpoints(const std::string& dir);

}  // namespace ringmaster::trainer::checkpoint
