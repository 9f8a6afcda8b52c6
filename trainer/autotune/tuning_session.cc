#include "trainer/autotune/tuning_session.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace ringmaster::trainer::autotune {

TuningSession::TuningSession(std::vector<Knob> knobs, SessionOptions options)
    : options_(options), search_(std::move(knobs), options.search) {}

std::optional<Measured> TuningSession::record(double seconds) {
  if (done()) return std::nullopt;
  window_.push_back(seconds);
  if (static_cast<int>(window_.size()) < stepsPerSample()) return std::nullopt;
  std::vector<double> measured(window_.begin() + options_.warmup_steps, window_.end());
  window_.clear();
  const auto middle = measured.begin() + static_cast<long>(measured.size() / 2);
  std::nth_element(measured.begin(), middle, measured.end());
  Measured sample{*search_.next(), *middle};
  search_.report(sample.setting, sample.seconds);
  return sample;
}

namespace {

// The shortest text that reads back: 0.25, 25, not "25.000000".
std::string text(double value) {
  char buffer[32];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

}  // namespace

std::string TuningSession::describe(const Setting& setting) const {
  std::string out;
  const std::vector<Knob>& knobs = search_.knobs();
  for (size_t k = 0; k < knobs.size() && k < setting.size(); ++k) {
    out += (out.empty() ? "" : " ") + knobs[k].name + "=" + text(knobs[k].values[setting[k]]);
  }
  return out;
}

std::string TuningSession::describeSpace() const {
  std::string out;
  for (const Knob& k : search_.knobs()) {
    out += (out.empty() ? "" : "; ") + k.name + " in {";
    for (size_t i = 0; i < k.values.size(); ++i) out += (i ? ", " : "") + text(k.values[i]);
    out += "}";
  }
  return out;
}

std::optional<double> TuningSession::valueOf(const Setting& setting,
                                             const std::string& name) const {
  const std::vector<Knob>& knobs = search_.knobs();
  for (size_t k = 0; k < knobs.size() && k < setting.size(); ++k) {
    if (knobs[k].name == name) return knobs[k].values[setting[k]];
  }
  return std::nullopt;
}

Knob knobOver(const std::string& name, std::vector<double> values, double given) {
  values.push_back(given);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const size_t at =
      static_cast<size_t>(std::find(values.begin(), values.end(), given) - values.begin());
  return {name, std::move(values), at};
}

namespace {

// `from` doubling up to the first value >= `whole` (and at most kMaxBucketCapMB), with `given`
// among them.
Knob doublingKnob(const std::string& name, double from, double whole, double given) {
  std::vector<double> values;
  for (double v = from; v <= kMaxBucketCapMB; v *= 2) {
    values.push_back(v);
    if (v >= whole) break;
  }
  return knobOver(name, std::move(values), given);
}

}  // namespace

std::vector<Knob> bucketKnobs(size_t model_bytes, double first_cap_mb, double cap_mb) {
  const double model_mb = static_cast<double>(model_bytes) / (1 << 20);
  return {doublingKnob(kBucketCapKnob, 1, model_mb, cap_mb),
          doublingKnob(kFirstBucketCapKnob, 0.25, model_mb, first_cap_mb)};
}

Knob microBatchKnob(int64_t batch_rows, int32_t micro_batches) {
  std::vector<double> values;
  for (int64_t m = 1; m * kMinMicroBatchRows <= batch_rows && batch_rows % m == 0; m *= 2) {
    values.push_back(static_cast<double>(m));
  }
  return knobOver(kMicroBatchesKnob, std::move(values), micro_batches);
}

Knob blasThreadsKnob(int cores, int32_t threads) {
  std::vector<double> values;
  for (int n = 1; n <= cores; n *= 2) values.push_back(n);
  return knobOver(kBlasThreadsKnob, std::move(values), threads);
}

Knob tcpDoublingKnob(double default_kib) {
  std::vector<double> values;
  for (double kib = 4; kib <= 4096; kib *= 2) values.push_back(kib);
  return knobOver(kTcpDoublingKnob, std::move(values), default_kib);
}

}  // namespace ringmaster::trainer::autotune
