#pragma once
// barrier(): blocks until `world_size` ranks have called it with the same `name`.
//
// Protocol over any Store: each rank does add(name, 1); the rank that brings the count to
// world_size sets "<name>/done"; every rank waits for "<name>/done". A name is single-use:
// reuse one per attempt/step only under a fresh PrefixStore or a fresh name ("epoch-3").
//
// Thread-safety: as the Store. Failure: kTimeout if "<name>/done" does not appear within
// `timeout`, saying how many of world_size ranks arrived; kInvalidArgument for a bad
// rank/world_size or more arrivals than world_size (a reused name); store errors pass through
// with the barrier's name and rank as context.

#include <chrono>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {

core::Status barrier(Store& store, const std::string& name, int rank, int world_size,
                     std::chrono::milliseconds timeout);

}  // namespace ringmaster::rendezvous
