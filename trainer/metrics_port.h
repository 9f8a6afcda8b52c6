#pragma once
// Which port a rank serves /metrics on. The process is configured with one endpoint for its pod:
// --metrics-port (or RINGMASTER_METRICS_PORT) when given, else with --config the config's
// metricsPort (the operator's pods), else none, so that a bare trainer opens no port. A fixed
// port is a base: local rank k of a pod serves base + k, so the pod's processes do not collide.
//
// Thread-safety: pure functions. Failure: kUsage for a flag outside [-1, 65535];
// kInvalidArgument when base + local rank is not a TCP port.

#include <cstdint>
#include <optional>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer {

// The process's endpoint: -1 none, 0 any free port, else the pod's base port. `flag`: the flag's
// value when given; `config_file`: whether the settings came from --config; `config_port`: their
// metricsPort.
core::Result<int64_t> configuredMetricsPort(std::optional<int64_t> flag, bool config_file,
                                            int32_t config_port);

// The port local rank `local_rank` listens on (0: any free port); nullopt when `configured` is
// -1.
core::Result<std::optional<int>> rankMetricsPort(int64_t configured, int local_rank);

}  // namespace ringmaster::trainer
