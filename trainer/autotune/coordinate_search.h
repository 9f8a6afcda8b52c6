#pragma once
// Autotune's search over the trainer's performance knobs (gradient bucket caps, the transport's
// algorithm thresholds, pipeline micro-batches): which setting to measure next, from the step
// times measured so far, and which is best.
//
// A coordinate search rather than Horovod's Bayesian optimisation: the knobs are few and
// discrete (values on a doubling grid), step time is close to unimodal along each one and the
// budget is a few dozen samples, so a line search per knob finds the optimum in a handful of
// samples each, where a Gaussian process would spend most of the budget on its prior. It starts
// at the defaults; along each knob in turn it steps up while that helps, else down; after a pass
// in which some knob moved, it makes another. Noise: a value replaces the best so far only when
// it is faster by more than `noise` (a fraction), so that the defaults stay unless something
// beats them clearly; a setting is measured once. The price of the method: where two knobs are
// strongly coupled (a narrow valley across both), single steps along one knob climb its walls
// and the search may stop short of the optimum.
//
// Thread-safety: one thread. Failure: none; settings outside the knobs are ignored by report().

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::trainer::autotune {

struct Knob {
  std::string name;            // "bucketCapMB"
  std::vector<double> values;  // ascending
  size_t default_index = 0;
};

// One value index per knob.
using Setting = std::vector<size_t>;

struct SearchOptions {
  int max_samples = 20;  // settings measured, the defaults included
  double noise = 0.03;   // a faster setting must beat the best by this fraction
};

struct Sample {
  Setting setting;
  double seconds = 0;  // its measure (e.g. the median step time)
};

class CoordinateSearch {
 public:
  CoordinateSearch(std::vector<Knob> knobs, SearchOptions options);

  // The setting to measure next; nullopt once the search is over.
  std::optional<Setting> next() const { return next_; }
  // The measure of the setting next() gave.
  void report(const Setting& setting, double seconds);
  // The best setting so far (the defaults until something beats them).
  const Setting& best() const { return best_; }
  double bestSeconds() const { return best_seconds_; }
  const std::vector<Sample>& samples() const { return samples_; }
  const std::vector<Knob>& knobs() const { return knobs_; }
  bool done() const { return !next_.has_value(); }

 private:
  // Moves to the next candidate not yet measured (or ends the search).
  void advance();
  // The best setting with knob `k` at index `i`; nullopt when `i` is outside the knob.
  std::optional<Setting> along(size_t k, long i) const;

  const std::vector<Knob> knobs_;
  const SearchOptions options_;
  std::vector<Sample> samples_;
  std::map<Setting, double> measured_;
  Setting best_;
  double best_seconds_ = 0;
  std::optional<Setting> next_;
  // Where the line search stands: the knob, its direction (+1, then -1), and whether any knob
  // moved in this pass.
  size_t knob_ = 0;
  int direction_ = +1;
  bool moved_this_knob_ = false;
  bool moved_this_pass_ = false;
};

}  // namespace ringmaster::trainer::autotune
