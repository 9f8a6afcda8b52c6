#include "trainer/pbt/member.h"

#include <algorithm>

#include "ringmaster/contract/trainer_summary.h"
#include "ringmaster/core/log.h"

namespace ringmaster::trainer::pbt {
namespace {

double* fieldOf(contract::TrainerSettings::Optimizer& o, const std::string& path) {
  if (path == "optimizer.learningRate") return &o.learning_rate;
  if (path == "optimizer.momentum") return &o.momentum;
  if (path == "optimizer.weightDecay") return &o.weight_decay;
  if (path == "optimizer.beta1") return &o.beta1;
  if (path == "optimizer.beta2") return &o.beta2;
  return nullptr;  // validation admits none other (contract::kPbtFields)
}

}  // namespace

double optimizerValue(const contract::TrainerSettings::Optimizer& optimizer,
                      const std::string& path) {
  contract::TrainerSettings::Optimizer copy = optimizer;
  const double* field = fieldOf(copy, path);
  return field != nullptr ? *field : 0;
}

contract::TrainerSettings::Optimizer withValues(contract::TrainerSettings::Optimizer optimizer,
                                                const search::Assignment& values) {
  for (const auto& [path, value] : values) {
    if (double* field = fieldOf(optimizer, path); field != nullptr && value.is_number()) {
      *field = value.get<double>();
    }
  }
  return optimizer;
}

nlohmann::json summaryJson(const std::string& member, const search::Assignment& parameters,
                           const std::vector<LineageEntry>& lineage, double round_seconds) {
  namespace key = contract::trainer_summary;
  auto values = [](const search::Assignment& a) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [path, value] : a) out[path] = value;
    return out;
  };
  nlohmann::json entries = nlohmann::json::array();
  for (const LineageEntry& e : lineage) {
    entries.push_back({{key::kPbtRound, e.round},
                       {key::kPbtStep, e.step},
                       {key::kPbtSource, e.source},
                       {key::kPbtSourceObjective, e.source_objective},
                       {key::kPbtObjective, e.own_objective},
                       {key::kPbtParameters, values(e.parameters)}});
  }
  return {{key::kPbtMember, member},
          {key::kPbtParameters, values(parameters)},
          {key::kPbtLineage, entries},
          {key::kPbtRoundSeconds, round_seconds}};
}

Member::Member(const contract::TrainerSettings::Pbt& settings,
               const contract::TrainerSettings::Optimizer& optimizer)
    : settings_(settings),
      optimizer_(optimizer),
      directory_(settings.directory, settings.population) {
  for (const search::Parameter& p : settings_.space) {
    parameters_.emplace_back(p.path, optimizerValue(optimizer_, p.path));
  }
}

Member::Member(const contract::TrainerSettings::Pbt& settings, search::Assignment initial)
    : settings_(settings),
      directory_(settings.directory, settings.population),
      parameters_(std::move(initial)) {}

core::Result<std::optional<Decision>> Member::interval(int64_t round, int64_t step,
                                                       double objective,
                                                       const std::string& checkpoint,
                                                       const core::StopSource* stop) {
  RM_RETURN_IF_ERROR(
      directory_.publish({settings_.member, round, step, objective, parameters_, checkpoint}));
  const std::vector<MemberReport> reports =
      directory_.gather(round, std::chrono::seconds(settings_.wait_seconds), stop);
  std::vector<search::PbtMember> members;
  for (const MemberReport& r : reports) members.push_back({r.member, r.objective, r.parameters});
  search::PbtOptions options;
  options.quantile = settings_.quantile;
  options.resample_probability = settings_.resample_probability;
  options.maximize = settings_.maximize;
  const std::vector<search::Exploit> exploits =
      search::pbtRound(members, settings_.space, options, settings_.seed, round);
  auto mine = std::find_if(exploits.begin(), exploits.end(),
                           [&](const search::Exploit& x) { return x.member == settings_.member; });
  if (mine == exploits.end()) return std::optional<Decision>();
  auto source = std::find_if(reports.begin(), reports.end(),
                             [&](const MemberReport& r) { return r.member == mine->source; });
  Decision d;
  d.checkpoint = source->checkpoint;
  d.optimizer = withValues(optimizer_, mine->params);
  d.entry = {round, step, mine->source, source->objective, objective, mine->params};
  optimizer_ = d.optimizer;
  parameters_ = mine->params;
  lineage_.push_back(d.entry);
  return std::optional<Decision>(std::move(d));
}

core::Result<std::optional<Replay>> Member::replay(const core::StopSource* stop) {
  std::optional<Replay> at;
  for (int64_t round = 1;; ++round) {
    const std::optional<MemberReport> own = directory_.report(round, settings_.member);
    if (!own) break;
    RM_ASSIGN_OR_RETURN(std::optional<Decision> decision,
                        interval(round, own->step, own->objective, own->checkpoint, stop));
    at = Replay{round, own->step, decision ? decision->checkpoint : own->checkpoint};
  }
  return at;
}

}  // namespace ringmaster::trainer::pbt
