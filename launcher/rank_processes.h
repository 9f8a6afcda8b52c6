#pragma once
// The processes of native mode, one per local rank: each gets its place in the world as the rank
// environment contract spells it (ringmaster/contract/rank_environment.h), plus, on GPU pods,
// CUDA_VISIBLE_DEVICES=<local rank>, and, where the pod has a TF_CONFIG, that cluster with its
// own task index (its global rank; ringmaster/contract/tf_config.h). Everything else (POD_IP,
// RINGMASTER_BACKEND, PATH...) they inherit from the launcher's environment.
//
// A program that is torchrun (torch's elastic agent) starts the pod's ranks itself: the pod then
// runs one process, the agent, with PyTorchJob's PET_ variables (encodeTorchrunAgent), and no
// rank variables, GPU choice or heartbeats of ours.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/supervisor.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/tf_config.h"

namespace ringmaster::launcher {

// Whether `argv` runs torchrun: a program named torchrun, or `python... -m torch.distributed.run`.
bool runsTorchrun(const std::vector<std::string>& argv);

// One ProcessSpec per local rank of `pod` (one in all for torchrun), each running `argv`,
// heartbeating every `heartbeat_ms` into the launcher's store; `gpus`: one GPU each.
std::vector<ProcessSpec> rankProcesses(const contract::PodEnvironment& pod,
                                       const std::vector<std::string>& argv, int64_t heartbeat_ms,
                                       bool gpus,
                                       const std::optional<contract::TfConfig>& tf = std::nullopt);

}  // namespace ringmaster::launcher
