#pragma once
// ringmaster-trainer's command line and the configuration it resolves to. Flags override
// spec.trainer's fields over --config's YAML (or the defaults), and the result goes through the
// same contract checks as a file alone, so a flag cannot run what the operator would refuse; the
// rest are the process's own options (backend, metrics endpoint, rendezvous timeout, output).
//
// Thread-safety: none; used from main. Failure: resolveTrainerConfig returns the config file's
// error, kUsage for a malformed list or --metrics-port, or the contract's kInvalidArgument naming
// "trainer.<key>" under "the flags" (or "<file> and the flags").

#include <cstdint>
#include <string>

#include "ringmaster/core/flags.h"
#include "ringmaster/core/status.h"
#include "trainer/config.h"

namespace ringmaster::trainer {

// The flags' values: overrides of spec.trainer's fields (applied only where given) and the
// process's own options.
struct CommandLine {
  std::string config_path, summary_path, log_level;
  std::string model, hidden, channels, data, optimizer, lr_schedule, checkpoint_dir, device,
      precision;
  int64_t epochs = 0, batch_size = 0, seed = 0, checkpoint_every = 0, blas_threads = 0,
          max_steps = 0, log_every_steps = 0, comm_timeout_seconds = 0;
  double lr = 0, momentum = 0, weight_decay = 0, bucket_cap_mb = 0, first_bucket_cap_mb = 0,
         tcp_doubling_max_kb = 0;
  bool cuda_graph = false;
  bool print_blas_kernels = false;
  // Autotune (spec.trainer.autotune): on, its CSV log, its sample budget.
  bool autotune = false;
  std::string autotune_log;
  int64_t autotune_samples = 0;
  std::string backend = "auto";
  int64_t metrics_port = -1;
  int64_t rdzv_timeout_seconds = 300;
  // Parameter-server mode (spec.trainer.parallelism.parameterServer): servers and consistency.
  int64_t ps_servers = 0;
  std::string ps_consistency = "sync";
};

// spec.trainer's defaults, so that --help shows them.
CommandLine defaultCommandLine();

// Declares every flag of ringmaster-trainer over `cl`, which must outlive `flags`.
void declareFlags(core::FlagSet& flags, CommandLine* cl);

// What the parsed command line runs: --config's spec.trainer (an empty one without it) with the
// flags that were given written over it, defaulted and checked by the contract; the backend;
// the metrics endpoint (configuredMetricsPort).
core::Result<TrainerConfig> resolveTrainerConfig(const core::FlagSet& flags, const CommandLine& cl);

}  // namespace ringmaster::trainer
