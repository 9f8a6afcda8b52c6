#include "launcher/pbt_rounds.h"

#include <chrono>
#include <filesystem>
#include <system_error>

#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/contract/trainer_summary.h"
#include "ringmaster/core/log.h"
#include "ringmaster/kube/codec.h"

namespace ringmaster::launcher {
namespace {

namespace fs = std::filesystem;
using contract::kEnvParameterPrefix;

// A variable's text as the value it stands for: a number when it reads as JSON's, else the text.
nlohmann::json valueOf(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  return parsed.is_number() || parsed.is_boolean() ? parsed : nlohmann::json(text);
}

// `to` becomes a copy of the directory `from` (what a run left there, whole).
core::Status replaceWithCopy(const std::string& from, const std::string& to) {
  std::error_code ec;
  const std::string staging = to + ".incoming";
  fs::remove_all(staging, ec);
  fs::create_directories(fs::path(staging).parent_path(), ec);
  fs::copy(from, staging, fs::copy_options::recursive, ec);
  if (ec) return core::internalError("copying " + from + " to " + staging + ": " + ec.message());
  fs::remove_all(to, ec);
  if (ec) return core::internalError("removing " + to + ": " + ec.message());
  fs::rename(staging, to, ec);
  if (ec) return core::internalError("renaming " + staging + " to " + to + ": " + ec.message());
  return core::Status::Ok();
}

}  // namespace

core::Result<std::unique_ptr<PbtRounds>> PbtRounds::create(const std::string& pbt_json,
                                                           const Lookup& lookup) {
  const std::string what = std::string(contract::pod_env::kPbt) + ": ";
  nlohmann::json parsed = nlohmann::json::parse(pbt_json, nullptr, false);
  if (parsed.is_discarded()) return core::invalidArgument(what + "not JSON");
  core::Result<kube::PbtSpec> pbt = kube::decode<kube::PbtSpec>(parsed);
  if (!pbt.ok()) return pbt.status().withContext(what);
  if (!pbt->intervals) {
    return core::invalidArgument(what +
                                 "spec.trainer.pbt.intervals: required for a program of your own");
  }
  kube::TrainerSpec spec;
  spec.pbt = *pbt;
  std::vector<contract::FieldError> errors = contract::validateTrainer(spec, "spec.trainer");
  if (!errors.empty()) return core::invalidArgument(what + contract::describe(errors));
  contract::TrainerSettings::Pbt settings = contract::trainerSettings(spec).pbt;
  search::Assignment initial;
  for (const search::Parameter& p : settings.space) {
    const std::string name = p.path.substr(kEnvParameterPrefix.size());
    const char* value = lookup(name.c_str());
    if (value == nullptr || *value == '\0') {
      return core::invalidArgument(what + "the member's first value of " + p.path +
                                   " is not in its environment (" + name + ")");
    }
    initial.emplace_back(p.path, valueOf(value));
  }
  return std::unique_ptr<PbtRounds>(new PbtRounds(std::move(settings), std::move(initial)));
}

PbtRounds::PbtRounds(contract::TrainerSettings::Pbt settings, search::Assignment initial)
    : settings_(std::move(settings)),
      member_(settings_, std::move(initial)),
      work_dir_(settings_.directory + "/work/" + settings_.member) {}

std::map<std::string, std::string> PbtRounds::runEnvironment(int32_t interval) const {
  std::map<std::string, std::string> env;
  for (const auto& [path, value] : member_.parameters()) {
    env[path.substr(kEnvParameterPrefix.size())] = contract::envParameterText(value);
  }
  env[contract::rank_env::kPbtInterval] = std::to_string(interval);
  env[contract::rank_env::kPbtIntervals] = std::to_string(settings_.intervals);
  env[contract::rank_env::kCheckpointDir] = work_dir_;
  return env;
}

core::Result<double> PbtRounds::objectiveOf(int32_t interval,
                                            const std::string& summary_json) const {
  const char* key = settings_.loss ? contract::trainer_summary::kFinalTrainLoss
                                   : contract::trainer_summary::kTestAccuracy;
  const std::string what = "pbt interval " + std::to_string(interval) + ": ";
  nlohmann::json summary = nlohmann::json::parse(summary_json, nullptr, false);
  if (!summary.is_object()) {
    return core::invalidArgument(what + "the program's summary (" +
                                 contract::rank_env::kSummaryFile + ") is not a JSON object");
  }
  if (!summary.contains(key) || !summary[key].is_number()) {
    return core::invalidArgument(what + "the program's summary (" +
                                 contract::rank_env::kSummaryFile + ") holds no number \"" + key +
                                 "\", the objective");
  }
  return summary[key].get<double>();
}

core::Result<int32_t> PbtRounds::resume(const core::StopSource* stop) {
  RM_ASSIGN_OR_RETURN(std::optional<trainer::pbt::Replay> replay, member_.replay(stop));
  if (!replay) return 1;
  RM_RETURN_IF_ERROR_CTX(
      replaceWithCopy(replay->checkpoint, work_dir_),
      "pbt: resuming " + member() + " after round " + std::to_string(replay->round));
  RM_LOG(INFO, LAUNCH) << "pbt member " << member() << " resumes after round " << replay->round
                       << " from " << replay->checkpoint << " with "
                       << search::describe(member_.parameters()) << " (" << member_.lineage().size()
                       << " exploits so far)";
  return static_cast<int32_t>(replay->round) + 1;
}

core::Status PbtRounds::meet(int32_t interval, double objective, const core::StopSource* stop) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::create_directories(work_dir_, ec);  // a run that saved nothing leaves nothing to copy
  const std::string snapshot =
      member_.directory().checkpointDir(member()) + "/round-" + std::to_string(interval);
  RM_RETURN_IF_ERROR(replaceWithCopy(work_dir_, snapshot));
  RM_ASSIGN_OR_RETURN(std::optional<trainer::pbt::Decision> decision,
                      member_.interval(interval, interval, objective, snapshot, stop));
  if (decision) {
    RM_RETURN_IF_ERROR_CTX(replaceWithCopy(decision->checkpoint, work_dir_),
                           "pbt round " + std::to_string(interval) + ": taking " +
                               decision->entry.source + "'s checkpoint");
    RM_LOG(INFO, LAUNCH) << "pbt round " << interval << ": " << member() << " (" << objective
                         << ") continues from " << decision->entry.source << " ("
                         << decision->entry.source_objective << ") with "
                         << search::describe(decision->entry.parameters);
  } else {
    RM_LOG(INFO, LAUNCH) << "pbt round " << interval << ": " << member() << " (" << objective
                         << ") runs on with " << search::describe(member_.parameters());
  }
  round_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return core::Status::Ok();
}

core::Result<std::string> PbtRounds::finalSummary(const std::string& summary_json) const {
  nlohmann::json summary = nlohmann::json::parse(summary_json, nullptr, false);
  if (!summary.is_object()) {
    return core::invalidArgument(std::string("the program's summary (") +
                                 contract::rank_env::kSummaryFile + ") is not a JSON object");
  }
  summary[contract::trainer_summary::kPbt] =
      trainer::pbt::summaryJson(member(), member_.parameters(), member_.lineage(), round_seconds_);
  return summary.dump();
}

}  // namespace ringmaster::launcher
