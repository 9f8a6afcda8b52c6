#pragma once
// The communicators of one rank, as configuration: the world's, from the rank environment (the
// launcher's or mpirun's, contract/rank_environment.h) and the trainer's settings, and the
// groups split off it (a pipeline stage's replicas, a tensor group), which rendezvous through
// the world's store under keys of their own.
//
// Thread-safety: pure functions. Failure: none; makeCommunicator judges the result.

#include <chrono>
#include <string>

#include "ringmaster/contract/rank_environment.h"
#include "trainer/comm/factory.h"
#include "trainer/config.h"

namespace ringmaster::trainer {

// The world's communicator of the rank `world` describes, its gradients on the GPU when `cuda`;
// peers have `rendezvous_timeout` to show up. make_nccl stays unset (the GPU module's).
comm::CommConfig worldCommConfig(const contract::RankEnvironment& world,
                                 const TrainerConfig& config, bool cuda,
                                 std::chrono::seconds rendezvous_timeout);

// The group `name` of `size` ranks, this rank being `rank` of it, over the world's store:
// `world` is worldCommConfig's. Groups only sum (gradients, tensor-parallel parts).
comm::CommConfig groupCommConfig(const comm::CommConfig& world, const std::string& name, int rank,
                                 int size);

}  // namespace ringmaster::trainer
