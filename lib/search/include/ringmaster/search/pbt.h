#pragma once
// Population-based training's decision at one interval: which members exploit (copy another's
// weights and optimizer state) and with which explored hyperparameters, as Ray Tune's PBT does:
// members ranked by their objective; each in the bottom quantile takes a member of the top
// quantile picked at random, and that member's hyperparameters perturbed: a range's value times
// 0.8 or 1.2 (clamped to the range, rounded for integers), a choice moved to a neighbouring one,
// or, with resample_probability, either drawn afresh from the space.
//
// Pure: every random choice comes from (seed, round, member), so a restarted operator takes the
// same decision again for the same round.
//
// Thread-safety: pure functions. Failure: none (members without an objective sit the round out).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/search/space.h"

namespace ringmaster::search {

struct PbtMember {
  std::string name;
  std::optional<double> objective;  // at this interval; nullopt: not measured (sits out)
  Assignment params;
};

struct PbtOptions {
  double quantile = 0.25;  // the bottom and top fractions of the ranked population
  double perturb_down = 0.8, perturb_up = 1.2;
  double resample_probability = 0.25;
  bool maximize = true;  // objective direction (accuracy up, loss down)
};

struct Exploit {
  std::string member;  // takes...
  std::string source;  // ...this member's weights and optimizer state...
  Assignment params;   // ...and these hyperparameters (source's, explored)
  bool operator==(const Exploit&) const = default;
};

// One round: at most floor(quantile x n) members exploit, and none when fewer than two members
// are measured. Ties rank by name, so the order of `members` does not matter.
std::vector<Exploit> pbtRound(const std::vector<PbtMember>& members,
                              const std::vector<Parameter>& space, const PbtOptions& options,
                              uint64_t seed, int64_t round);

// The explore step alone: `params` (over `space`) perturbed for (seed, round, member_stream); a
// round's member_stream is a hash of the exploiting member's name.
Assignment explore(const Assignment& params, const std::vector<Parameter>& space,
                   const PbtOptions& options, uint64_t seed, int64_t round, int64_t member_stream);

}  // namespace ringmaster::search
