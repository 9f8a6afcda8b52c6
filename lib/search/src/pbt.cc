#include "ringmaster/search/pbt.h"

#include <algorithm>
#include <cmath>

#include "ringmaster/core/fnv.h"

namespace ringmaster::search {
namespace {

// Distinct random streams per decision of a round (offsets into uniform01's third input).
constexpr uint64_t kPickSource = 1;
constexpr uint64_t kResample = 1000;
constexpr uint64_t kDirection = 2000;
constexpr uint64_t kDraw = 3000;

uint64_t key(int64_t round, int64_t member) {
  return (static_cast<uint64_t>(round) << 20) ^ static_cast<uint64_t>(member);
}

// A member's stream by its name, so that the population's order does not matter.
int64_t streamOf(const std::string& name) { return core::fnv1a32(name); }

nlohmann::json perturb(const Parameter& p, const nlohmann::json& value, bool up,
                       const PbtOptions& options) {
  if (!p.isRange()) {
    const auto at = std::find(p.choices.begin(), p.choices.end(), value);
    if (at == p.choices.end()) return p.choices.front();
    const auto i = static_cast<size_t>(at - p.choices.begin());
    if (up) return p.choices[std::min(i + 1, p.choices.size() - 1)];
    return p.choices[i == 0 ? 0 : i - 1];
  }
  const double v = value.is_number() ? value.get<double>() : *p.min;
  const double moved =
      std::clamp(v * (up ? options.perturb_up : options.perturb_down), *p.min, *p.max);
  if (!p.integer) return moved;
  // An integer too small to move by 20% still moves by one.
  double whole = std::round(moved);
  if (whole == std::round(v)) whole += up ? 1 : -1;
  return static_cast<int64_t>(std::clamp(whole, std::ceil(*p.min), std::floor(*p.max)));
}

}  // namespace

Assignment explore(const Assignment& params, const std::vector<Parameter>& space,
                   const PbtOptions& options, uint64_t seed, int64_t round, int64_t member_stream) {
  Assignment out;
  const uint64_t k = key(round, member_stream);
  for (size_t i = 0; i < space.size(); ++i) {
    const Parameter& p = space[i];
    const auto found = std::find_if(params.begin(), params.end(),
                                    [&](const auto& entry) { return entry.first == p.path; });
    const bool resample =
        found == params.end() || uniform01(seed, k, kResample + i) < options.resample_probability;
    if (resample) {
      out.emplace_back(p.path, drawValue(p, seed ^ 0x5eed, static_cast<int64_t>(k),
                                         static_cast<int64_t>(kDraw + i)));
    } else {
      out.emplace_back(
          p.path, perturb(p, found->second, uniform01(seed, k, kDirection + i) < 0.5, options));
    }
  }
  return out;
}

std::vector<Exploit> pbtRound(const std::vector<PbtMember>& members,
                              const std::vector<Parameter>& space, const PbtOptions& options,
                              uint64_t seed, int64_t round) {
  std::vector<const PbtMember*> ranked;
  for (const PbtMember& m : members)
    if (m.objective && std::isfinite(*m.objective)) ranked.push_back(&m);
  // Best first; ties by name.
  std::sort(ranked.begin(), ranked.end(), [&](const PbtMember* a, const PbtMember* b) {
    if (*a->objective != *b->objective)
      return options.maximize ? *a->objective > *b->objective : *a->objective < *b->objective;
    return a->name < b->name;
  });
  const size_t n = ranked.size();
  if (n < 2) return {};
  const auto q = std::min(n / 2, static_cast<size_t>(std::floor(options.quantile * n)));
  std::vector<Exploit> out;
  for (size_t i = n - q; i < n; ++i) {
    const PbtMember& loser = *ranked[i];
    const int64_t loser_index = streamOf(loser.name);
    const size_t pick = std::min(
        q - 1, static_cast<size_t>(uniform01(seed, key(round, loser_index), kPickSource) * q));
    const PbtMember& source = *ranked[pick];
    out.push_back({loser.name, source.name,
                   explore(source.params, space, options, seed, round, loser_index)});
  }
  return out;
}

}  // namespace ringmaster::search
