#include "launcher/rendezvous.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "ringmaster/core/backoff.h"
#include "ringmaster/core/deadline.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"

namespace ringmaster::launcher {
namespace {

using core::Result;
using core::Status;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Store waits are cut into slices so that a stop request is noticed within one.
constexpr milliseconds kSlice{500};

bool stopped(const core::StopSource* stop) { return stop != nullptr && stop->stopRequested(); }

// Sleeps `d`, waking early (and returning true) on a stop request.
bool pause(const core::StopSource* stop, milliseconds d) {
  if (stop != nullptr) return stop->waitFor(d);
  std::this_thread::sleep_for(d);
  return false;
}

std::string secondsText(milliseconds d) {
  return std::to_string(d.count() / 1000.0).substr(0, 5) + " s";
}

// store.wait() cut into slices so that a stop request is noticed within one.
Status waitInSlices(rendezvous::Store& store, const std::vector<std::string>& keys,
                    milliseconds timeout, const core::StopSource* stop) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (stopped(stop)) return core::cancelled(stop->reason());
    Status st = store.wait(keys, std::min(kSlice, core::millisecondsUntil(deadline)));
    if (st.code() != core::Code::kTimeout || core::millisecondsUntil(deadline).count() == 0)
      return st;
  }
}

}  // namespace

std::string nodeKey(int node_rank) { return "launcher/node/" + std::to_string(node_rank); }
std::string startedKey(int node_rank) { return "launcher/started/" + std::to_string(node_rank); }
std::string exitedKey(int node_rank) { return "launcher/exited/" + std::to_string(node_rank); }

void finishGang(rendezvous::Store& attempt_store, int node_rank, int nnodes,
                milliseconds start_timeout, milliseconds linger, const core::StopSource* stop) {
  Status st = attempt_store.set(exitedKey(node_rank), rendezvous::toBytes("1"));
  if (!st.ok()) {
    RM_LOG(DEBUG, RDZV) << "could not record this pod's exit: " << st.message();
    return;
  }
  if (node_rank != 0) return;
  std::vector<std::string> started, exited;
  for (int i = 0; i < nnodes; ++i) {
    if (!attempt_store.wait({nodeKey(i)}, milliseconds(0)).ok()) continue;  // no pod joined
    started.push_back(startedKey(i));
    exited.push_back(exitedKey(i));
  }
  st = waitInSlices(attempt_store, started, start_timeout, stop);
  if (!st.ok()) {
    RM_LOG(WARN, RDZV) << "closing the store although not every pod started: " << st.message();
    return;
  }
  st = waitInSlices(attempt_store, exited, linger, stop);
  if (!st.ok()) {
    RM_LOG(INFO, RDZV) << "closing the store while pods still run: " << st.message();
  }
}

std::string encodeNodeInfo(const NodeInfo& info) {
  return "node_rank=" + std::to_string(info.node_rank) + " host=" + info.host + " ip=" + info.ip +
         " first_rank=" + std::to_string(info.first_rank) +
         " local_world_size=" + std::to_string(info.local_world_size);
}

Result<NodeInfo> decodeNodeInfo(const std::string& text) {
  NodeInfo info;
  std::istringstream in(text);
  std::string field;
  int seen = 0;
  while (in >> field) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos) {
      return core::invalidArgument("node info '" + text + "': field '" + field + "' has no '='");
    }
    const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "host") {
      info.host = value;
    } else if (key == "ip") {
      info.ip = value;
    } else if (key == "node_rank" || key == "first_rank" || key == "local_world_size") {
      Result<int64_t> n = core::parseInt(value);
      if (!n.ok()) return n.status().withContext("node info '" + text + "': " + key);
      int* target = key == "node_rank"    ? &info.node_rank
                    : key == "first_rank" ? &info.first_rank
                                          : &info.local_world_size;
      *target = static_cast<int>(*n);
    } else {
      continue;  // a field from a newer launcher: ignore, stay compatible
    }
    ++seen;
  }
  if (seen < 5) return core::invalidArgument("node info '" + text + "': missing fields");
  return info;
}

Result<std::vector<NodeInfo>> joinGang(rendezvous::Store& attempt_store, const NodeInfo& me,
                                       int nnodes, milliseconds timeout,
                                       const core::StopSource* stop,
                                       const std::vector<int>& empty) {
  auto expected = [&empty](int i) {
    return std::find(empty.begin(), empty.end(), i) == empty.end();
  };
  const std::string context =
      "rendezvous (pod " + std::to_string(me.node_rank) + " of " + std::to_string(nnodes) + ")";
  const Clock::time_point deadline = Clock::now() + timeout;
  RM_RETURN_IF_ERROR_CTX(
      attempt_store.set(nodeKey(me.node_rank), rendezvous::toBytes(encodeNodeInfo(me))), context);
  std::vector<std::string> keys;
  for (int i = 0; i < nnodes; ++i) {
    if (expected(i)) keys.push_back(nodeKey(i));
  }
  Status st = waitInSlices(attempt_store, keys, core::millisecondsUntil(deadline), stop);
  if (st.code() == core::Code::kTimeout) {
    // Name the pods that never registered, not just that some did not.
    std::string missing;
    for (int i = 0; i < nnodes; ++i) {
      if (expected(i) && !attempt_store.wait({nodeKey(i)}, milliseconds(0)).ok()) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(i);
      }
    }
    return core::timeoutError(context + ": pod(s) " + missing + " did not join within " +
                              secondsText(timeout));
  }
  if (!st.ok()) return st.withContext(context);
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < nnodes; ++i) {
    if (!expected(i)) continue;
    Result<rendezvous::Bytes> bytes = attempt_store.get(nodeKey(i), kSlice);
    if (!bytes.ok()) return bytes.status().withContext(context);
    Result<NodeInfo> info = decodeNodeInfo(rendezvous::toString(*bytes));
    if (!info.ok()) return info.status().withContext(context + ": pod " + std::to_string(i));
    if (info->node_rank != i || info->local_world_size != me.local_world_size ||
        info->first_rank != i * me.local_world_size) {
      return core::invalidArgument(context + ": pod " + std::to_string(i) + " registered '" +
                                   encodeNodeInfo(*info) + "', which does not fit a world of " +
                                   std::to_string(nnodes) + " pods x " +
                                   std::to_string(me.local_world_size) + " processes");
    }
    nodes.push_back(std::move(info).value());
  }
  RM_RETURN_IF_ERROR_CTX(attempt_store.set(startedKey(me.node_rank), rendezvous::toBytes("1")),
                         context);
  return nodes;
}

AttemptStore::AttemptStore(std::unique_ptr<rendezvous::TcpStoreServer> server,
                           std::unique_ptr<rendezvous::TcpStoreClient> client, std::string host,
                           int port, std::string secret, const std::string& prefix)
    : server_(std::move(server)),
      client_(std::move(client)),
      host_(std::move(host)),
      port_(port),
      secret_(std::move(secret)),
      scoped_(client_.get(), prefix) {}

Result<std::unique_ptr<AttemptStore>> AttemptStore::open(const contract::PodEnvironment& env,
                                                         milliseconds timeout,
                                                         const core::StopSource* stop) {
  const std::string context = "rendezvous store for " + env.attemptPrefix();
  const Clock::time_point deadline = Clock::now() + timeout;
  std::unique_ptr<rendezvous::TcpStoreServer> server;
  std::string host = env.master_addr;
  int port = env.store_port;
  if (env.node_rank == 0) {
    Result<std::unique_ptr<rendezvous::TcpStoreServer>> started =
        rendezvous::TcpStoreServer::start(env.bindHost(), env.store_port, env.store_secret);
    if (!started.ok()) return started.status().withContext(context + ": host it");
    server = std::move(started).value();
    // Pod 0 talks to its own store locally: its service name may not resolve yet.
    host = env.pod_ip.empty() ? "127.0.0.1" : env.pod_ip;
    port = server->port();
  }

  core::Backoff backoff({milliseconds(100), milliseconds(2000), 0.5});
  std::string last_error = "no attempt";
  for (;;) {
    if (stopped(stop)) return core::cancelled(context + ": " + stop->reason());
    if (core::millisecondsUntil(deadline).count() == 0) {
      return core::timeoutError(context + ": could not reach this attempt's store at " + host +
                                ":" + std::to_string(port) + " within " + secondsText(timeout) +
                                " (" + last_error + ")");
    }
    // Connect in slices so that a stop request is seen while pod 0 is not up yet.
    Result<std::unique_ptr<rendezvous::TcpStoreClient>> client =
        rendezvous::TcpStoreClient::connect(host, port, env.store_secret,
                                            std::min(kSlice, core::millisecondsUntil(deadline)));
    if (!client.ok()) {
      last_error = client.status().message();
      continue;
    }
    auto attempt = std::unique_ptr<AttemptStore>(
        new AttemptStore(std::move(server), std::move(client).value(), host, port, env.store_secret,
                         env.attemptPrefix()));
    if (env.node_rank == 0) {
      RM_RETURN_IF_ERROR_CTX(
          attempt->store().set(kStoreHostKey, rendezvous::toBytes(env.describePod())), context);
      return attempt;
    }
    Result<rendezvous::Bytes> owner = attempt->store().get(
        kStoreHostKey, std::min(milliseconds(2000), core::millisecondsUntil(deadline)));
    if (owner.ok()) {
      RM_LOG(INFO, RDZV) << "connected to the rendezvous store at " << attempt->address()
                         << " hosted by " << rendezvous::toString(*owner);
      return attempt;
    }
    last_error = "connected, but the store is not hosted by " + env.attemptPrefix() + "'s pod 0 (" +
                 owner.status().message() + ")";
    RM_LOG(WARN, RDZV) << context << ": " << last_error << "; reconnecting";
    if (pause(stop, std::min(backoff.next(), core::millisecondsUntil(deadline)))) {
      return core::cancelled(context + ": " + stop->reason());
    }
  }
}

Result<std::unique_ptr<rendezvous::TcpStoreClient>> AttemptStore::connectAnother(
    milliseconds timeout) const {
  return rendezvous::TcpStoreClient::connect(host_, port_, secret_, timeout);
}

}  // namespace ringmaster::launcher
