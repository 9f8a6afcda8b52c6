#include "launcher/first_failure.h"

#include <optional>
#include <thread>
#include <vector>

#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"

namespace ringmaster::launcher {
namespace {

using std::chrono::milliseconds;

struct Published {
  int64_t unix_ms = 0;
  std::string message;
};

// What pod `node` published, if it did.
std::optional<Published> readFailure(rendezvous::Store& store, int node) {
  const std::string key = failureKey(node);
  if (!store.wait({key}, milliseconds(0)).ok()) return std::nullopt;
  core::Result<rendezvous::Bytes> value = store.get(key, milliseconds(0));
  if (!value.ok()) return std::nullopt;
  const std::string text = rendezvous::toString(*value);
  const size_t space = text.find(' ');
  core::Result<int64_t> ms = core::parseInt(text.substr(0, space));
  if (!ms.ok() || space == std::string::npos) return std::nullopt;
  return Published{*ms, text.substr(space + 1)};
}

}  // namespace

std::string failureKey(int node_rank) { return "launcher/failure/" + std::to_string(node_rank); }

std::string reportFailure(rendezvous::Store& attempt_store, int node_rank, int nnodes,
                          const std::string& message, int64_t unix_ms, milliseconds wait) {
  if (unix_ms == 0) {
    unix_ms = std::chrono::duration_cast<milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  }
  if (core::Status s = attempt_store.set(
          failureKey(node_rank), rendezvous::toBytes(std::to_string(unix_ms) + " " + message));
      !s.ok()) {
    RM_LOG(DEBUG, LAUNCH) << "first failure: " << s.message();
    return message;
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<std::optional<Published>> all(static_cast<size_t>(nnodes));
  for (;;) {
    int seen = 0;
    for (int node = 0; node < nnodes; ++node) {
      auto& slot = all[static_cast<size_t>(node)];
      if (!slot) slot = readFailure(attempt_store, node);
      seen += slot ? 1 : 0;
    }
    if (seen == nnodes || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  int first = node_rank;
  int64_t first_ms = unix_ms;
  for (int node = 0; node < nnodes; ++node) {
    const auto& slot = all[static_cast<size_t>(node)];
    if (slot && (slot->unix_ms < first_ms || (slot->unix_ms == first_ms && node < first))) {
      first = node;
      first_ms = slot->unix_ms;
    }
  }
  if (first == node_rank) return message;
  const std::string cause = all[static_cast<size_t>(first)]->message;
  RM_LOG(INFO, LAUNCH) << "pod " << first << " failed first: " << cause;
  return cause + "; then on this pod: " + message;
}

}  // namespace ringmaster::launcher
