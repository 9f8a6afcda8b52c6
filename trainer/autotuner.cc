#include "trainer/autotuner.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "ringmaster/core/log.h"
#include "trainer/autotune/tuning_session.h"
#include "trainer/model/blas_kernels.h"

namespace ringmaster::trainer {

using core::Result;
using core::Status;

namespace {

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  return text;
}

// A knob over the list the spec gives, starting at the run's `given` value.
template <class T>
autotune::Knob listedKnob(const std::string& name, const std::vector<T>& list, double given) {
  return autotune::knobOver(name, std::vector<double>(list.begin(), list.end()), given);
}

// The BLAS threads over the spec's list, or 1 doubling up to `cores` (one value, nothing to
// search, when the process has one core or it is unknown: 0).
autotune::Knob blasThreadsKnob(const contract::TrainerSettings& settings, int cores) {
  const auto given = static_cast<int32_t>(settings.blas_threads);
  if (settings.autotune.blas_threads.empty()) return autotune::blasThreadsKnob(cores, given);
  return listedKnob(autotune::kBlasThreadsKnob, settings.autotune.blas_threads, given);
}

// The fewest cores any rank's BLAS may use (each passes its own), so that every rank searches
// the same BLAS threads. Every rank calls it.
Result<int> fewestBlasCores(comm::Communicator& comm, int mine) {
  std::vector<float> cores(static_cast<size_t>(comm.size()), 0.0f);
  cores[static_cast<size_t>(comm.rank())] = static_cast<float>(mine);
  comm::AllreduceOptions options;
  options.tag = "autotune cores";
  RM_RETURN_IF_ERROR_CTX(comm.allreduceSum(cores.data(), cores.size(), options),
                         "rank " + std::to_string(comm.rank()) + ": autotune, gathering cores");
  return static_cast<int>(*std::min_element(cores.begin(), cores.end()));
}

// The keys of the choice file beside the knobs'.
constexpr char kSamplesKey[] = "samples";
constexpr char kDefaultSecondsKey[] = "defaultStepSeconds";
constexpr char kBestSecondsKey[] = "bestStepSeconds";
constexpr char kStepKey[] = "step";

// The choice a checkpoint directory holds for these knobs, if any.
std::optional<AutotuneChoice> readChoice(const std::string& path,
                                         const std::vector<autotune::Knob>& knobs) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  AutotuneChoice choice;
  for (const autotune::Knob& knob : knobs) {
    if (j.is_discarded() || !j.contains(knob.name) || !j[knob.name].is_number() ||
        !(j[knob.name].get<double>() > 0)) {
      RM_LOG(WARN, STEP) << "autotune: " << path << " holds no choice of " << knob.name
                         << " (an earlier run tuned another engine, or not autotune wrote it); "
                            "tuning again";
      return std::nullopt;
    }
    choice.values[knob.name] = j[knob.name].get<double>();
  }
  choice.samples = j.value(kSamplesKey, 0);
  choice.default_seconds = j.value(kDefaultSecondsKey, 0.0);
  choice.best_seconds = j.value(kBestSecondsKey, 0.0);
  choice.step = j.value(kStepKey, int64_t{0});
  return choice;
}

Status writeChoice(const std::string& path, const AutotuneChoice& c) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  nlohmann::json j = {{kSamplesKey, c.samples},
                      {kDefaultSecondsKey, c.default_seconds},
                      {kBestSecondsKey, c.best_seconds},
                      {kStepKey, c.step}};
  for (const auto& [knob, value] : c.values) j[knob] = value;
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

std::vector<autotune::Knob> bucketSpace(const contract::TrainerSettings& settings,
                                        size_t model_bytes) {
  const contract::TrainerSettings::Autotune& a = settings.autotune;
  std::vector<autotune::Knob> knobs =
      autotune::bucketKnobs(model_bytes, settings.first_bucket_cap_mb, settings.bucket_cap_mb);
  if (!a.bucket_caps.empty()) {
    knobs[0] = listedKnob(autotune::kBucketCapKnob, a.bucket_caps, settings.bucket_cap_mb);
  }
  if (!a.first_bucket_caps.empty()) {
    knobs[1] = listedKnob(autotune::kFirstBucketCapKnob, a.first_bucket_caps,
                          settings.first_bucket_cap_mb);
  }
  return knobs;
}

std::vector<autotune::Knob> microBatchSpace(const contract::TrainerSettings& settings) {
  const int32_t given = settings.pipeline.micro_batches;
  if (settings.autotune.micro_batches.empty()) {
    return {autotune::microBatchKnob(settings.batch_size, given)};
  }
  return {listedKnob(autotune::kMicroBatchesKnob, settings.autotune.micro_batches, given)};
}

std::vector<autotune::Knob> transportSpace(const contract::TrainerSettings& settings,
                                           const comm::Communicator& comm) {
  const std::optional<size_t> doubling = comm.doublingMaxBytes();
  const std::vector<double>& space = settings.autotune.tcp_doubling_max_kb;
  if (!doubling) {
    if (!space.empty() && comm.rank() == 0) {
      RM_LOG(INFO, STEP) << "autotune: the " << comm.backend()
                         << " backend has no recursive-doubling threshold; "
                            "autotune.tcpDoublingMaxKB is not searched";
    }
    return {};
  }
  const double now = static_cast<double>(*doubling) / 1024;
  if (space.empty()) return {autotune::tcpDoublingKnob(now)};
  return {listedKnob(autotune::kTcpDoublingKnob, space, now)};
}

struct Autotuner::State {
  State(comm::Communicator& c, std::vector<autotune::Knob> k, Apply a, TrainerMetrics* m)
      : comm(c), knobs(std::move(k)), apply(std::move(a)), metrics(m) {}

  comm::Communicator& comm;
  const std::vector<autotune::Knob> knobs;
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

  AutotuneValues valuesOf(const autotune::Setting& setting) const {
    AutotuneValues values;
    for (size_t k = 0; k < knobs.size(); ++k) values[knobs[k].name] = knobs[k].values[setting[k]];
    return values;
  }
  // The setting of these values; a value off a knob's grid leaves that knob where `from` has it.
  autotune::Setting settingOf(const std::vector<float>& values, autotune::Setting from) const {
    for (size_t k = 0; k < knobs.size(); ++k) {
      for (size_t i = 0; i < knobs[k].values.size(); ++i) {
        if (static_cast<float>(knobs[k].values[i]) == values[k]) from[k] = i;
      }
    }
    return from;
  }

  // Every rank: rank 0's [flag, value per knob], through one allreduce that only rank 0 fills.
  Result<std::vector<float>> fromRankZero(std::vector<float> mine, const std::string& what) {
    if (rank() != 0) std::fill(mine.begin(), mine.end(), 0.0f);
    comm::AllreduceOptions options;
    options.tag = "autotune";
    RM_RETURN_IF_ERROR_CTX(comm.allreduceSum(mine.data(), mine.size(), options),
                           "rank " + std::to_string(rank()) + ": autotune " + what);
    return mine;
  }
  // [flag, the setting's values]: what rank 0 sends.
  std::vector<float> message(float flag, const autotune::Setting& setting) const {
    std::vector<float> m = {flag};
    for (size_t k = 0; k < knobs.size(); ++k) {
      m.push_back(static_cast<float>(knobs[k].values[setting[k]]));
    }
    return m;
  }

  // The values training runs under, in the gauges.
  void show(const AutotuneValues& values) const {
    if (metrics == nullptr || metrics->autotune_setting == nullptr) return;
    for (const auto& [knob, value] : values)
      metrics->autotune_setting->Add({{"knob", knob}}).Set(value);
  }
  // The BLAS threads are the process's: set here; the engine's own knobs go to `apply`.
  Status applySetting(const autotune::Setting& setting) {
    if (setting == applied) return Status::Ok();
    const AutotuneValues values = valuesOf(setting);
    AutotuneValues engine = values;
    if (const auto threads = engine.find(autotune::kBlasThreadsKnob); threads != engine.end()) {
      model::setBlasThreads(static_cast<int>(threads->second));
      engine.erase(threads);
    }
    if (!engine.empty()) RM_RETURN_IF_ERROR(apply(engine));
    show(values);
    applied = setting;
    return Status::Ok();
  }
};

Autotuner::Autotuner(std::unique_ptr<State> state) : state_(std::move(state)) {}
Autotuner::~Autotuner() = default;

Result<std::unique_ptr<Autotuner>> Autotuner::start(const contract::TrainerSettings& settings,
                                                    comm::Communicator& comm,
                                                    std::vector<autotune::Knob> knobs,
                                                    int blas_cores, Apply apply,
                                                    TrainerMetrics* metrics) {
  const contract::TrainerSettings::Autotune& a = settings.autotune;
  RM_ASSIGN_OR_RETURN(const int cores, fewestBlasCores(comm, blas_cores));
  knobs.push_back(blasThreadsKnob(settings, cores));
  std::string fixed;  // the knobs of one value, for the log
  for (auto k = knobs.begin(); k != knobs.end();) {
    if (k->values.size() > 1) {
      ++k;
      continue;
    }
    std::ostringstream text;
    text << (fixed.empty() ? "" : ", ") << k->name << "=" << k->values.front();
    fixed += text.str();
    k = knobs.erase(k);
  }
  auto state = std::make_unique<State>(comm, std::move(knobs), std::move(apply), metrics);
  State& s = *state;
  if (s.knobs.empty()) {
    if (s.rank() == 0) {
      RM_LOG(INFO, STEP) << "autotune: nothing to tune here (every knob has one value: "
                         << (fixed.empty() ? "none" : fixed) << ")";
    }
    return std::unique_ptr<Autotuner>(new Autotuner(std::move(state)));
  }
  if (s.rank() == 0 && !fixed.empty()) {
    RM_LOG(INFO, STEP) << "autotune: leaves " << fixed << " as it is (one value here)";
  }
  if (!settings.checkpoint.path.empty()) {
    s.choice_path =
        (std::filesystem::path(settings.checkpoint.path) / kAutotuneChoiceFile).string();
  }
  autotune::SessionOptions options;
  options.warmup_steps = a.warmup_steps;
  options.measure_steps = a.measure_steps;
  options.search.max_samples = a.max_samples;
  s.session = std::make_unique<autotune::TuningSession>(s.knobs, options);
  s.applied = s.session->current();  // the configured setting, which the engine starts with
  s.show(s.valuesOf(s.applied));

  // A choice the checkpoint directory holds: rank 0 reads it, every rank trains on it.
  std::optional<AutotuneChoice> saved;
  if (s.rank() == 0 && !s.choice_path.empty() && !a.retune) {
    saved = readChoice(s.choice_path, s.knobs);
  }
  if (!s.choice_path.empty()) {
    autotune::Setting setting = s.applied;
    if (saved) {
      // A saved value off this run's grid (its space changed) is not taken for a neighbour.
      for (size_t k = 0; k < s.knobs.size() && saved; ++k) {
        const std::vector<double>& values = s.knobs[k].values;
        const auto at = std::find(values.begin(), values.end(), saved->value(s.knobs[k].name));
        if (at == values.end()) {
          saved.reset();
        } else {
          setting[k] = static_cast<size_t>(at - values.begin());
        }
      }
      if (!saved) {
        RM_LOG(WARN, STEP) << "autotune: the choice in " << s.choice_path
                           << " is outside this run's space; tuning again";
      }
    }
    RM_ASSIGN_OR_RETURN(
        const std::vector<float> agreed,
        s.fromRankZero(s.message(saved ? 1.0f : 0.0f, setting), "reading the checkpoint's choice"));
    if (agreed[0] > 0) {
      const autotune::Setting chosen =
          s.settingOf(std::vector<float>(agreed.begin() + 1, agreed.end()), s.applied);
      RM_RETURN_IF_ERROR(s.applySetting(chosen));
      AutotuneChoice choice = saved.value_or(AutotuneChoice{});
      choice.values = s.valuesOf(chosen);
      choice.from_checkpoint = true;
      s.choice = choice;
      if (s.rank() == 0) {
        RM_LOG(INFO, STEP) << "autotune: training on the choice in " << s.choice_path << " ("
                           << s.session->describe(chosen)
                           << "), not tuning again; autotune.retune: true tunes again";
      }
      s.session.reset();
      return std::unique_ptr<Autotuner>(new Autotuner(std::move(state)));
    }
  }
  if (s.rank() == 0) {
    if (!a.log.empty()) {
      s.csv_path = a.log;
      s.csv.open(a.log, std::ios::trunc);
      if (!s.csv) return core::errnoError("autotune: log " + a.log, errno);
      s.csv << "sample,step";
      for (const autotune::Knob& knob : s.knobs) s.csv << "," << knob.name;
      s.csv << ",median_step_seconds,best\n";
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

  // Rank 0 decided; every rank learns the next setting (or that the search ended: flag 2).
  RM_ASSIGN_OR_RETURN(const std::vector<float> agreed,
                      s.fromRankZero(s.message(session.done() ? 2.0f : 1.0f, session.current()),
                                     "deciding after step " + std::to_string(step)));
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
      s.csv << n << "," << step;
      for (const auto& knob : s.knobs) s.csv << "," << *session.valueOf(sample->setting, knob.name);
      s.csv << "," << sample->seconds << "," << (sample->setting == search.best() ? 1 : 0) << "\n";
      s.csv.flush();
      if (!s.csv) return core::errnoError("autotune: writing " + s.csv_path, errno);
    }
  }
  // Every rank builds the setting rank 0 named, from its knob values.
  const autotune::Setting next =
      s.settingOf(std::vector<float>(agreed.begin() + 1, agreed.end()), s.applied);
  RM_RETURN_IF_ERROR_CTX(s.applySetting(next), "rank " + std::to_string(s.rank()) +
                                                   ": autotune after step " + std::to_string(step));
  if (agreed[0] < 1.5f) return Status::Ok();

  // The search ended: train on the best from here, and say so.
  AutotuneChoice choice;
  choice.values = s.valuesOf(next);
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
                       << milliseconds(choice.default_seconds) << " under the configured setting ("
                       << delta << ")";
    if (!s.choice_path.empty()) RM_RETURN_IF_ERROR(writeChoice(s.choice_path, choice));
  }
  s.choice = choice;
  s.session.reset();
  if (s.csv.is_open()) s.csv.close();
  return Status::Ok();
}

}  // namespace ringmaster::trainer
