#pragma once
// Where a model's parameter tensors live in a parameter-server job: which server holds which
// contiguous range of each tensor's flat (float32) elements. Every worker and server computes the
// plan on its own from the same tensor list in the same order, so the function is deterministic
// and pure (no floating point decides anything).
//
// Splitting: a tensor is cut into contiguous pieces of at least min_piece_bytes each, at most
// maxPieces() = min(servers, floor(bytes / min_piece_bytes)) of them and never two on one server.
// So a tensor below 2 * min_piece_bytes is never split, and only a tensor smaller than
// min_piece_bytes has a piece that small.
//
// Placement: two starts, each improved by local search; the one with the lower largest load wins.
//  - even split: every tensor in maxPieces() equal pieces, largest pieces first, a tensor's
//    pieces on its k least-loaded servers;
//  - fill: tensors largest first, each server filled up to the mean before the next, cutting a
//    tensor where a server is full; uses fewer pieces, which matters when the even split makes
//    more large pieces than there are servers (the MLP on 8 servers: 10 pieces of ~256 KiB).
//  The local search moves a piece off the most loaded server or swaps it for a smaller one, and
//  re-sizes a split tensor's pieces to level its servers, while that evens the loads.
//
// Balance guarantee: the even split alone keeps max - min within its largest piece P (the
// largest tensor piece when every tensor is cut into maxPieces() equal parts), and the search
// never raises the largest load, so max / mean <= 1 + (servers - 1) * P / total_bytes: within
// 1.2 whenever P <= 0.2 * total_bytes / (servers - 1). Past that no bound is promised: with few
// or large indivisible pieces 1.2 may be impossible (one 300 KiB tensor on 2 servers leaves one
// empty: max / mean = 2), and packing indivisible pieces optimally is NP-hard, so the search is a
// heuristic (it fixes the classic inputs largest-first greedy gets wrong; see the tests).
//
// Thread-safety: pure functions and value types. Failure: kInvalidArgument naming the field.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::ps {

inline constexpr int64_t kBytesPerElement = 4;  // parameters are float32
inline constexpr int64_t kDefaultMinPieceBytes = 256 * 1024;

struct TensorInfo {
  std::string name;
  int64_t elements = 0;

  int64_t bytes() const { return elements * kBytesPerElement; }
};

struct ShardOptions {
  int64_t min_piece_bytes = kDefaultMinPieceBytes;
};

// Elements [first, first + elements) of tensor `tensor` (an index into the planned list), held by
// server `server`.
struct Piece {
  int tensor = 0;
  int64_t first = 0;
  int64_t elements = 0;
  int server = 0;

  int64_t bytes() const { return elements * kBytesPerElement; }
  bool operator==(const Piece&) const = default;
};

struct ShardPlan {
  std::vector<std::vector<Piece>> by_server;  // [server]: its pieces, by (tensor, first)
  std::vector<std::vector<Piece>> by_tensor;  // [tensor]: its pieces, by first element

  int serverCount() const { return static_cast<int>(by_server.size()); }
  const std::vector<Piece>& piecesOf(int tensor) const { return by_tensor.at(tensor); }
  std::vector<int64_t> bytesPerServer() const;
  // Most loaded server's bytes over the mean (1.0 = perfectly even).
  double imbalance() const;

  bool operator==(const ShardPlan&) const = default;
};

// The most pieces a tensor of `elements` floats may be cut into (see above); arguments as
// validated by planShards.
int maxPieces(int64_t elements, int servers, int64_t min_piece_bytes);

core::Result<ShardPlan> planShards(std::span<const TensorInfo> tensors, int servers,
                                   const ShardOptions& options = {});

}  // namespace ringmaster::trainer::ps
