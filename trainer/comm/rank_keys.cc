#include "trainer/comm/rank_keys.h"

#include <vector>

namespace ringmaster::trainer::comm {

core::Status waitForRankKeys(rendezvous::Store& store, const std::string& prefix, int size,
                             std::chrono::milliseconds timeout, const std::string& verb) {
  std::vector<std::string> keys;
  keys.reserve(size);
  for (int q = 0; q < size; ++q) keys.push_back(rankKey(prefix, q));
  core::Status s = store.wait(keys, timeout);
  if (s.ok() || s.code() != core::Code::kTimeout) return s;
  // Which ones? A zero-timeout get answers at once.
  std::string missing;
  for (int q = 0; q < size; ++q) {
    if (store.get(keys[q], std::chrono::milliseconds(0)).ok()) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(q);
  }
  if (missing.empty()) return s;
  return core::timeoutError("rank(s) " + missing + " did not " + verb + " within " +
                            std::to_string(timeout.count()) + " ms");
}

}  // namespace ringmaster::trainer::comm
