#include "trainer/data/sampler.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace ringmaster::trainer::data {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): fully specified here, so the order is the same with
// every compiler and standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, range), range > 0, without modulo bias (Lemire 2019).
  uint64_t below(uint64_t range) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * range;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < range) {
      const uint64_t threshold = (0 - range) % range;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * range;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

// One generator state per (seed, epoch); the mixing keeps nearby seeds and epochs unrelated.
uint64_t epochKey(uint64_t seed, int64_t epoch) {
  SplitMix64 mix(seed);
  uint64_t a = mix.next();
  SplitMix64 mix_epoch(a ^ static_cast<uint64_t>(epoch));
  return mix_epoch.next();
}

void fillPermutation(std::vector<uint32_t>& perm, size_t n, uint64_t seed, int64_t epoch) {
  perm.resize(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<uint32_t>(i);
  SplitMix64 rng(epochKey(seed, epoch));
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.below(i));
    std::swap(perm[i - 1], perm[j]);
  }
}

}  // namespace

core::Status ShardedSampler::validate(size_t dataset_size, int rank, int world_size) {
  if (world_size < 1) {
    return core::invalidArgument("sampler: world size " + std::to_string(world_size) +
                                 " must be at least 1");
  }
  if (rank < 0 || rank >= world_size) {
    return core::invalidArgument("sampler: rank " + std::to_string(rank) + " is outside [0, " +
                                 std::to_string(world_size) + ")");
  }
  if (dataset_size > std::numeric_limits<uint32_t>::max()) {
    return core::invalidArgument("sampler: dataset size " + std::to_string(dataset_size) +
                                 " does not fit 32-bit indices");
  }
  return core::Status::Ok();
}

ShardedSampler::ShardedSampler(size_t dataset_size, int rank, int world_size, uint64_t seed)
    : dataset_size_(dataset_size), rank_(rank), world_size_(world_size), seed_(seed) {
  core::Status valid = validate(dataset_size, rank, world_size);
  if (!valid.ok()) {
    std::fprintf(stderr, "ShardedSampler precondition violated: %s\n", valid.message().c_str());
    std::abort();
  }
  setEpoch(0);
}

void ShardedSampler::setEpoch(int64_t epoch) {
  epoch_ = epoch;
  fillPermutation(permutation_, dataset_size_, seed_, epoch);
  const size_t w = static_cast<size_t>(world_size_);
  const size_t shard = dataset_size_ / w;  // the tail N mod W sits out this epoch
  indices_.resize(shard);
  for (size_t k = 0; k < shard; ++k) indices_[k] = permutation_[static_cast<size_t>(rank_) + k * w];
}

size_t ShardedSampler::numBatches(size_t batch) const {
  if (batch == 0) return 0;
  return (indices_.size() + batch - 1) / batch;
}

std::vector<uint32_t> epochPermutation(size_t n, uint64_t seed, int64_t epoch) {
  std::vector<uint32_t> perm;
  fillPermutation(perm, n, seed, epoch);
  return perm;
}

void gatherBatch(const Dataset& dataset, const uint32_t* idx, size_t n, float* images_out,
                 int32_t* labels_out) {
  const size_t features = dataset.featureSize();
  for (size_t i = 0; i < n; ++i) {
    assert(idx[i] < dataset.size());
    std::memcpy(images_out + i * features, dataset.images.data() + size_t{idx[i]} * features,
                features * sizeof(float));
    labels_out[i] = dataset.labels[idx[i]];
  }
}

int gatherShardBatch(const Dataset& dataset, const ShardedSampler& sampler, int64_t batch_index,
                     int batch, float* images_out, int32_t* labels_out) {
  const std::vector<uint32_t>& shard = sampler.indices();
  const size_t begin = static_cast<size_t>(batch_index) * static_cast<size_t>(batch);
  const size_t n = std::min<size_t>(static_cast<size_t>(batch), shard.size() - begin);
  gatherBatch(dataset, shard.data() + begin, n, images_out, labels_out);
  return static_cast<int>(n);
}

std::vector<uint32_t> stridedIndices(size_t n, int rank, int world) {
  std::vector<uint32_t> out;
  for (size_t i = static_cast<size_t>(rank); i < n; i += static_cast<size_t>(world)) {
    out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

}  // namespace ringmaster::trainer::data
