#pragma once
// Autotune's schedule over the training steps: which setting each step trains under while the
// coordinate search runs, and when a sample is complete. Each setting trains `warmup_steps`
// steps whose times are discarded (a new bucket plan's first steps pay for its buffers and
// threads), then `measure_steps` whose median is the setting's measure. The steps count like any
// other: tuning changes how fast they run, not what they train.
//
// Also the knobs themselves: the data-parallel engine's gradient bucket caps on a doubling grid
// up to the model's size (a cap past it is one bucket, the same plan), which reaches beyond
// Horovod's 64 MB fusion buffer where the model is larger; and a pipeline's micro-batch count,
// whose best value trades the bubble (fewer micro-batches) against small, slow matrix products
// and more messages (more of them).
//
// Thread-safety: one thread (rank 0 decides; the trainer broadcasts). Failure: none; options are
// validated by the trainer's contract.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/autotune/coordinate_search.h"

namespace ringmaster::trainer::autotune {

struct SessionOptions {
  int warmup_steps = 3;
  int measure_steps = 10;
  SearchOptions search;
};

// A finished sample: the setting it measured and its median step time.
struct Measured {
  Setting setting;
  double seconds = 0;
};

class TuningSession {
 public:
  TuningSession(std::vector<Knob> knobs, SessionOptions options);

  // The setting the next step trains under: the one being measured, the best once done.
  Setting current() const { return done() ? search_.best() : *search_.next(); }
  bool done() const { return search_.done(); }
  // A step trained under current() took `seconds`. Once the sample is complete it is reported
  // to the search (current() then moves on) and returned.
  std::optional<Measured> record(double seconds);
  // Steps every sample takes.
  int stepsPerSample() const { return options_.warmup_steps + options_.measure_steps; }

  const CoordinateSearch& search() const { return search_; }
  // "bucketCapMB=4 firstBucketCapMB=1" for `setting`.
  std::string describe(const Setting& setting) const;
  // "bucketCapMB in {1, 2, 4, 25}; firstBucketCapMB in {0.25, 0.5, 1}": every knob's values.
  std::string describeSpace() const;
  // The value of knob `name` in `setting`; nullopt when there is no such knob.
  std::optional<double> valueOf(const Setting& setting, const std::string& name) const;

 private:
  const SessionOptions options_;
  CoordinateSearch search_;
  std::vector<double> window_;  // this sample's step times, warm-up included
};

inline constexpr char kFirstBucketCapKnob[] = "firstBucketCapMB";
inline constexpr char kBucketCapKnob[] = "bucketCapMB";
// The largest bucket cap the search considers, whatever the model (MiB).
inline constexpr double kMaxBucketCapMB = 1024;

// A knob over `values` (any order, repeats allowed) and `given`, which is where the search
// starts: ascending, each value once.
Knob knobOver(const std::string& name, std::vector<double> values, double given);

// The data-parallel engine's knobs for a model of `model_bytes` gradient bytes, starting at the
// configured caps (which are always values of their knob): firstBucketCapMB from 0.25 MiB,
// bucketCapMB from 1 MiB, each doubling up to the first value that holds the whole model.
std::vector<Knob> bucketKnobs(size_t model_bytes, double first_cap_mb, double cap_mb);

inline constexpr char kMicroBatchesKnob[] = "microBatches";
// Below this many rows a micro-batch's matrix products are mostly overhead.
inline constexpr int64_t kMinMicroBatchRows = 4;

inline constexpr char kTcpDoublingKnob[] = "tcpDoublingMaxKB";

// The tcp transport's recursive-doubling threshold (KiB), starting at its own `default_kib`:
// 4 KiB doubling up to 4 MiB. Doubling pays one step per doubling of the world, each moving the
// whole vector; the ring pays 2(N - 1) steps that move 1/N each: where they cross depends on the
// link's latency against its bandwidth.
Knob tcpDoublingKnob(double default_kib);

inline constexpr char kBlasThreadsKnob[] = "blasThreads";

// BLAS threads for a process that may use `cores` cores, starting at the configured `threads`:
// 1 doubling up to `cores`, and the configured count.
Knob blasThreadsKnob(int cores, int32_t threads);

// A pipeline's micro-batch count for mini-batches of `batch_rows`, starting at the configured
// `micro_batches`: the powers of two that divide batch_rows, up to micro-batches of
// kMinMicroBatchRows rows, and the configured count.
Knob microBatchKnob(int64_t batch_rows, int32_t micro_batches);

}  // namespace ringmaster::trainer::autotune
