#pragma once
// How a pipeline stage's activations and gradients travel to its neighbours, as the stage
// executor sees it: start a send, receive, and flush before a pass that receives nothing.
// makeStageLink picks the way from the communicator:
//   - host memory (shm, tcp, gloo, mpi, inproc): the communicator's own point-to-point. A started
//     send moves on by itself while the stage receives, so flush() has nothing to do.
//   - device memory (nccl, DeviceCollectives): NCCL's send and receive each finish only once the
//     peer has posted its side, and a stream runs its operations one after the other. Two
//     neighbours that each send before they receive (1F1B's steady state: activations forward,
//     gradients back, at the same moment) would wait for each other forever. So a send is held
//     back and enqueued together with the stage's next receive as one group
//     (DeviceCollectives::sendRecvAsync), or on its own by flush() when the next pass receives
//     nothing, so that a neighbour never waits on a pass it does not need.
//     Everything is enqueued on the stage's stream: the host never waits, and the stream keeps
//     a buffer from being written again before the send enqueued ahead of the write has read
//     it. The held send's wait() only enqueues it if it is still held.
//
// Ownership: borrows the communicator (and the stream). Thread-safety: one thread, the stage's.
// Failure: the communicator's error, with the message's tag ("activations of micro-batch 3,
// step 7") in its text; a device link's asynchronous errors come from asyncError().

#include <cstddef>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::pipeline {

class StageLink {
 public:
  virtual ~StageLink() = default;
  // Hands `bytes` at `data` to rank `peer`; the buffer must stay unchanged until the returned
  // send's wait() (on a device link: until the stream has run past the next pass).
  virtual core::Result<std::unique_ptr<comm::PendingSend>> startSend(
      const void* data, size_t bytes, int peer, const comm::PointToPointOptions& opts) = 0;
  // Receives the next message from `peer`, exactly `bytes` long, into `data` (on a device
  // link: enqueued; it has arrived once the stream reaches the next pass).
  virtual core::Status recv(void* data, size_t bytes, int peer,
                            const comm::PointToPointOptions& opts) = 0;
  // Before a pass that receives nothing: every send still held back goes out.
  virtual core::Status flush() = 0;
  // A send that the caller waits for at once.
  core::Status send(const void* data, size_t bytes, int peer,
                    const comm::PointToPointOptions& opts);
};

// The link for `comm`: grouped on device memory when it has DeviceCollectives (enqueued on
// `stream`, a cudaStream_t), its host point-to-point otherwise.
std::unique_ptr<StageLink> makeStageLink(comm::Communicator& comm, void* stream);

}  // namespace ringmaster::trainer::pipeline
