#include "trainer/metrics_port.h"

#include <string>

namespace ringmaster::trainer {

namespace {
constexpr int64_t kMaxPort = 65535;
}  // namespace

core::Result<int64_t> configuredMetricsPort(std::optional<int64_t> flag, bool config_file,
                                            int32_t config_port) {
  if (flag) {
    if (*flag < -1 || *flag > kMaxPort)
      return core::usageError("flag --metrics-port: must be -1 (off), 0 (any) or a port");
    return *flag;
  }
  return config_file ? int64_t{config_port} : int64_t{-1};
}

core::Result<std::optional<int>> rankMetricsPort(int64_t configured, int local_rank) {
  if (configured < 0) return std::optional<int>();
  if (configured == 0) return std::optional<int>(0);
  const int64_t port = configured + local_rank;
  if (port > kMaxPort) {
    return core::invalidArgument("metrics port " + std::to_string(configured) + " + LOCAL_RANK " +
                                 std::to_string(local_rank) + " is not a TCP port");
  }
  return std::optional<int>(static_cast<int>(port));
}

}  // namespace ringmaster::trainer
