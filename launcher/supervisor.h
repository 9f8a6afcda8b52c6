#pragma once
// Runs the pod's local processes (one per local rank) and turns their fate into one exit code.
//
// Rules:
//   - every process runs in its own process group, so that signals reach a user script's
//     children too; each dies with the launcher (PR_SET_PDEATHSIG) if the launcher is killed;
//   - the first process to fail (non-zero exit or a signal) stops the others;
//   - requestStop() (SIGTERM/SIGINT to the launcher, a detected hang) sends SIGTERM and SIGCONT
//     (a stopped process could not act on SIGTERM) to every group, SIGKILL after the grace period;
//   - the outcome: the code given to the first requestStop() if there was one, else the first
//     failing process's code (128+N when killed by signal N), else 0;
//   - Options::capture_errors: each process's stderr goes through a pipe that a relay thread
//     copies line by line to the launcher's stderr, remembering what its lines say went wrong
//     (termination_message.h's ErrorLines): failureErrorLine() after wait().
//
// Ownership: owns the child processes (reaps every one before wait() returns; the destructor
// kills and reaps any still running) and their pidfds. Thread-safety: requestStop() and
// running() may be called from any thread; start()/wait() from one thread (the one that
// started, since PR_SET_PDEATHSIG follows the forking thread). Failure: start() fails (with
// nothing left running) when a program cannot be found or a fork fails; a process whose exec
// fails exits 127 with the reason on its stderr.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "launcher/termination_message.h"
#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

struct ProcessSpec {
  std::string name;                        // for log lines, e.g. "rank 3"
  std::vector<std::string> argv;           // argv[0]: an absolute path (see resolveProgram)
  std::map<std::string, std::string> env;  // added to (overriding) the launcher's environment
};

struct SupervisorOutcome {
  int exit_code = 0;
  std::string reason;  // "all 2 processes succeeded", "rank 3 exited with code 7", ...
};

// What made the processes fail, as their stderr tells it (Options::capture_errors).
struct FailureCause {
  std::string name;        // "rank 3"; "" when the outcome is no failure of a process
  std::string error_line;  // its most telling line (ErrorLines::best); "" when none
  // When its first error began, else when the first failing process exited (ms since the epoch).
  int64_t unix_ms = 0;
  bool exited_first = true;  // it is the process whose exit is the outcome's reason
};

// 128+N for a signal, the exit status otherwise (a waitpid status).
int exitCodeOf(int wait_status);
// "exited with code 3" / "killed by signal 9 (Killed)".
std::string describeWaitStatus(int wait_status);

// `name` itself when it contains '/', else the first executable `dir/name` for dir in
// `path_env` (':'-separated), then in `fallback_dir` (the launcher's own directory, where
// ringmaster-trainer lands in a build tree). kNotFound naming the places searched otherwise.
core::Result<std::string> resolveProgram(const std::string& name, const std::string& path_env,
                                         const std::string& fallback_dir);

class Supervisor {
 public:
  struct Options {
    std::chrono::milliseconds grace{std::chrono::seconds(30)};
    bool capture_errors = false;
  };

  static core::Result<std::unique_ptr<Supervisor>> start(std::vector<ProcessSpec> specs,
                                                         Options options);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Blocks until every process has exited.
  SupervisorOutcome wait();
  // After wait(): of the processes that did not succeed, the one whose first error began first
  // (a rank whose peer raised may exit before it, "Connection closed by peer"); without error
  // lines, the first to fail. Empty when the outcome is no failure of a process (success, a stop
  // request) or nothing was captured.
  FailureCause failureCause() const;
  // failureCause().error_line.
  std::string failureErrorLine() const { return failureCause().error_line; }
  void requestStop(int exit_code, std::string reason);
  // Whether local process `index` is still running (not yet reaped).
  bool running(size_t index) const;
  pid_t pid(size_t index) const { return children_[index].pid; }
  size_t size() const { return children_.size(); }

 private:
  struct Child {
    std::string name;
    pid_t pid = -1;
    int pidfd = -1;  // -1: poll with a short timeout instead
    bool reaped = false;
    int wait_status = 0;
  };
  // One captured stderr; only the relay thread touches it until stopRelay() joined it.
  struct Stream {
    int fd = -1;  // read end, non-blocking; -1 once closed
    std::string partial;
    ErrorLines errors;
  };
  Supervisor(Options options, int wake_read, int wake_write);
  void signalAll(int sig);  // requires mu_
  void reap(Child& child, int wait_status);
  void relay();      // the relay thread's body
  void stopRelay();  // drains what is readable, then joins the thread

  Options options_;
  int wake_read_, wake_write_;  // requestStop() wakes wait()
  mutable std::mutex mu_;
  std::vector<Child> children_;  // the vector is fixed after start(); fields guarded by mu_
  bool stop_requested_ = false;  // guarded by mu_
  int stop_code_ = 0;
  std::string stop_reason_;
  bool first_failure_seen_ = false;
  size_t first_failure_index_ = 0;
  int64_t first_failure_unix_ms_ = 0;
  SupervisorOutcome first_failure_;
  std::vector<Stream> streams_;  // per child when capture_errors, else empty
  int relay_wake_[2] = {-1, -1};
  std::atomic<bool> relay_stop_{false};
  std::thread relay_thread_;
};

}  // namespace ringmaster::launcher
