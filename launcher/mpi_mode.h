#pragma once
// MPI mode (RINGMASTER_LAUNCHER_MODE=mpi; the MPI Operator's semantics without its launcher pod):
//
//   every pod   writes into its work dir a host key (ssh-keygen, per pod) and an sshd_config
//               (launcher/mpi_commands.h), starts `sshd -D -e` on $POD_IP-or-127.0.0.1:--ssh-port
//               and is ready (/readyz) once its sshd answers and the rendezvous (the same TCP
//               store as native mode, so start order never matters) completed.
//   pod 0       waits until every hostfile host's sshd answers (until the rendezvous deadline),
//               then runs `mpirun --hostfile ... program` (the trainer with --backend mpi, or the
//               user's command) and publishes its exit code as "launcher/mpi-done" under the
//               attempt prefix.
//   other pods  serve sshd until "launcher/mpi-done" appears (and exit with that code), a stop
//               request arrives, their sshd dies, or the store goes away with pod 0 (exit 142,
//               retryable: the gang is gone).
//   hangs       ranks get RINGMASTER_USE_AGENT_STORE=1 (mpirun -x), so they heartbeat into the
//               store as in native mode; the launcher's HangMonitor calls requestStop().
// Exit codes follow native mode: mpirun's code (Open MPI passes on the first failing rank's),
// 128+N for a stop by signal N, 142 when a peer's sshd never answered.
//
// Ownership: MpiPod owns its work dir's files (a created temporary dir is removed at the end),
// the sshd process (stopped by the destructor) and, on pod 0, mpirun. Processes started through
// sshd (orted, ranks) run in sessions of their own: they end with mpirun, not with sshd; what
// is left of them when the pod ends is killed (the launcher is their subreaper).
// Thread-safety: one thread drives an MpiPod; a watcher thread of its own waits on sshd.
// Failure: start() names the file or program it could not prepare (exit 1: bad input); run()
// returns an outcome, never an error.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launcher/supervisor.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::launcher {

inline constexpr char kMpiDoneKey[] = "launcher/mpi-done";

struct MpiOptions {
  std::string work_dir;                         // "" = a new /tmp/ringmaster-mpi-XXXXXX
  std::string ssh_dir = "/etc/ringmaster-ssh";  // the Secret's mount (operator/builders.h)
  std::string hostfile = "/etc/ringmaster/hostfile";
  int ssh_port = 2222;
  std::string sshd = "/usr/sbin/sshd";    // absolute: sshd re-executes itself
  std::string ssh_keygen = "ssh-keygen";  // resolved through PATH
  std::string mpirun = "mpirun";          // resolved through PATH
  std::vector<std::string> program;       // what mpirun runs; argv[0] absolute
  // How often ranks heartbeat into the attempt's store (RINGMASTER_HEARTBEAT_MS).
  int64_t heartbeat_ms = 1000;
  std::chrono::milliseconds grace{std::chrono::seconds(30)};
};

// What a stopped pod needs from the launcher's signal handling.
struct StopHooks {
  const core::StopSource* stop = nullptr;   // requested on SIGTERM/SIGINT
  std::function<void(Supervisor*)> attach;  // route signals to this supervisor (or none)
  std::function<int()> exit_code;           // 128+N for the signal received
};

// The network interface whose network holds `ip` ("eth0" for a pod's address, "lo" for a
// loopback one); "" when none does or `ip` is not IPv4. Open MPI's TCP traffic goes there.
std::string interfaceFor(const std::string& ip);

// The private key in `ssh_dir` mpirun's ssh uses: id_ecdsa (what the operator mounts), else
// id_ed25519, else id_rsa. kNotFound naming the files looked for.
core::Result<std::string> findIdentity(const std::string& ssh_dir);

class MpiPod {
 public:
  static core::Result<std::unique_ptr<MpiPod>> start(const contract::PodEnvironment& env,
                                                     MpiOptions options);
  ~MpiPod();
  MpiPod(const MpiPod&) = delete;
  MpiPod& operator=(const MpiPod&) = delete;

  // Until this pod's sshd answers; kTimeout at `deadline`, kUnavailable when sshd exited.
  core::Status waitUntilServing(std::chrono::steady_clock::time_point deadline,
                                const core::StopSource* stop);
  // After the rendezvous: pod 0 runs mpirun (its wait for the peers' sshd ends at `deadline`),
  // the others serve until pod 0 is done. `attempt_store` is scoped to the attempt.
  SupervisorOutcome run(rendezvous::Store& attempt_store,
                        std::chrono::steady_clock::time_point deadline, const StopHooks& hooks);
  // Ends run() with `exit_code` (a hang was detected): pod 0 stops mpirun, the others stop
  // serving. Thread-safe; the first request wins.
  void requestStop(int exit_code, std::string reason);
  const std::string& workDir() const { return work_dir_; }

 private:
  MpiPod(const contract::PodEnvironment& env, MpiOptions options);
  core::Status prepare();  // work dir, keys, sshd_config, sshd
  SupervisorOutcome runMpirun(rendezvous::Store& attempt_store,
                              std::chrono::steady_clock::time_point deadline,
                              const StopHooks& hooks);
  SupervisorOutcome serveUntilDone(rendezvous::Store& attempt_store, const StopHooks& hooks);
  std::optional<SupervisorOutcome> sshdExit();  // set once sshd has exited
  void stopSshd();

  contract::PodEnvironment env_;
  MpiOptions options_;
  std::string work_dir_;
  bool remove_work_dir_ = false;
  std::string listen_address_;
  std::string identity_;  // pod 0: its private copy of the key
  std::unique_ptr<Supervisor> sshd_;
  std::thread sshd_waiter_;  // runs sshd_->wait()
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<SupervisorOutcome> sshd_exit_;  // guarded by mu_
  std::optional<SupervisorOutcome> stop_;       // guarded by mu_: requestStop()'s
  Supervisor* mpirun_ = nullptr;                // guarded by mu_: while mpirun runs
};

}  // namespace ringmaster::launcher
