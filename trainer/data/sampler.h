#pragma once
// Which samples each rank trains on, epoch by epoch.
//
// Every epoch has one permutation of [0, N) that depends only on (seed, epoch) -- never on the
// world size or the rank -- produced by our own SplitMix64 + Fisher-Yates (std::shuffle and
// std::uniform_int_distribution are implementation-defined, so they would differ across
// standard libraries). Every rank computes the same permutation and takes a strided slice:
//
//   Tail: the permutation is cut to the largest multiple of W (world size); its last N mod W
//   entries sit out this epoch. Because every epoch reshuffles, different samples sit out in
//   different epochs, and every rank's shard has the same length (N - N mod W) / W, so all
//   ranks run the same number of steps and no collective is left waiting.
//
//   Stride: rank r takes permutation positions r, r + W, r + 2W, ... Then for every step k the
//   union of the W ranks' k-th batches of size b is exactly the k-th batch of size W * b that a
//   single rank (W = 1) would draw, so data-parallel training with gradient averaging matches
//   one big batch step for step.
//
// Ownership: the sampler owns its index vectors; indices() stays valid until the next
// setEpoch(). Thread-safety: none; use one sampler per rank (they are cheap).
// Failure: the constructor's arguments are preconditions (it aborts with a message when they
// are violated); check untrusted values with validate() first.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/data/fashion_mnist.h"

namespace ringmaster::trainer::data {

class ShardedSampler {
 public:
  // Requires validate(dataset_size, rank, world_size).ok(). Starts at epoch 0.
  ShardedSampler(size_t dataset_size, int rank, int world_size, uint64_t seed);

  // kInvalidArgument unless 0 <= rank < world_size and dataset_size < 2^32.
  static core::Status validate(size_t dataset_size, int rank, int world_size);

  // Reshuffles for `epoch` (any value, typically 0, 1, 2, ...; resuming sets it directly).
  void setEpoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }

  // This rank's shard for the current epoch: (N - N mod W) / W dataset indices.
  const std::vector<uint32_t>& indices() const { return indices_; }

  // ceil(indices().size() / batch): the last batch may be short, by the same amount on every
  // rank, so the strided-union property holds for it too. 0 when batch is 0.
  size_t numBatches(size_t batch) const;

 private:
  size_t dataset_size_;
  int rank_;
  int world_size_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  std::vector<uint32_t> permutation_;  // scratch, reused across epochs
  std::vector<uint32_t> indices_;
};

// The full permutation of [0, n) for (seed, epoch) that every rank slices (exposed for tests
// and tools).
std::vector<uint32_t> epochPermutation(size_t n, uint64_t seed, int64_t epoch);

// Copies samples idx[0..n) of `dataset` into images_out (n x featureSize() floats) and
// labels_out (n values). Requires idx[i] < dataset.size(); thread-safe for distinct outputs.
void gatherBatch(const Dataset& dataset, const uint32_t* idx, size_t n, float* images_out,
                 int32_t* labels_out);

// Indices rank, rank + world, rank + 2 world, ... below n: a rank's share of an evaluation set.
std::vector<uint32_t> stridedIndices(size_t n, int rank, int world);

// Batch `batch_index` of `sampler`'s shard for this epoch, `batch` samples at most (the last
// one may be short), into images_out and labels_out; returns how many samples it holds.
int gatherShardBatch(const Dataset& dataset, const ShardedSampler& sampler, int64_t batch_index,
                     int batch, float* images_out, int32_t* labels_out);

}  // namespace ringmaster::trainer::data
