#pragma once
// The processes of native mode, one per local rank: each gets its place in the world as the rank
// environment contract spells it (ringmaster/contract/rank_environment.h), plus, on GPU pods,
// CUDA_VISIBLE_DEVICES=<local rank>. Everything else (POD_IP, RINGMASTER_BACKEND, PATH...)
// they inherit from the launcher's environment.
//
// Thread-safety: a pure function.

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/supervisor.h"
#include "ringmaster/contract/pod_environment.h"

namespace ringmaster::launcher {

// One ProcessSpec per local rank of `pod`, each running `argv`, heartbeating every
// `heartbeat_ms` into the launcher's store; `gpus`: one GPU each.
std::vector<ProcessSpec> rankProcesses(const contract::PodEnvironment& pod,
                                       const std::vector<std::string>& argv, int64_t heartbeat_ms,
                                       bool gpus);

}  // namespace ringmaster::launcher
