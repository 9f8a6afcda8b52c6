#include "trainer/autotuner.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "ringmaster/core/log.h"
#include "trainer/autotune/tuning_session.h"

namespace ringmaster::trainer {

using core::Result;
using core::Status;

namespace {

// A knob over the space the spec gives (ascending, without repeats), starting at `given`,
// which validation made one of its values.
autotune::Knob spaceKnob(const std::string& name, std::vector<double> values, double given) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const auto at = std::find(values.begin(), values.end(), given);
  return {name, values, static_cast<size_t>(at - values.begin())};
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  return text;
}

// The choice a checkpoint directory holds, if any.
std::optional<AutotuneChoice> readChoice(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("bucketCapMB") || !j.contains("firstBucketCapMB")) {
    RM_LOG(WARN, STEP) << "autotune: " << path << " is not a choice autotune wrote; tuning again";
    return std::nullopt;
  }
  AutotuneChoice choice;
  choice.bucket_cap_mb = j.value("bucketCapMB", 0.0);
  choice.first_bucket_cap_mb = j.value("firstBucketCapMB", 0.0);
  choice.samples = j.value("samples", 0);
  choice.default_seconds = j.value("defaultStepSeconds", 0.0);
  choice.best_seconds = j.value("bestStepSeconds", 0.0);
  choice.step = j.value("step", int64_t{0});
  if (!(choice.bucket_cap_mb > 0) || !(choice.first_bucket_cap_mb > 0)) return std::nullopt;
  return choice;
}

Status writeChoice(const std::string& path, const AutotuneChoice& c) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const nlohmann::json j = {{"bucketCapMB", c.bucket_cap_mb},
                            {"firstBucketCapMB", c.first_bucket_cap_mb},
                            {"samples", c.samples},
                            {"defaultStepSeconds", c.default_seconds},
                            {"bestStepSeconds", c.best_seconds},
                            {"step", c.step}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out) return core::errnoError("autotune: writing " + tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return core::errnoError("autotune: rename " + tmp + " -> " + path, errno);
  }
  return Status::Ok();
}

}  // namespace

struct Autotuner::State {
  State(comm::Communicator& c, Apply a, TrainerMetrics* m)
      : comm(c), apply(std::move(a)), metrics(m) {}

  comm::Communicator& comm;
  Apply apply;
  TrainerMetrics* metrics = nullptr;
  std::string choice_path;                           // "" without checkpoints
  std::unique_ptr<autotune::TuningSession> session;  // null once done
  autotune::Setting applied;
  int steps_in_sample = 0;
  int64_t first_step = -1;  // the first step measured
  std::ofstream csv;        // rank 0, when asked for
  std::string csv_path;
  std::optional<AutotuneChoice> choice;

  int rank() const { return comm.rank(); }

  // Every rank: rank 0's [found, cap, first], through one allreduce of three floats.
  Result<std::array<float, 3>> fromRankZero(std::array<float, 3> mine, const std::string& what) {
    std::array<float, 3> sum = rank() == 0 ? mine : std::array<float, 3>{0, 0, 0};
    comm::AllreduceOptions options;
    options.tag = "autotune";
    RM_RETURN_IF_ERROR_CTX(comm.allreduceSum(sum.data(), sum.size(), options),
                           "rank " + std::to_string(rank()) + ": autotune " + what);
    return sum;
  }

  // The caps training runs under, in the gauges.
  void show(double cap, double first) const {
    if (metrics == nullptr) return;
    metrics->autotune_bucket_cap->Set(cap);
    metrics->autotune_first_bucket_cap->Set(first);
  }
  // New buckets of these caps from the next step on.
  Status applyCaps(double cap, double first) {
    RM_RETURN_IF_ERROR(apply(cap, first));
    show(cap, first);
    return Status::Ok();
  }
  Status applySetting(const autotune::Setting& setting) {
    if (setting == applied) return Status::Ok();
    RM_RETURN_IF_ERROR(applyCaps(*session->valueOf(setting, autotune::kBucketCapKnob),
                                 *session->valueOf(setting, autotune::kFirstBucketCapKnob)));
    applied = setting;
    return Status::Ok();
  }
};

Autotuner::Autotuner(std::unique_ptr<State> state) : state_(std::move(state)) {}
Autotuner::~Autotuner() = default;

Result<std::unique_ptr<Autotuner>> Autotuner::start(const contract::TrainerSettings& settings,
                                                    comm::Communicator& comm, size_t model_bytes,
                                                    Apply apply, TrainerMetrics* metrics) {
  const contract::TrainerSettings::Autotune& a = settings.autotune;
  auto state = std::make_unique<State>(comm, std::move(apply), metrics);
  State& s = *state;
  s.show(settings.bucket_cap_mb, settings.first_bucket_cap_mb);
  if (comm.size() == 1) {
    if (s.rank() == 0) {
      RM_LOG(INFO, STEP) << "autotune: one rank exchanges no gradients, so its bucket caps do "
                            "not matter; nothing to tune";
    }
    return std::unique_ptr<Autotuner>(new Autotuner(std::move(state)));
  }
  if (!settings.checkpoint.path.empty()) {
    s.choice_path =
        (std::filesystem::path(settings.checkpoint.path) / kAutotuneChoiceFile).string();
  }
  std::vector<autotune::Knob> knobs =
      autotune::bucketKnobs(model_bytes, settings.first_bucket_cap_mb, settings.bucket_cap_mb);
  if (!a.bucket_caps.empty()) {
    knobs[0] = spaceKnob(autotune::kBucketCapKnob, a.bucket_caps, settings.bucket_cap_mb);
  }
  if (!a.first_bucket_caps.empty()) {
    knobs[1] =
        spaceKnob(autotune::kFirstBucketCapKnob, a.first_bucket_caps, settings.first_bucket_cap_mb);
  }
  autotune::SessionOptions options;
  options.warmup_steps = a.warmup_steps;
  options.measure_steps = a.measure_steps;
  options.search.max_samples = a.max_samples;
  s.session = std::make_unique<autotune::TuningSession>(knobs, options);
  s.applied = s.session->current();  // the configured caps, which the buckets start with

  // A choice the checkpoint directory holds: rank 0 reads it, every rank trains on it.
  std::optional<AutotuneChoice> saved;
  if (s.rank() == 0 && !s.choice_path.empty() && !a.retune) saved = readChoice(s.choice_path);
  if (!s.choice_path.empty()) {
    std::array<float, 3> mine = {0, 0, 0};
    if (saved) {
      mine = {1, static_cast<float>(saved->bucket_cap_mb),
              static_cast<float>(saved->first_bucket_cap_mb)};
    }
    RM_ASSIGN_OR_RETURN(const auto agreed, s.fromRankZero(mine, "reading the checkpoint's choice"));
    if (agreed[0] > 0) {
      RM_RETURN_IF_ERROR(s.applyCaps(agreed[1], agreed[2]));
      AutotuneChoice choice = saved.value_or(AutotuneChoice{});
      choice.bucket_cap_mb = agreed[1];
      choice.first_bucket_cap_mb = agreed[2];
      choice.from_checkpoint = true;
      s.choice = choice;
      s.session.reset();
      if (s.rank() == 0) {
        RM_LOG(INFO, STEP) << "autotune: training on the choice in " << s.choice_path
                           << " (bucketCapMB=" << choice.bucket_cap_mb
                           << " firstBucketCapMB=" << choice.first_bucket_cap_mb
                           << "), not tuning again; autotune.retune: true tunes again";
      }
      return std::unique_ptr<Autotuner>(new Autotuner(std::move(state)));
    }
  }
  if (s.rank() == 0) {
    if (!a.log.empty()) {
      s.csv_path = a.log;
      s.csv.open(a.log, std::ios::trunc);
      if (!s.csv) return core::errnoError("autotune: log " + a.log, errno);
      s.csv << "sample,step," << autotune::kBucketCapKnob << "," << autotune::kFirstBucketCapKnob
            << ",median_step_seconds,best\n";
    }
    RM_LOG(INFO, STEP) << "autotune: up to " << a.max_samples << " samples of "
                       << s.session->stepsPerSample() << " steps (" << a.warmup_steps
                       << " warm-up) over " << s.session->describeSpace();
  }
  return std::unique_ptr<Autotuner>(new Autotuner(std::move(state)));
}

bool Autotuner::tuning() const { return state_->session != nullptr; }
const std::optional<AutotuneChoice>& Autotuner::choice() const { return state_->choice; }

Status Autotuner::afterStep(double seconds, int64_t step) {
  State& s = *state_;
  if (!s.session) return Status::Ok();
  if (s.first_step < 0) s.first_step = step;
  autotune::TuningSession& session = *s.session;
  std::optional<autotune::Measured> sample;
  if (s.rank() == 0) sample = session.record(seconds);
  if (++s.steps_in_sample < session.stepsPerSample()) return Status::Ok();
  s.steps_in_sample = 0;

  // Rank 0 decided; every rank learns the next setting (or that the search ended).
  std::array<float, 3> mine = {0, 0, 0};
  if (s.rank() == 0) {
    const autotune::Setting next = session.current();
    mine = {session.done() ? 2.0f : 1.0f,
            static_cast<float>(*session.valueOf(next, autotune::kBucketCapKnob)),
            static_cast<float>(*session.valueOf(next, autotune::kFirstBucketCapKnob))};
  }
  RM_ASSIGN_OR_RETURN(const auto agreed,
                      s.fromRankZero(mine, "deciding after step " + std::to_string(step)));
  if (s.rank() == 0 && sample) {
    const autotune::CoordinateSearch& search = session.search();
    const size_t n = search.samples().size();
    if (s.metrics) {
      s.metrics->autotune_samples->Increment();
      s.metrics->autotune_sample_seconds->Set(sample->seconds);
    }
    RM_LOG(INFO, STEP) << "autotune sample " << n << " at step " << step << ": "
                       << session.describe(sample->setting) << " median step "
                       << milliseconds(sample->seconds) << " (best "
                       << session.describe(search.best()) << ", "
                       << milliseconds(search.bestSeconds()) << ")";
    if (s.csv.is_open()) {
      s.csv << n << "," << step << ","
            << *session.valueOf(sample->setting, autotune::kBucketCapKnob) << ","
            << *session.valueOf(sample->setting, autotune::kFirstBucketCapKnob) << ","
            << sample->seconds << "," << (sample->setting == search.best() ? 1 : 0) << "\n";
      s.csv.flush();
      if (!s.csv) return core::errnoError("autotune: writing " + s.csv_path, errno);
    }
  }
  // Every rank builds the setting rank 0 named, from its knob values.
  autotune::Setting next = s.applied;
  const std::vector<autotune::Knob>& knobs = session.search().knobs();
  for (size_t k = 0; k < knobs.size(); ++k) {
    const auto& values = knobs[k].values;
    const float want = agreed[k + 1];
    for (size_t i = 0; i < values.size(); ++i) {
      if (static_cast<float>(values[i]) == want) next[k] = i;
    }
  }
  RM_RETURN_IF_ERROR_CTX(s.applySetting(next), "rank " + std::to_string(s.rank()) +
                                                   ": autotune after step " + std::to_string(step));
  if (agreed[0] < 1.5f) return Status::Ok();

  // The search ended: train on the best from here, and say so.
  AutotuneChoice choice;
  choice.bucket_cap_mb = *session.valueOf(next, autotune::kBucketCapKnob);
  choice.first_bucket_cap_mb = *session.valueOf(next, autotune::kFirstBucketCapKnob);
  choice.step = step;
  if (s.rank() == 0) {
    const autotune::CoordinateSearch& search = session.search();
    choice.samples = static_cast<int>(search.samples().size());
    choice.default_seconds = search.samples().empty() ? 0 : search.samples().front().seconds;
    choice.best_seconds = search.bestSeconds();
    const double change =
        choice.default_seconds > 0 ? 100 * (choice.best_seconds / choice.default_seconds - 1) : 0;
    char delta[32];
    std::snprintf(delta, sizeof delta, "%+.1f%%", change);
    RM_LOG(INFO, STEP) << "autotune chose " << session.describe(next) << " after " << choice.samples
                       << " samples (steps " << s.first_step << "-" << step << "): median step "
                       << milliseconds(choice.best_seconds) << " against "
                       << milliseconds(choice.default_seconds) << " under the configured caps ("
                       << delta << ")";
    if (!s.choice_path.empty()) RM_RETURN_IF_ERROR(writeChoice(s.choice_path, choice));
  }
  s.choice = choice;
  s.session.reset();
  if (s.csv.is_open()) s.csv.close();
  return Status::Ok();
}

}  // namespace ringmaster::trainer
