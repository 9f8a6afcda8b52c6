#pragma once
// Where a population-based training population meets: a directory every member mounts. After
// each interval a member writes its checkpoint under checkpoints/<member>/ and then its report,
// round-<r>/<member>.json ({member, round, step, objective, parameters, checkpoint}), by a
// rename, so a report that exists is whole and its checkpoint is already there. gather() reads
// a round's reports, waiting for the members that have not written theirs yet.
//
// Own code rather than a store or a queue: the members share nothing else, and a volume is what
// every cluster (and `ringmaster local`) can give them.
//
// Thread-safety: one PopulationDirectory per member; members are processes (or, in tests,
// threads) sharing the directory. Failure: I/O errors name the file; a report that does not
// parse names the file and is skipped as if absent (its member sits the round out).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/search/space.h"

namespace ringmaster::trainer::pbt {

struct MemberReport {
  std::string member;
  int64_t round = 0;
  int64_t step = 0;
  double objective = 0;
  search::Assignment parameters;  // the values it trained this interval with
  std::string checkpoint;         // the file an exploiting member loads
  bool operator==(const MemberReport&) const = default;
};

class PopulationDirectory {
 public:
  PopulationDirectory(std::string directory, std::vector<std::string> population);

  // checkpoints/<member>: where `member` writes its checkpoints.
  std::string checkpointDir(const std::string& member) const;
  // Writes `report` as round-<round>/<member>.json (atomically).
  core::Status publish(const MemberReport& report) const;
  // The reports of `round`, waiting up to `wait` (or until `stop`) for every member's; those
  // missing then are left out. In population order.
  std::vector<MemberReport> gather(int64_t round, std::chrono::milliseconds wait,
                                   const core::StopSource* stop) const;
  // `member`'s report of `round` when it wrote one (that parses); no waiting.
  std::optional<MemberReport> report(int64_t round, const std::string& member) const;

 private:
  enum class Found { kAbsent, kReport, kUnreadable };
  Found read(int64_t round, const std::string& member, MemberReport* report) const;

  std::string directory_;
  std::vector<std::string> population_;
};

}  // namespace ringmaster::trainer::pbt
