#pragma once
// Test helpers: run N ranks as threads, and build the N communicators of a backend that way.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm::testing {

// Runs fn(rank) for rank in [0, n) on n threads and joins them all.
inline void runRanks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

// Backends as the tests name them: "inproc", "gloo", "tcp", "shm", and "shm-tiny" (shm with 4 KiB
// slots and no single-synchronization path, so that small inputs take the chunked
// reduce-scatter path through many pipeline steps, and 4 KiB point-to-point rings, so that
// messages wrap and are handed over in pieces). Both have point-to-point rings; "shm-no-rings"
// has none. "nccl-model" (makeCommunicators only): NCCL's point-to-point rules on host memory
// (nccl_model.h), whose groups give up after `timeout` as a deadlock.
std::vector<std::string> allBackends();

// Builds one communicator per rank, each created on its own thread (creation is collective).
// Fails the current test (and returns an empty vector) if any rank fails.
std::vector<std::unique_ptr<Communicator>> makeCommunicators(
    const std::string& backend, int n,
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Like makeCommunicators, but returns every rank's result, over the given store.
std::vector<core::Result<std::unique_ptr<Communicator>>> tryMakeCommunicators(
    const std::string& backend, int n, rendezvous::Store* store, std::chrono::milliseconds timeout,
    const std::vector<int>& ranks);

}  // namespace ringmaster::trainer::comm::testing
