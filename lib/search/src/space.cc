#include "ringmaster/search/space.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <sstream>

namespace ringmaster::search {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// A range's value at `t` in [0, 1] along its scale.
double along(const Parameter& p, double t) {
  const double lo = *p.min, hi = *p.max;
  // The ends exactly as written: exp(log(x)) need not give x back.
  if (t <= 0) return lo;
  if (t >= 1) return hi;
  if (p.scale == Scale::kLog) return std::exp(std::log(lo) + t * (std::log(hi) - std::log(lo)));
  return lo + t * (hi - lo);
}

// A range's value as JSON: an integer range's rounded into [ceil(min), floor(max)].
nlohmann::json rangeValue(const Parameter& p, double v) {
  if (!p.integer) return v;
  const double lo = std::ceil(*p.min), hi = std::floor(*p.max);
  return static_cast<int64_t>(std::clamp(std::round(v), lo, hi));
}

std::vector<nlohmann::json> gridValues(const Parameter& p) {
  if (!p.isRange()) return p.choices;
  std::vector<nlohmann::json> values;
  for (int32_t i = 0; i < p.grid_points; ++i) {
    const double t = p.grid_points == 1 ? 0 : static_cast<double>(i) / (p.grid_points - 1);
    nlohmann::json v = rangeValue(p, along(p, t));
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
  }
  return values;
}

}  // namespace

double uniform01(uint64_t seed, uint64_t a, uint64_t b) {
  const uint64_t x = splitmix64(splitmix64(splitmix64(seed) ^ a) ^ b);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

std::vector<contract::FieldError> validateSpace(const std::vector<Parameter>& space,
                                                const std::string& prefix, bool grid) {
  contract::FieldErrors e;
  if (space.empty()) e.add(prefix, "must name at least one parameter to search");
  std::set<std::string> seen;
  for (size_t i = 0; i < space.size(); ++i) {
    const Parameter& p = space[i];
    const std::string at = prefix + "[" + std::to_string(i) + "]";
    if (p.path.empty() || p.path.front() == '.' || p.path.back() == '.' ||
        p.path.find("..") != std::string::npos) {
      e.add(at + ".path", contract::invalidValue(p.path,
                                                 "must be a field of spec.trainer, "
                                                 "such as optimizer.learningRate"));
    } else if (!seen.insert(p.path).second) {
      e.add(at + ".path", contract::invalidValue(p.path, "is searched twice"));
    }
    if (p.isRange() && !p.choices.empty()) {
      e.add(at, "has both a range (min, max) and choices; give one");
      continue;
    }
    if (!p.isRange()) {
      if (p.choices.empty()) e.add(at, "needs a range (min and max) or choices");
      continue;
    }
    if (!p.min || !p.max) {
      e.add(at + (p.min ? ".max" : ".min"), "required: a range needs both ends");
      continue;
    }
    if (!(*p.min < *p.max)) {
      e.add(at + ".max", "must be above min (" + number(*p.min) + "), got " + number(*p.max));
      continue;
    }
    if (p.scale == Scale::kLog && *p.min <= 0) {
      e.add(at + ".min", "must be above 0 on a log scale (log-uniform), got " + number(*p.min));
    }
    if (p.integer && std::ceil(*p.min) > std::floor(*p.max)) {
      e.add(at, "an integer range needs a whole number between min and max");
    }
    if (grid && p.grid_points < 2) {
      e.add(at + ".gridPoints", "must be at least 2 for a range in a grid search, got " +
                                    std::to_string(p.grid_points));
    }
  }
  return e.take();
}

int64_t gridSize(const std::vector<Parameter>& space) {
  int64_t n = 1;
  for (const Parameter& p : space) {
    const auto k = static_cast<int64_t>(gridValues(p).size());
    if (k == 0) return 0;
    if (n > INT64_MAX / k) return INT64_MAX;
    n *= k;
  }
  return n;
}

std::vector<Assignment> gridOf(const std::vector<Parameter>& space) {
  std::vector<Assignment> out = {Assignment{}};
  for (const Parameter& p : space) {
    std::vector<Assignment> next;
    for (const Assignment& prefix : out) {
      for (const nlohmann::json& v : gridValues(p)) {
        Assignment a = prefix;
        a.emplace_back(p.path, v);
        next.push_back(std::move(a));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::vector<contract::FieldError> spaceOf(const std::vector<kube::SearchParameterSpec>& specs,
                                          const std::string& prefix, bool grid,
                                          std::vector<Parameter>* space) {
  contract::FieldErrors e;
  std::vector<Parameter> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const kube::SearchParameterSpec& spec = specs[i];
    const std::string at = prefix + "[" + std::to_string(i) + "]";
    e.unknownFields(at, spec.extra);
    e.oneOf(at + ".scale", spec.scale, {"linear", "log"});
    if (!spec.path) e.add(at + ".path", "required");
    Parameter p;
    p.path = spec.path.value_or("");
    p.min = spec.min;
    p.max = spec.max;
    p.scale = spec.scale.value_or("linear") == "log" ? Scale::kLog : Scale::kLinear;
    p.integer = spec.integer.value_or(false);
    p.choices = spec.choices;
    p.grid_points = spec.grid_points.value_or(0);
    out.push_back(std::move(p));
  }
  for (contract::FieldError& err : validateSpace(out, prefix, grid)) {
    const auto& seen = e.errors();
    if (std::find(seen.begin(), seen.end(), err) == seen.end()) {
      e.add(std::move(err.field), std::move(err.message));
    }
  }
  if (space != nullptr) *space = std::move(out);
  return e.take();
}

Assignment gridAt(const std::vector<Parameter>& space, int64_t index) {
  // Mixed radix, the last parameter the fastest digit, as gridOf nests them.
  Assignment a(space.size());
  for (size_t i = space.size(); i-- > 0;) {
    std::vector<nlohmann::json> values = gridValues(space[i]);
    const auto k = static_cast<int64_t>(values.size());
    a[i] = {space[i].path, std::move(values[static_cast<size_t>(index % k)])};
    index /= k;
  }
  return a;
}

nlohmann::json drawValue(const Parameter& p, uint64_t seed, int64_t index, int64_t stream) {
  const double u = uniform01(seed, static_cast<uint64_t>(index), static_cast<uint64_t>(stream));
  if (!p.isRange()) {
    const auto k = std::min(p.choices.size() - 1, static_cast<size_t>(u * p.choices.size()));
    return p.choices[k];
  }
  if (p.integer) {
    // Each whole number in the range equally likely on a linear scale.
    const double lo = std::ceil(*p.min), hi = std::floor(*p.max);
    if (p.scale == Scale::kLinear) return static_cast<int64_t>(lo + std::floor(u * (hi - lo + 1)));
  }
  return rangeValue(p, along(p, u));
}

Assignment sampleOf(const std::vector<Parameter>& space, uint64_t seed, int64_t index) {
  Assignment a;
  for (size_t i = 0; i < space.size(); ++i)
    a.emplace_back(space[i].path, drawValue(space[i], seed, index, static_cast<int64_t>(i)));
  return a;
}

core::Status applyAssignment(const Assignment& assignment, nlohmann::json& trainer) {
  for (const auto& [path, value] : assignment) {
    nlohmann::json* at = &trainer;
    size_t begin = 0;
    for (;;) {
      if (!at->is_object()) {
        if (!at->is_null()) {
          return core::invalidArgument("spec.trainer." + path + ": " +
                                       path.substr(0, begin > 0 ? begin - 1 : 0) +
                                       " is not an object");
        }
        *at = nlohmann::json::object();
      }
      const size_t dot = path.find('.', begin);
      const std::string key = path.substr(begin, dot == std::string::npos ? dot : dot - begin);
      at = &(*at)[key];
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    *at = value;
  }
  return core::Status::Ok();
}

std::string describe(const Assignment& assignment) {
  std::string out;
  for (const auto& [path, value] : assignment)
    out += (out.empty() ? "" : ", ") + path + "=" + value.dump();
  return out;
}

}  // namespace ringmaster::search
