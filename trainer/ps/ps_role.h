#pragma once
// Which part a rank plays in a parameter-server run of ringmaster-trainer (--ps-servers N): ranks
// 0..W-N-1 train as workers 0..W-N-1, the last N ranks serve the parameters. Also the
// rendezvous-store key a server publishes its address under, that address's text form, the
// host a server tells its workers to reach it at, and the step a worker starts (or rejoins) at.
//
// Thread-safety: pure functions and value types. Failure: kUsage naming the servers' count (none,
// or no worker left); kInvalidArgument for an address that does not parse, naming the key it was
// read from; kUnavailable for a worker that cannot start at one step on every server.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "trainer/ps/staleness_gate.h"

namespace ringmaster::trainer::ps {

enum class PsRole { kServer, kWorker };

struct PsPlacement {
  PsRole role = PsRole::kWorker;
  int index = 0;    // the server's number, or the worker's id
  int servers = 0;  // in the job
  int workers = 0;  // in the job
  Consistency consistency;

  bool operator==(const PsPlacement&) const = default;
};

// The staleness gate's reading of the contract's consistency.
Consistency consistencyOf(const contract::TrainerSettings::ParameterServers& settings);

// The role of `rank` in a world of `world_size` under `settings`. Requires 0 <= rank <
// world_size (the rank environment checks that). settings.servers must be >= 1 and leave at
// least one worker.
core::Result<PsPlacement> placeRank(int rank, int world_size,
                                    const contract::TrainerSettings::ParameterServers& settings);

// Where a worker starts, from its standing on every server (WELCOME): the step it trains first,
// and the servers it must JOIN at that step first. A first start is live everywhere at the same
// clock (0); a worker process started again after it died is live nowhere and rejoins every
// server at the furthest clock any would join it at, so that no server holds it behind the
// others. kUnavailable (retryable) when it is live somewhere at a clock other than that one.
struct StartPlan {
  int64_t step = 0;
  std::vector<int> join;  // servers, ascending
  bool operator==(const StartPlan&) const = default;
};
core::Result<StartPlan> planStart(const std::vector<WorkerStanding>& standings, int worker);

// "<attempt_prefix>/ps/server/<server>".
std::string serverAddressKey(const std::string& attempt_prefix, int server);
// "<attempt_prefix>/ps/worker/<worker>/ready": set once the worker reached every server.
std::string workerReadyKey(const std::string& attempt_prefix, int worker);

struct HostPort {
  std::string host;
  int port = 0;

  bool operator==(const HostPort&) const = default;
};
std::string toString(const HostPort& address);
// "host:port", port in [1, 65535]; `key` names where the text came from in errors.
core::Result<HostPort> parseHostPort(std::string_view text, const std::string& key);

// The host a server's workers reach it at: $POD_IP when set (`pod_ip`), else 127.0.0.1 when the
// store's address is on this machine's loopback (every rank here), else this machine's name.
std::string advertisedHost(const std::string& pod_ip, const std::string& master_addr,
                           const std::string& hostname);

}  // namespace ringmaster::trainer::ps
