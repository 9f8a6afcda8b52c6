#pragma once
// The nccl backend: NCCL collectives on GPU memory, for the GPU trainer (trainer/gpu/).
//
// Bootstrap: rank 0 makes the ncclUniqueId and it travels through the rendezvous store
// (rendezvous::broadcastBlob under the communicator's key prefix, so every restart attempt gets
// a fresh id); then ncclCommInitRank on the device the caller made current.
// Gradients: allreduceAverageAsync (ncclAvg) on the caller's stream -- the GPU trainer's
// communication stream, which waits on events that backward records, so buckets overlap the
// rest of backward. Pipeline stages: sendRecvAsync (ncclSend and ncclRecv in one group) on
// the caller's stream. The host-memory Communicator calls (resume header, initial parameters,
// epoch totals) stage through a small device buffer on an internal stream and wait.
// Failure: a CollectiveWatchdog polls ncclCommGetAsyncError and the events watch() records;
// an NCCL error or `collective_timeout` without progress aborts the communicator
// (ncclCommAbort) and asyncError() / every later call returns the error (kUnavailable or
// kTimeout, which the trainer turns into the retryable exit code 142). An init that never
// completes (a peer never joined) exits 142 after the timeout.
//
// Thread-safety: one thread enqueues (the trainer's); the watchdog runs beside it.

#include <chrono>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm {

struct NcclConfig {
  int rank = 0;
  int size = 1;
  rendezvous::Store* store = nullptr;  // not owned; used during create() only
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};             // bootstrap
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};  // watchdog
};

class NcclCommunicator;

// Builds the communicator on the current CUDA device (cudaSetDevice first).
core::Result<std::unique_ptr<Communicator>> makeNcclCommunicator(const NcclConfig& config);

}  // namespace ringmaster::trainer::comm
