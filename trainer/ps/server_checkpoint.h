#pragma once
// Parameter servers' checkpoints: each server writes its snapshots (parameter_server.h) under
// <checkpoint.path>/ps-server-<i>-of-<n>/ in the trainer's checkpoint format, and on start every
// server of an attempt agrees through the rendezvous store on where they all resume: the newest
// step every server holds (the pipeline's stages face the same question; pipeline/resume_plan.h
// answers both), from scratch when none holds one, or over again, with the others' files removed,
// when one server of this run never saved (a run marker drawn by server 0 tells runs apart, and
// no server serves before every directory carries this run's). Workers then find themselves live
// at that step on every server (WELCOME) and resume there: what the run loses is at most the
// steps since the last snapshot.
//
// Thread-safety: one call at a time per server. Failure: the store's errors and timeouts naming
// the key; checkpoint I/O naming the file; kInvalidArgument for a checkpoint of another model,
// shard plan or optimizer, and for directories of different runs.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/ps/parameter_server.h"

namespace ringmaster::trainer::ps {

// "<path>/ps-server-<server>-of-<servers>".
std::string serverCheckpointDir(const std::string& path, int server, int servers);

// What a server of `servers` holding `elements` floats of `model_signature` calls its
// checkpoints, so that one written for another model or shard plan is never loaded.
std::string serverSignature(const std::string& model_signature, int server, int servers,
                            size_t elements);

checkpoint::Checkpoint toCheckpoint(const ServerSnapshot& snapshot, const std::string& signature,
                                    const std::string& optimizer_type);
ServerSnapshot fromCheckpoint(const checkpoint::Checkpoint& checkpoint);

struct ServerCheckpoints {
  std::string path;  // the job's checkpoint.path
  int server = 0;
  int servers = 1;
  std::string signature;       // serverSignature()
  std::string optimizer_type;  // "sgd" | "adam"
  int keep = 3;
  std::string attempt_prefix;  // the store keys' (contract::RankEnvironment::attemptPrefix)
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // for each store wait
};

// Agrees with the attempt's other servers through `store` and returns the snapshot this server
// resumes from (nullopt: step 0). Prepares the directory for this run's snapshots.
core::Result<std::optional<ServerSnapshot>> agreeOnResume(const ServerCheckpoints& where,
                                                          rendezvous::Store& store);

// Writes `snapshot` into the server's directory, keeping where.keep files.
core::Status writeSnapshot(const ServerCheckpoints& where, const ServerSnapshot& snapshot);

}  // namespace ringmaster::trainer::ps
