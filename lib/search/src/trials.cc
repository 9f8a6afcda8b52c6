#include "ringmaster/search/trials.h"

#include <algorithm>
#include <cmath>

namespace ringmaster::search {

TrialPlan planTrials(const std::vector<TrialView>& trials, const TrialBudget& budget,
                     int64_t created_before) {
  TrialPlan plan;
  plan.total =
      budget.candidates > 0 ? std::min(budget.max_trials, budget.candidates) : budget.max_trials;
  int64_t next = 0;
  const TrialView* best = nullptr;
  for (const TrialView& t : trials) {
    next = std::max(next, t.index + 1);
    switch (t.state) {
      case TrialState::kPending:
      case TrialState::kRunning:
        ++plan.active;
        break;
      case TrialState::kFailed:
        ++plan.failed;
        break;
      case TrialState::kSucceeded:
        ++plan.succeeded;
        if (!t.objective || !std::isfinite(*t.objective)) break;
        if (best == nullptr ||
            (budget.maximize ? *t.objective > *best->objective : *t.objective < *best->objective) ||
            (*t.objective == *best->objective && t.index < best->index)) {
          best = &t;
        }
        break;
    }
  }
  if (best != nullptr) plan.best = best->index;
  // Trials made: every index below the next one was created once, whether or not it still
  // shows (a trial deleted by hand stays counted).
  const int64_t created = std::max({next, static_cast<int64_t>(trials.size()), created_before});

  if (budget.target && best != nullptr) {
    const double reached = *best->objective;
    if (budget.maximize ? reached >= *budget.target : reached <= *budget.target) {
      plan.outcome = SearchOutcome::kSucceeded;
      plan.reason = "GoalReached";
      plan.message = "trial " + std::to_string(*plan.best) + " reached the objective's target";
      plan.created = created;
      return plan;
    }
  }

  plan.created = created;
  if (plan.failed > budget.max_failed) {
    plan.outcome = SearchOutcome::kFailed;
    plan.reason = "MaxFailedTrialsExceeded";
    plan.message = std::to_string(plan.failed) + " trials failed (maxFailedTrials " +
                   std::to_string(budget.max_failed) + ")";
    return plan;
  }
  if (created >= plan.total && plan.active == 0) {
    if (plan.best) {
      plan.outcome = SearchOutcome::kSucceeded;
      plan.reason = "TrialsCompleted";
      plan.message = std::to_string(plan.succeeded) + " of " + std::to_string(created) +
                     " trials succeeded; the best is trial " + std::to_string(*plan.best);
    } else {
      plan.outcome = SearchOutcome::kFailed;
      plan.reason = "NoTrialSucceeded";
      plan.message =
          "none of the " + std::to_string(created) + " trials succeeded with an objective";
    }
    return plan;
  }
  const int64_t room = std::max<int64_t>(0, budget.parallelism - plan.active);
  const int64_t left = std::max<int64_t>(0, plan.total - created);
  for (int64_t i = 0; i < std::min(room, left); ++i) plan.create.push_back(created + i);
  return plan;
}

}  // namespace ringmaster::search
