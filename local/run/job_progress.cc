#include "local/run/job_progress.h"

#include <cstdio>
#include <iterator>

#include "ringmaster/kube/mounts.h"

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

// Where `path` (in the worker container) lies on a claim: the claim's name and the path inside
// it, through the volume mounted deepest above `path`; nullopt when that is no claim.
struct ClaimPath {
  std::string claim;
  std::filesystem::path inside;
};
std::optional<ClaimPath> claimHolding(const kube::TrainingJobSpec& spec, const std::string& path) {
  const std::optional<kube::MountHolding> held = kube::mountHolding(spec.volume_mounts, path);
  if (!held) return std::nullopt;
  for (const auto& v : spec.volumes) {
    if (v.name != held->mount->name || !v.persistent_volume_claim) continue;
    std::filesystem::path inside = held->mount->sub_path.value_or("");
    if (held->rest != ".") inside /= held->rest;
    return ClaimPath{v.persistent_volume_claim->claim_name, inside};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> resumeNote(const kube::TrainingJob& job,
                                      const std::filesystem::path& claims_dir) {
  if (!job.status.progress || !job.status.progress->resumed_from_step) return std::nullopt;
  const kube::TrainingProgress& p = *job.status.progress;
  const int64_t from = *p.resumed_from_step;
  std::string out = "  resumed from a checkpoint at step ";
  out.append(std::to_string(from));
  if (p.step != from) return out;
  out.append(
      ", already the end of training: this run trained nothing, and the accuracy is the "
      "restored model's");
  const auto& trainer = job.spec.trainer;
  const std::string path =
      trainer && trainer->checkpoint ? trainer->checkpoint->path.value_or("") : "";
  if (path.empty()) return out;
  out.append("\n  To train from scratch, remove the checkpoints in ").append(path);
  if (const std::optional<ClaimPath> on = claimHolding(job.spec, path)) {
    const std::string ns =
        job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name;
    out.append(" (claim ").append(on->claim).append(", here ");
    std::filesystem::path dir = claims_dir / ns / on->claim;
    if (!on->inside.empty()) dir /= on->inside;
    out.append(dir.lexically_normal().string()).append(")");
  }
  return out;
}

// Numbers are appended, not `"text" + std::to_string(...)`: GCC 12 flags that with a false
// -Wrestrict in optimized builds.
std::string formatProgress(const kube::TrainingJob& job) {
  const auto& s = job.status;
  std::string out = s.phase ? *s.phase : "Pending";
  // Why it is not running (yet): Unschedulable, SchedulingGated (a queue holds it), ... A
  // finished job's reason is the final line's own.
  if (s.reason && !s.reason->empty() && (out == "Pending" || out == "Restarting")) {
    out += " (" + *s.reason + ")";
  }
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
