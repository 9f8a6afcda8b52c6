#include "trainer/ps/ps_role.h"

#include <algorithm>
#include <charconv>

namespace ringmaster::trainer::ps {

Consistency consistencyOf(const contract::TrainerSettings::ParameterServers& settings) {
  switch (settings.consistency) {
    case contract::PsConsistency::kAsync:
      return Consistency::async();
    case contract::PsConsistency::kBounded:
      return Consistency::bounded(settings.staleness);
    case contract::PsConsistency::kSync:
      break;
  }
  return Consistency::sync();
}

core::Result<PsPlacement> placeRank(int rank, int world_size,
                                    const contract::TrainerSettings::ParameterServers& settings) {
  const int64_t servers = settings.servers;
  if (servers < 1)
    return core::usageError("--ps-servers " + std::to_string(servers) +
                            ": a parameter-server run needs at least 1 server (0 turns it off)");
  if (servers >= world_size)
    return core::usageError("--ps-servers " + std::to_string(servers) + " in a world of " +
                            std::to_string(world_size) +
                            " ranks leaves no worker: WORLD_SIZE must exceed the servers "
                            "(--ps-servers, or parallelism.parameterServer.servers)");
  PsPlacement p;
  p.servers = static_cast<int>(servers);
  p.workers = world_size - p.servers;
  p.consistency = consistencyOf(settings);
  // Workers first: rank 0, whose summary the operator and launcher report, is worker 0.
  if (rank < p.workers) {
    p.role = PsRole::kWorker;
    p.index = rank;
  } else {
    p.role = PsRole::kServer;
    p.index = rank - p.workers;
  }
  return p;
}

core::Result<StartPlan> planStart(const std::vector<WorkerStanding>& standings, int worker) {
  StartPlan plan;
  for (const WorkerStanding& s : standings) plan.step = std::max(plan.step, s.clock);
  std::string mismatch;
  for (size_t server = 0; server < standings.size(); ++server) {
    const WorkerStanding& s = standings[server];
    if (!s.live) {
      plan.join.push_back(static_cast<int>(server));
    } else if (s.clock != plan.step) {
      mismatch += (mismatch.empty() ? "" : ", ") + std::string("server ") + std::to_string(server) +
                  " at step " + std::to_string(s.clock);
    }
  }
  if (!mismatch.empty()) {
    return core::unavailable("worker " + std::to_string(worker) + " is live on " + mismatch +
                             ", behind step " + std::to_string(plan.step) +
                             " of the others: it cannot rejoin them all at one step");
  }
  return plan;
}

std::string serverAddressKey(const std::string& attempt_prefix, int server) {
  return attempt_prefix + "/ps/server/" + std::to_string(server);
}

std::string workerReadyKey(const std::string& attempt_prefix, int worker) {
  return attempt_prefix + "/ps/worker/" + std::to_string(worker) + "/ready";
}

std::string toString(const HostPort& address) {
  return address.host + ":" + std::to_string(address.port);
}

core::Result<HostPort> parseHostPort(std::string_view text, const std::string& key) {
  const size_t colon = text.rfind(':');
  auto bad = [&](const std::string& why) {
    return core::invalidArgument(key + ": server address '" + std::string(text) + "' " + why);
  };
  if (colon == std::string_view::npos || colon == 0) return bad("is not host:port");
  const std::string_view digits = text.substr(colon + 1);
  int port = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return bad("has no numeric port");
  if (port < 1 || port > 65535) return bad("has a port outside [1, 65535]");
  return HostPort{std::string(text.substr(0, colon)), port};
}

std::string advertisedHost(const std::string& pod_ip, const std::string& master_addr,
                           const std::string& hostname) {
  if (!pod_ip.empty()) return pod_ip;
  if (master_addr == "localhost" || master_addr.starts_with("127.") || master_addr == "::1")
    return "127.0.0.1";
  return hostname.empty() ? "127.0.0.1" : hostname;
}

}  // namespace ringmaster::trainer::ps
