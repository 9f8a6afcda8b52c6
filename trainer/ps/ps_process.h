#pragma once
// The two halves of ringmaster-trainer's parameter-server mode (--ps-servers N), one per
// process: a server rank holds its share of the model's parameters behind a PsTcpServer until
// every worker has gone; a worker rank trains its data shard against all servers. They meet
// through the rendezvous store: each server publishes "host:port" under
// serverAddressKey(attemptPrefix, server) and each worker waits for all of them. Rank 0 (always
// worker 0) hosts the store itself unless the launcher does (RINGMASTER_USE_AGENT_STORE), as the
// data-parallel trainer's rank 0 does.
//
// Every rank builds the model from the same seed and plans the shards from the same tensor list,
// so servers start from exactly the data-parallel trainer's initial parameters and agree with
// the workers on who holds what without talking about it. Workers train on the data-parallel
// sampler's shards (worker w of W sees rank w of W's batches); the servers apply the settings'
// optimizer with its learning-rate schedule.
//
// Thread-safety: each call runs one process's part on the calling thread. Failure: errors name
// the rank's role and number (and the server for a connection). Both return kCancelled once
// `stop` is requested (a worker leaves its servers first); a worker's lost server or a stalled
// step comes back kUnavailable / kTimeout (retryable).

#include <chrono>

#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/metrics/metrics.h"
#include "trainer/config.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/ps/ps_role.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer::ps {

struct PsRun {
  contract::TrainerSettings settings;  // defaulted and checked (resolveTrainerConfig)
  contract::RankEnvironment world;
  PsPlacement placement;  // placeRank(world.rank, ...)
  const data::Dataset* train = nullptr;
  const data::Dataset* test = nullptr;
  const core::StopSource* stop = nullptr;  // optional
  std::chrono::seconds rendezvous_timeout{300};
  // Optional: the rank's /metrics registry, for the trainer's series (a worker's steps, samples,
  // loss) and the parameter-server ones (ps_metrics.h).
  metrics::Registry* registry = nullptr;

  // An elastic job's (world.worker_pods set): its workers at the start, the worker pods then
  // times their ranks; 0 in a fixed world. Worker ids from there up to placement.workers join
  // later, as the job scales up, and any but 0 may leave for good as it scales down. Such a run
  // is epochs x the data set's batches pushes, whoever pushes them, and each worker draws its
  // batches from the whole data set in an order of its own (a shard would leave the data of
  // worker slots that are empty unseen); loose consistency only.
  int elasticStartWorkers() const { return world.worker_pods * world.local_world_size; }
};

// A server rank: serves until every worker has left (or was dropped); Ok then.
core::Status serveParameters(const PsRun& run);

// A worker rank: trains epochs x steps per epoch (or max_steps) and leaves. Worker 0 then has
// the final parameters' test accuracy in the summary; the others report their training only.
core::Result<TrainSummary> trainAgainstServers(const PsRun& run);

}  // namespace ringmaster::trainer::ps
