#pragma once
// How large a world may be, once for every component: the operator admits no job above these,
// the launcher refuses a pod environment above them and the trainer a rank environment. One
// bound with one meaning, so that nothing one component accepts is refused by the next.

#include <cstdint>

namespace ringmaster::contract {

// Processes (ranks) of one job's world: replicas x procsPerReplica.
inline constexpr int64_t kMaxWorldSize = 4096;
// Processes in one pod (procsPerReplica, LOCAL_WORLD_SIZE).
inline constexpr int64_t kMaxProcsPerPod = 64;

}  // namespace ringmaster::contract
