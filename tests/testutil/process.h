#pragma once
// Runs real binaries from tests: fork/exec with extra environment, stdout/stderr captured to
// files, a wall-clock limit, and the exit code or signal. Background processes can be signalled.
//
// Thread-safety: one Process per thread. Failure: a process that cannot be started reports
// exit_code 127 and the reason in stderr_text.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "ringmaster/http/get.h"

namespace ringmaster::testutil {

struct ProcessResult {
  int exit_code = -1;     // valid when !signaled
  bool signaled = false;  // killed by a signal (term_signal); also true on timeout (SIGKILL)
  int term_signal = 0;
  bool core_dumped = false;
  bool timed_out = false;
  std::string stdout_text;
  std::string stderr_text;
};

class Process {
 public:
  // argv[0] is the program path. env entries are added to (and override) the test's environment;
  // an entry with an empty value removes that variable.
  Process(std::vector<std::string> argv, std::map<std::string, std::string> env = {});
  ~Process();  // kills a still-running process
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void start();
  void signal(int sig);
  bool running();
  // Waits up to `limit` (then SIGKILL and timed_out = true; stderr_text then ends with what its
  // processes were doing).
  ProcessResult wait(std::chrono::seconds limit);
  // The stderr written so far (for polling on progress).
  std::string stderrSoFar() const;
  // The stdout written so far.
  std::string stdoutSoFar() const;
  pid_t pid() const { return pid_; }

 private:
  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_;
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs to completion.
ProcessResult run(std::vector<std::string> argv, std::map<std::string, std::string> env = {},
                  std::chrono::seconds limit = std::chrono::seconds(300));

// A fresh temporary directory (removed by the destructor).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A TCP port that was free a moment ago on 127.0.0.1.
int freePort();
// kubectl 1.32, preferring the Cloud SDK's versioned binary over its dispatcher (which picks a
// bundled kubectl by server version); "" when none is installed.
std::string findKubectl();
// The official helm ($RM_HELM, else where scripts/install-helm puts it); "" when none is installed.
std::string findHelm();

// Debian's dataset-fashion-mnist, which the training tests read.
inline const std::string kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Whether its training images are installed (tests that need them skip otherwise).
bool haveFashionMnist();

// Path of a built binary: $RM_BINARY_DIR/<relative>.
std::string binaryPath(const std::string& relative);
std::string readFile(const std::string& path);
// GET http://host:port/path (rm::http, 5 s); status 0 and no body when nothing answered.
http::Response httpGet(const std::string& host, int port, const std::string& path);
// The same on 127.0.0.1.
http::Response httpGet(int port, const std::string& path);
// Counts the lines of `text` that contain `needle`.
int countLines(const std::string& text, const std::string& needle);
// True while `pid` is a process that has not exited (a zombie counts as gone).
bool liveProcess(pid_t pid);

}  // namespace ringmaster::testutil
