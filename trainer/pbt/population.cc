#include "trainer/pbt/population.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::pbt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string roundDir(const std::string& directory, int64_t round) {
  return directory + "/round-" + std::to_string(round);
}

}  // namespace

PopulationDirectory::PopulationDirectory(std::string directory, std::vector<std::string> population)
    : directory_(std::move(directory)), population_(std::move(population)) {}

std::string PopulationDirectory::checkpointDir(const std::string& member) const {
  return directory_ + "/checkpoints/" + member;
}

core::Status PopulationDirectory::publish(const MemberReport& report) const {
  json parameters = json::object();
  for (const auto& [path, value] : report.parameters) parameters[path] = value;
  const json j = {{"member", report.member},  {"round", report.round},
                  {"step", report.step},      {"objective", report.objective},
                  {"parameters", parameters}, {"checkpoint", report.checkpoint}};
  const std::string dir = roundDir(directory_, report.round);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::unavailable("pbt: creating " + dir + ": " + ec.message());
  const std::string path = dir + "/" + report.member + ".json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump();
    if (!out.flush()) return core::unavailable("pbt: writing " + tmp);
  }
  fs::rename(tmp, path, ec);
  if (ec) return core::unavailable("pbt: renaming " + tmp + " to " + path + ": " + ec.message());
  return core::Status::Ok();
}

PopulationDirectory::Found PopulationDirectory::read(int64_t round, const std::string& member,
                                                     MemberReport* report) const {
  const std::string path = roundDir(directory_, round) + "/" + member + ".json";
  std::ifstream in(path);
  if (!in) return Found::kAbsent;
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, false);
  try {
    if (j.is_discarded()) throw json::other_error::create(501, "not JSON", nullptr);
    MemberReport r;
    r.member = j.at("member").get<std::string>();
    r.round = j.at("round").get<int64_t>();
    r.step = j.at("step").get<int64_t>();
    r.objective = j.at("objective").get<double>();
    r.checkpoint = j.at("checkpoint").get<std::string>();
    for (const auto& [path_key, value] : j.at("parameters").items()) {
      r.parameters.emplace_back(path_key, value);
    }
    *report = std::move(r);
    return Found::kReport;
  } catch (const json::exception& e) {
    RM_LOG(WARN, CORE) << "pbt: " << path << " is not a member's report (" << e.what()
                       << "); its member sits round " << round << " out";
    return Found::kUnreadable;
  }
}

std::optional<MemberReport> PopulationDirectory::report(int64_t round,
                                                        const std::string& member) const {
  MemberReport r;
  if (read(round, member, &r) != Found::kReport) return std::nullopt;
  return r;
}

std::vector<MemberReport> PopulationDirectory::gather(int64_t round, std::chrono::milliseconds wait,
                                                      const core::StopSource* stop) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<Found> found(population_.size(), Found::kAbsent);
  std::vector<MemberReport> reports(population_.size());
  for (auto pause = std::chrono::milliseconds(5);;
       pause = std::min(pause * 2, std::chrono::milliseconds(100))) {
    size_t settled = 0;
    for (size_t i = 0; i < population_.size(); ++i) {
      if (found[i] == Found::kAbsent) found[i] = read(round, population_[i], &reports[i]);
      settled += found[i] != Found::kAbsent ? 1 : 0;
    }
    if (settled == population_.size() || std::chrono::steady_clock::now() >= deadline ||
        (stop != nullptr && stop->stopRequested())) {
      break;
    }
    std::this_thread::sleep_for(pause);
  }
  std::vector<MemberReport> out;
  for (size_t i = 0; i < population_.size(); ++i) {
    if (found[i] == Found::kReport) out.push_back(std::move(reports[i]));
  }
  return out;
}

}  // namespace ringmaster::trainer::pbt
