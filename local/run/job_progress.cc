#include "local/run/job_progress.h"

#include <cstdio>

namespace ringmaster::local {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

const kube::Condition* findCondition(const kube::TrainingJob& job, const std::string& type) {
  for (const auto& c : job.status.conditions)
    if (c.type == type && c.status == "True") return &c;
  return nullptr;
}

}  // namespace

// Numbers are appended, not `"text" + std::to_string(...)`: GCC 12 flags that with a false
// -Wrestrict in optimized builds.
std::string formatProgress(const kube::TrainingJob& job) {
  const auto& s = job.status;
  std::string out = s.phase ? *s.phase : "Pending";
  if (s.world) out += "  world " + *s.world;
  if (s.progress) {
    const auto& p = *s.progress;
    if (p.epoch) {
      out.append("  epoch ").append(std::to_string(*p.epoch));
      if (job.spec.trainer && job.spec.trainer->epochs)
        out.append("/").append(std::to_string(*job.spec.trainer->epochs));
    }
    if (p.step) out += "  step " + std::to_string(*p.step);
    if (p.loss) out += "  loss " + fixed(*p.loss, 4);
    if (p.samples_per_second) out += "  samples/s " + fixed(*p.samples_per_second, 0);
  }
  if (s.restarts) out += "  restarts " + std::to_string(*s.restarts);
  return out;
}

std::string finishedPhase(const kube::TrainingJob& job) {
  if (findCondition(job, "Succeeded")) return "Succeeded";
  if (findCondition(job, "Failed")) return "Failed";
  return {};
}

std::string finalReason(const kube::TrainingJob& job) {
  if (job.status.conditions.empty()) return {};
  const kube::Condition* c = findCondition(job, "Succeeded");
  if (!c) c = findCondition(job, "Failed");
  if (!c) c = &job.status.conditions.back();
  std::string out = c->type;
  if (c->reason) out += " (" + *c->reason + ")";
  if (c->message) out += ": " + *c->message;
  return out;
}

std::optional<std::string> ProgressReporter::observe(const kube::TrainingJob& job,
                                                     std::chrono::steady_clock::time_point now) {
  const std::string line = formatProgress(job);
  const auto& s = job.status;
  std::string key = s.phase.value_or("") + "|" + s.world.value_or("") + "|" +
                    std::to_string(s.restarts.value_or(0));
  if (s.progress) key.append("|").append(std::to_string(s.progress->epoch.value_or(-1)));
  const bool changed = key != last_key_;
  const bool due = line != last_line_ && now - last_time_ >= every_;
  if (!changed && !due) return std::nullopt;
  last_key_ = key;
  last_line_ = line;
  last_time_ = now;
  return line;
}

}  // namespace ringmaster::local
