#include "trainer/autotune/coordinate_search.h"

#include <utility>

namespace ringmaster::trainer::autotune {

CoordinateSearch::CoordinateSearch(std::vector<Knob> knobs, SearchOptions options)
    : knobs_(std::move(knobs)), options_(options) {
  for (const Knob& k : knobs_) best_.push_back(k.default_index);
  if (options_.max_samples > 0) next_ = best_;
}

std::optional<Setting> CoordinateSearch::along(size_t k, long i) const {
  if (i < 0 || static_cast<size_t>(i) >= knobs_[k].values.size()) return std::nullopt;
  Setting s = best_;
  s[k] = static_cast<size_t>(i);
  return s;
}

void CoordinateSearch::report(const Setting& setting, double seconds) {
  if (!next_ || setting != *next_) return;
  samples_.push_back({setting, seconds});
  measured_[setting] = seconds;
  if (samples_.size() == 1) {
    best_seconds_ = seconds;  // the defaults
  } else if (seconds < best_seconds_ * (1.0 - options_.noise)) {
    best_ = setting;
    best_seconds_ = seconds;
    moved_this_knob_ = moved_this_pass_ = true;
  } else {
    // No better this way: the other direction next, unless this one already moved the knob.
    if (direction_ == +1 && !moved_this_knob_) {
      direction_ = -1;
    } else {
      direction_ = 0;  // this knob is done
    }
  }
  advance();
}

void CoordinateSearch::advance() {
  next_.reset();
  while (!knobs_.empty() && static_cast<int>(samples_.size()) < options_.max_samples) {
    if (direction_ != 0) {
      const long i = static_cast<long>(best_[knob_]) + direction_;
      if (std::optional<Setting> s = along(knob_, i)) {
        const auto known = measured_.find(*s);
        if (known == measured_.end()) {
          next_ = std::move(s);
          return;
        }
        // Measured before (in an earlier pass): judged as if measured now.
        if (known->second < best_seconds_ * (1.0 - options_.noise)) {
          best_ = known->first;
          best_seconds_ = known->second;
          moved_this_knob_ = moved_this_pass_ = true;
          continue;
        }
      }
      // Off the end, or no better: turn once, then the knob is done.
      direction_ = direction_ == +1 && !moved_this_knob_ ? -1 : 0;
      continue;
    }
    // The next knob; after the last, another pass if any knob moved.
    ++knob_;
    direction_ = +1;
    moved_this_knob_ = false;
    if (knob_ == knobs_.size()) {
      if (!moved_this_pass_) return;
      knob_ = 0;
      moved_this_pass_ = false;
    }
  }
}

}  // namespace ringmaster::trainer::autotune
