#include "operator/progress.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "ringmaster/contract/trainer_summary.h"
#include "ringmaster/core/json.h"
#include "ringmaster/http/get.h"
#include "ringmaster/kube/termination_message.h"

namespace ringmaster::op {
namespace {

// "name{labels} value [timestamp]" -> name and value; false for comments and junk.
bool parseSample(std::string_view line, std::string_view& name, double& value) {
  if (line.empty() || line[0] == '#') return false;
  size_t end = line.find_first_of("{ ");
  if (end == std::string_view::npos) return false;
  name = line.substr(0, end);
  size_t pos = end;
  if (line[pos] == '{') {
    size_t close = line.find('}', pos);
    if (close == std::string_view::npos) return false;
    pos = close + 1;
  }
  while (pos < line.size() && line[pos] == ' ') ++pos;
  std::string number(line.substr(pos, line.find(' ', pos) - pos));
  if (number.empty()) return false;
  char* parse_end = nullptr;
  value = std::strtod(number.c_str(), &parse_end);
  return parse_end != number.c_str() && std::isfinite(value);
}

// Status is for people (`kubectl get tj` prints numbers as stored): 4 significant digits.
double significant(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}

}  // namespace

core::Result<kube::TrainingProgress> parsePrometheusText(std::string_view text) {
  kube::TrainingProgress p;
  bool any = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    std::string_view name;
    double value = 0;
    if (!parseSample(line, name, value)) continue;
    // A gauge the trainer has not set yet reads 0: not a value to show.
    const bool measured = value > 0;
    if (name == "ringmaster_trainer_epoch") {
      if (measured) p.epoch = static_cast<int32_t>(value);
    } else if (name == "ringmaster_trainer_steps_total") {
      p.step = static_cast<int64_t>(value);
    } else if (name == "ringmaster_trainer_loss") {
      if (measured) p.loss = significant(value);
    } else if (name == "ringmaster_trainer_samples_per_second") {
      if (measured) p.samples_per_second = std::round(value);
    } else if (name == "ringmaster_trainer_test_accuracy_ratio") {
      if (measured) p.test_accuracy = significant(value);
    } else if (name == "ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second") {
      // One series per backend; the largest is the one in use.
      if (measured) {
        p.allreduce_bus_bandwidth =
            std::round(std::max(p.allreduce_bus_bandwidth.value_or(0.0), value));
      }
    } else {
      continue;
    }
    any = true;
  }
  if (!any) return core::notFound("no ringmaster_trainer_* metrics in the answer");
  return p;
}

core::Result<kube::TrainingProgress> parseTrainerSummary(std::string_view text) {
  if (text.size() > kube::kMaxTerminationMessageBytes) {
    return core::invalidArgument("summary of " + std::to_string(text.size()) +
                                 " bytes, over the termination message's " +
                                 std::to_string(kube::kMaxTerminationMessageBytes));
  }
  auto parsed = core::parseJson(text);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return core::invalidArgument("not a JSON object");
  kube::TrainingProgress p;
  bool any = false;
  core::Status bad;
  // obj[key] when it is there; a non-number is remembered in `bad`, naming `where`.
  auto number = [&](const nlohmann::json& obj, const std::string& key,
                    const std::string& where) -> std::optional<double> {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      if (bad.ok()) bad = core::invalidArgument(where + ": expected a number, got " + it->dump());
      return std::nullopt;
    }
    any = true;
    return it->get<double>();
  };
  namespace key = contract::trainer_summary;
  if (auto v = number(j, key::kEpochs, key::kEpochs); v && *v >= 0 && *v < 1e9) {
    p.epoch = static_cast<int32_t>(*v);
  }
  if (auto v = number(j, key::kSteps, key::kSteps); v && *v >= 0 && *v < 9e18) {
    p.step = static_cast<int64_t>(*v);
  }
  if (auto v = number(j, key::kFinalTrainLoss, key::kFinalTrainLoss)) p.loss = significant(*v);
  if (auto v = number(j, key::kSamplesPerSecond, key::kSamplesPerSecond)) {
    p.samples_per_second = std::round(*v);
  }
  if (auto v = number(j, key::kTestAccuracy, key::kTestAccuracy)) {
    p.test_accuracy = significant(*v);
  }
  // -1 says "not resumed"; it stays absent.
  if (auto v = number(j, key::kResumedFromStep, key::kResumedFromStep); v && *v >= 0 && *v < 9e18) {
    p.resumed_from_step = static_cast<int64_t>(*v);
  }
  if (auto a = j.find(key::kAllreduce); a != j.end() && a->is_object()) {
    if (auto v = number(*a, key::kAllreduceBusBandwidth,
                        std::string(key::kAllreduce) + "." + key::kAllreduceBusBandwidth);
        v && *v > 0) {
      p.allreduce_bus_bandwidth = std::round(*v);
    }
  }
  // A pbt member's outcome: decoded with its type's codec (a bad one is named, not guessed at).
  if (auto pbt = j.find(key::kPbt); pbt != j.end()) {
    core::Result<kube::PbtProgress> decoded = kube::decode<kube::PbtProgress>(*pbt);
    if (decoded.ok()) {
      p.pbt = std::move(decoded).value();
      any = true;
    } else if (bad.ok()) {
      bad = decoded.status().withContext(key::kPbt);
    }
  }
  if (!bad.ok()) return bad;
  if (!any) return core::notFound("no summary field (epochs, steps, finalTrainLoss, ...)");
  return p;
}

kube::TrainingProgress mergeProgress(const std::optional<kube::TrainingProgress>& progress,
                                     const kube::TrainingProgress& final_figures) {
  kube::TrainingProgress out = progress.value_or(kube::TrainingProgress{});
  if (final_figures.epoch) out.epoch = final_figures.epoch;
  if (final_figures.step) out.step = final_figures.step;
  if (final_figures.loss) out.loss = final_figures.loss;
  if (final_figures.samples_per_second) out.samples_per_second = final_figures.samples_per_second;
  if (final_figures.allreduce_bus_bandwidth) {
    out.allreduce_bus_bandwidth = final_figures.allreduce_bus_bandwidth;
  }
  if (final_figures.test_accuracy) out.test_accuracy = final_figures.test_accuracy;
  if (final_figures.resumed_from_step) out.resumed_from_step = final_figures.resumed_from_step;
  if (final_figures.pbt) out.pbt = final_figures.pbt;
  return out;
}

core::Result<kube::TrainingProgress> HttpProgressSource::read(const std::string& host, int port) {
  const std::string target = http::url(host, port, "/metrics");
  http::GetOptions options;
  options.timeout = timeout_;
  options.headers = {"Accept: text/plain"};
  RM_ASSIGN_OR_RETURN(http::Response answer, http::get(target, options));
  if (answer.status != 200) {
    return core::unavailable("GET " + target + ": HTTP " + std::to_string(answer.status));
  }
  if (answer.truncated) {
    return core::unavailable("GET " + target + ": answer over " +
                             std::to_string(options.max_body >> 20) + " MiB");
  }
  core::Result<kube::TrainingProgress> p = parsePrometheusText(answer.body);
  if (!p.ok()) return p.status().withContext("http://" + host + ":" + std::to_string(port));
  return p;
}

}  // namespace ringmaster::op
