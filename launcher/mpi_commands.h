#pragma once
// What MPI mode writes and runs, as pure functions (the launcher's side of the MPI Operator's
// contract; launcher/mpi_mode.h runs them):
//   hostfile      the operator's ConfigMap key: "<host> slots=<N>" per line (Open MPI's format;
//                 '#' comments, blank lines and max_slots=... are accepted)
//   sshd_config   one sshd per pod, runnable without root and without the system's sshd setup:
//                 its own listen address and port, a per-pod host key, the Secret's
//                 authorized_keys, no PAM, no pid file, no strict modes (Secret files are
//                 root-owned and group-readable on some kubelets), and SetEnv with the pod's
//                 environment, because sshd gives a login a fresh environment and the orted
//                 that mpirun starts through it must see the pod's PATH, LD_PRELOAD, POD_IP...
//   mpirun argv   Open MPI 4.1 over the hostfile, ranks placed slot by slot (rank = pod * P +
//                 local rank, as in native mode), no CPU binding (pods share nodes' cores through
//                 cgroups, not pinning), FQDN host names kept (the hostfile's names only resolve
//                 as written), ssh on the pods' port with the job's key and no host key checks
//                 (host keys are made per pod at start).
//
// Thread-safety: pure functions. Failure: kInvalidArgument naming the line, the variable or the
// path that cannot be written into the file / command line as it is.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

struct HostfileEntry {
  std::string host;
  int slots = 1;
  bool operator==(const HostfileEntry&) const = default;
};

core::Result<std::vector<HostfileEntry>> parseHostfile(const std::string& text);

struct SshdSettings {
  std::string listen_address;  // POD_IP, or 127.0.0.1 when unset
  int port = 2222;
  std::string host_key;         // absolute path of the private host key
  std::string authorized_keys;  // absolute path (the Secret's ssh-publickey)
  // Variables every login sees (sshd's SetEnv), in this order.
  std::vector<std::pair<std::string, std::string>> session_env;
};

std::string sshdConfig(const SshdSettings& settings);
// Checks what sshdConfig() would write: paths without '"', '%' or line breaks (sshd expands %
// tokens in AuthorizedKeysFile), a TCP port, no empty listen address.
core::Status validateSshdSettings(const SshdSettings& settings);
// `text` escaped for a double-quoted sshd_config argument (backslash and quote escaped); it
// must hold no line break (validateSshdSettings refuses those).
std::string sshdQuoted(std::string_view text);

// Whether NAME=VALUE can go into sshd's SetEnv and a login should get it: not a variable that
// sshd sets per login (USER, HOME, SHELL, SSH_*...), nor Open MPI's own (OMPI_*, PMIX_*...), nor
// a value sshd's config syntax cannot carry (quotes, line breaks).
bool forwardToSshSession(const std::string& name, const std::string& value);

struct MpirunSettings {
  std::string mpirun = "mpirun";  // absolute path in production
  std::string hostfile;
  int np = 1;
  int ssh_port = 2222;
  std::string identity;  // private key for ssh -i (must not contain whitespace)
  std::string iface;     // network interface for Open MPI's TCP traffic; "" = its default
  bool allow_run_as_root = false;
  // -x NAME=VALUE for every rank (mpirun forwards them over its own channel).
  std::vector<std::pair<std::string, std::string>> env;
  // -x NAME: forwarded from mpirun's own environment, for values (secrets) that must not show
  // on a command line.
  std::vector<std::string> forward_env;
  std::vector<std::string> program;  // argv[0] absolute: ranks start through sshd's PATH
};

// The ssh command Open MPI's rsh launcher runs (plm_rsh_agent); it splits it at spaces.
std::string sshAgent(int port, const std::string& identity);
core::Result<std::vector<std::string>> mpirunArgv(const MpirunSettings& settings);

}  // namespace ringmaster::launcher
