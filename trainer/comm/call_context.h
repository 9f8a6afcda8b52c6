#pragma once
// How every backend names a collective call in its errors, so messages read the same across
// backends: "rank 1: allreduceSum 'bucket 3' (4194304 bytes): <what went wrong>".
//
// Thread-safety: pure functions. Failure: none.

#include <cstddef>
#include <string>
#include <string_view>

namespace ringmaster::trainer::comm {

// "allreduceSum 'bucket 3' (4194304 bytes)"; the tag part is left out when the tag is empty.
inline std::string describeCall(std::string_view call, std::string_view tag, size_t bytes) {
  std::string out(call);
  if (!tag.empty()) out.append(" '").append(tag).append("'");
  out.append(" (").append(std::to_string(bytes)).append(" bytes)");
  return out;
}

// "rank 1: allreduceSum 'bucket 3' (4194304 bytes)"
inline std::string describeRankCall(int rank, std::string_view call, std::string_view tag,
                                    size_t bytes) {
  return "rank " + std::to_string(rank) + ": " + describeCall(call, tag, bytes);
}

}  // namespace ringmaster::trainer::comm
