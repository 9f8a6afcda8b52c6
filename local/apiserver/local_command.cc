#include "local/apiserver/local_command.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "local/apiserver/api_server.h"
#include "local/run/run_command.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/stop.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: ringmaster local <command> [flags]\n\n"
    "Commands:\n"
    "  up     start the API server, kubelet and operator in the background; print KUBECONFIG\n"
    "  down   stop the background API server, kubelet and operator\n"
    "  run    bring the cluster up, run a TrainingJob or Experiment manifest and report it until "
    "it ends\n"
    "  serve  run the local API server in the foreground\n"
    "  kubelet  run the local kubelet in the foreground (local/kubelet)\n\n"
    "Run `ringmaster local <command> --help` for its flags.\n";

std::string defaultDataDir() {
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.ringmaster/local";
}

struct CommonFlags {
  std::string data_dir = defaultDataDir();
  int64_t port = 0;
  std::string kubelet_flags;  // up: extra flags for the kubelet, space-separated
  // up: a cluster to join instead of starting the embedded API server (its kubeconfig)
  std::string cluster_kubeconfig;
  // up: start the operator (off: one is installed into the cluster instead, e.g. with Helm)
  bool operator_ = true;
};

// Adds up's flags for the kubelet and operator it starts.
void addAgentFlags(core::FlagSet& fs, CommonFlags* flags) {
  fs.addString("kubelet-flags", &flags->kubelet_flags,
               "extra flags for the kubelet, space-separated (e.g. \"--gpus=2\"; see "
               "`ringmaster local kubelet --help`)");
  fs.addString("cluster-kubeconfig", &flags->cluster_kubeconfig,
               "start no API server: run the kubelet (as this machine's node) and the operator "
               "against the cluster this kubeconfig names, e.g. a test control plane; `down` then "
               "stops only those two");
  fs.addBool("operator", &flags->operator_,
             "start the operator next to the kubelet (--no-operator: run it inside the cluster "
             "instead, e.g. from the Helm chart)");
}

// Parses the flags of one subcommand; *help set when --help was given (usage printed).
core::Status parseFlags(const std::string& name, const std::string& summary, bool with_port,
                        const std::vector<std::string>& args, CommonFlags* flags, bool* help,
                        bool with_agents = false) {
  core::FlagSet fs("ringmaster local " + name, summary);
  fs.addString("data-dir", &flags->data_dir,
               "directory for the PKI, token, kubeconfig, state, pid file and log",
               "RINGMASTER_LOCAL_DATA_DIR");
  if (with_port) fs.addInt("port", &flags->port, "HTTPS port on 127.0.0.1 (0: any free port)");
  if (with_agents) addAgentFlags(fs, flags);
  std::vector<const char*> argv{"ringmaster-local"};
  for (const auto& a : args) argv.push_back(a.c_str());
  RM_RETURN_IF_ERROR(fs.parse(static_cast<int>(argv.size()), argv.data(), help));
  if (*help) std::cout << fs.help();
  if (flags->port < 0 || flags->port > 65535) {
    return core::usageError("--port must be in 0..65535");
  }
  return core::Status::Ok();
}

// The positive number in a pid or port file; nullopt when missing or unreadable.
std::optional<long> readNumber(const fs::path& path) {
  std::ifstream in(path);
  long value = 0;
  if (!(in >> value) || value <= 0) return std::nullopt;
  return value;
}

std::optional<pid_t> readPid(const fs::path& path) {
  if (auto n = readNumber(path)) return static_cast<pid_t>(*n);
  return std::nullopt;
}

// A zombie is not alive: a killed server whose parent (often a container's init) never reaps it
// would otherwise look like a running one forever.
bool alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t comm_end = text.rfind(')');  // the command name may contain spaces or ')'
  return comm_end == std::string::npos || comm_end + 2 >= text.size() || text[comm_end + 2] != 'Z';
}

// Writes `value` and a newline to `path` atomically (pid and port files).
core::Status writeNumberFile(const fs::path& path, long value) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << value << "\n";
    if (!out) return core::internalError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return core::internalError("cannot rename " + tmp.string() + ": " + ec.message());
  return core::Status::Ok();
}

core::Status serve(const CommonFlags& flags) {
  auto& stop = core::installSignalStop();
  // Objects and watch frames of up to a few MiB come and go on every update; glibc's sliding mmap
  // threshold would move them into per-thread heaps that never shrink, so RSS would follow the
  // busiest moment rather than what the store holds. A fixed threshold keeps them mapped and
  // returned on free.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  ApiServerOptions options;
  options.data_dir = flags.data_dir;
  options.port = static_cast<int>(flags.port);
  RM_ASSIGN_OR_RETURN(auto server, ApiServer::start(options));
  const fs::path pid_path = fs::path(flags.data_dir) / "pid";
  RM_RETURN_IF_ERROR(writeNumberFile(fs::path(flags.data_dir) / "port", server->port()));
  RM_RETURN_IF_ERROR(writeNumberFile(pid_path, getpid()));
  std::cout << "ringmaster local API server listening on " << server->url() << "\n"
            << "export KUBECONFIG=" << server->kubeconfigPath().string() << std::endl;
  while (!stop.waitFor(std::chrono::hours(1))) {
  }
  std::cout << "stopping (" << stop.reason() << ")" << std::endl;
  core::Status status = server->stop();
  std::error_code ec;
  fs::remove(pid_path, ec);
  return status;
}

// Starts argv detached from this terminal: new session, stdin /dev/null, stdout and stderr
// appended to `log_path`.
core::Result<pid_t> spawnDetached(const fs::path& log_path, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t child = fork();
  if (child < 0) return core::internalError(std::string("fork: ") + strerror(errno));
  if (child == 0) {
    setsid();
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    int null = open("/dev/null", O_RDONLY);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    if (null >= 0) dup2(null, 0);
    core::unblockStopSignals();
    execv(args[0], args.data());
    _exit(127);
  }
  return child;
}

core::Result<std::string> selfPath() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return core::internalError("cannot find this program: readlink /proc/self/exe");
  return std::string(self, static_cast<size_t>(n));
}

// `word` as one shell word: as it is when it holds only characters no shell reads specially,
// else single-quoted.
std::string shellWord(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789/._-+=:,@%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A detached helper `up` starts next to the server: output appended to <data-dir>/<name>.log,
// pid in <data-dir>/<name>.pid. Already running: nothing.
core::Status startDaemon(const fs::path& dir, const std::string& name,
                         const std::vector<std::string>& argv) {
  const fs::path pid_path = dir / (name + ".pid");
  if (auto pid = readPid(pid_path); pid && alive(*pid)) return core::Status::Ok();
  const fs::path log_path = dir / (name + ".log");
  RM_ASSIGN_OR_RETURN(pid_t child, spawnDetached(log_path, argv));
  std::ofstream(pid_path) << child << "\n";
  std::cout << "ringmaster local " << name << " running (pid " << child << ", log "
            << log_path.string() << ")" << std::endl;
  return core::Status::Ok();
}

// What `up` runs next to the API server: the built-in CRDs, the kubelet (contracts: --root-dir
// <data-dir>/kubelet, --node-name local, its containers' metrics on any free port) and the operator
// (when ringmaster-operator was built next to this binary), all talking to the server through the
// kubeconfig.
core::Status startAgents(const fs::path& dir, const std::string& self,
                         const std::string& kubelet_flags, bool start_operator) {
  const std::string kubeconfig = (dir / "kubeconfig").string();
  RM_RETURN_IF_ERROR(installBuiltInCrds(kubeconfig));
  std::vector<std::string> kubelet{self,
                                   "local",
                                   "kubelet",
                                   "--kubeconfig",
                                   kubeconfig,
                                   "--root-dir",
                                   (dir / "kubelet").string(),
                                   "--node-name",
                                   "local",
                                   "--metrics-port",
                                   "0"};
  std::istringstream extra(kubelet_flags);
  for (std::string flag; extra >> flag;) kubelet.push_back(flag);
  RM_RETURN_IF_ERROR(startDaemon(dir, "kubelet", kubelet));
  if (!start_operator) {
    std::cout << "no operator started (--no-operator): install one into the cluster, e.g. "
                 "helm install ringmaster helm/ringmaster"
              << std::endl;
    return core::Status::Ok();
  }
  const fs::path op = fs::path(self).parent_path() / "ringmaster-operator";
  if (access(op.c_str(), X_OK) != 0) {
    std::cout << "no operator next to this binary (" << op.string()
              << "): TrainingJobs will not run" << std::endl;
    return core::Status::Ok();
  }
  // Ports 0: any free port, so several local clusters (tests) never collide. A short Lease: one
  // machine, so an operator restarted after a crash takes over in seconds, not 15 s.
  return startDaemon(
      dir, "operator",
      {op.string(), "--kubeconfig", kubeconfig, "--bind-address", "127.0.0.1", "--metrics-port",
       "0", "--health-port", "0", "--leader-elect-lease-duration", "4",
       "--leader-elect-renew-deadline", "3", "--leader-elect-retry-period", "1"});
}

// SIGTERM to the pid in `pid_path`, SIGKILL after 30 s; removes the pid file.
void stopPidFile(const fs::path& pid_path, const std::string& what) {
  auto pid = readPid(pid_path);
  std::error_code ec;
  if (!pid || !alive(*pid)) {
    fs::remove(pid_path, ec);
    return;
  }
  kill(*pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (alive(*pid) && std::chrono::steady_clock::now() < deadline) {
    waitpid(*pid, nullptr, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (alive(*pid)) kill(*pid, SIGKILL);
  std::cout << "stopped " << what << " (pid " << *pid << ")" << std::endl;
  fs::remove(pid_path, ec);
}

// Starts `local serve` on `port` (0: any free one) and waits until it has written its pid file:
// the child's pid, or an error when it exited at start or took longer than 60 s.
core::Result<pid_t> startServer(const fs::path& dir, const std::string& self, int port) {
  const fs::path pid_path = dir / "pid";
  const fs::path log_path = dir / "apiserver.log";
  RM_ASSIGN_OR_RETURN(pid_t child,
                      spawnDetached(log_path, {self, "local", "serve", "--data-dir", dir.string(),
                                               "--port", std::to_string(port)}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) {
      return core::unavailable("the API server exited at start; see " + log_path.string());
    }
    if (auto pid = readPid(pid_path); pid && *pid == child) return child;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(child, SIGTERM);
  return core::timeoutError("the API server did not start within 60 s; see " + log_path.string());
}

// up --cluster-kubeconfig: <data-dir>/kubeconfig becomes a copy of the given one (what `run`,
// tests and users read), and only the kubelet and operator start.
core::Status join(const fs::path& dir, const std::string& self, const CommonFlags& flags) {
  std::error_code ec;
  fs::copy_file(flags.cluster_kubeconfig, dir / "kubeconfig", fs::copy_options::overwrite_existing,
                ec);
  if (ec) {
    return core::invalidArgument("--cluster-kubeconfig " + flags.cluster_kubeconfig + ": " +
                                 ec.message());
  }
  fs::permissions(dir / "kubeconfig", fs::perms::owner_read | fs::perms::owner_write,
                  fs::perm_options::replace, ec);
  std::cout << "joining the cluster of " << flags.cluster_kubeconfig << " (no local API server)\n"
            << "export KUBECONFIG=" << (dir / "kubeconfig").string() << std::endl;
  // That API server reads container logs from the kubelet, as from any node's.
  return startAgents(dir, self, "--log-port 0 " + flags.kubelet_flags, flags.operator_);
}

core::Status up(const CommonFlags& flags) {
  const fs::path dir = flags.data_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::internalError("cannot create " + dir.string() + ": " + ec.message());
  const fs::path pid_path = dir / "pid";
  RM_ASSIGN_OR_RETURN(std::string self, selfPath());
  if (!flags.cluster_kubeconfig.empty()) return join(dir, self, flags);
  if (auto pid = readPid(pid_path); pid && alive(*pid)) {
    std::cout << "already running (pid " << *pid << ")\n"
              << "export KUBECONFIG=" << (dir / "kubeconfig").string() << std::endl;
    return startAgents(dir, self, flags.kubelet_flags, flags.operator_);
  }
  fs::remove(pid_path, ec);
  // A kubelet and operator that outlived the API server keep dialling the address in the
  // kubeconfig: a restarted server takes the same port again (`serve` records it).
  const fs::path port_path = dir / "port";
  int previous_port = 0;  // none
  if (flags.port == 0) {
    if (auto recorded = readNumber(port_path); recorded && *recorded <= 65535) {
      previous_port = static_cast<int>(*recorded);
    }
  }
  core::Result<pid_t> child = startServer(dir, self, previous_port ? previous_port : flags.port);
  if (!child.ok() && previous_port) {
    // Someone else took the port meanwhile: the agents must follow the new one.
    std::cout << "port " << previous_port << " of the previous API server is taken; starting "
              << "on a free port and restarting the kubelet and operator" << std::endl;
    stopPidFile(dir / "operator.pid", "the operator");
    stopPidFile(dir / "kubelet.pid", "the kubelet");
    child = startServer(dir, self, 0);
  }
  if (!child.ok()) return child.status();
  std::cout << "ringmaster local API server running (pid " << *child << ", log "
            << (dir / "apiserver.log").string() << ")\n"
            << "export KUBECONFIG=" << (dir / "kubeconfig").string() << std::endl;
  return startAgents(dir, self, flags.kubelet_flags, flags.operator_);
}

core::Status down(const CommonFlags& flags) {
  // The operator first (it would recreate pods), then the kubelet (it stops its pods' processes
  // while the API server still answers).
  stopPidFile(fs::path(flags.data_dir) / "operator.pid", "the operator");
  stopPidFile(fs::path(flags.data_dir) / "kubelet.pid", "the kubelet");
  const fs::path pid_path = fs::path(flags.data_dir) / "pid";
  auto pid = readPid(pid_path);
  if (!pid || !alive(*pid)) {
    std::error_code ec;
    fs::remove(pid_path, ec);
    std::cout << "not running" << std::endl;
    return core::Status::Ok();
  }
  if (kill(*pid, SIGTERM) != 0) {
    return core::internalError("kill " + std::to_string(*pid) + ": " + strerror(errno));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (alive(*pid) && std::chrono::steady_clock::now() < deadline) {
    waitpid(*pid, nullptr, WNOHANG);  // reaps it when it is our child (tests)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (alive(*pid)) {
    kill(*pid, SIGKILL);
    std::cout << "killed pid " << *pid << " (no exit 30 s after SIGTERM)" << std::endl;
  } else {
    std::cout << "stopped pid " << *pid << std::endl;
  }
  std::error_code ec;
  fs::remove(pid_path, ec);
  return core::Status::Ok();
}

core::Status run(const std::vector<std::string>& args) {
  RunOptions options;
  options.data_dir = defaultDataDir();
  int64_t timeout_seconds = 3600;
  CommonFlags up_flags;
  core::FlagSet fs("ringmaster local run JOB.yaml",
                   "Brings up the local cluster (API server, kubelet, operator), installs the "
                   "TrainingJob and Experiment CRDs, applies JOB.yaml, shows the progress of its "
                   "TrainingJob (or of its Experiment, a hyperparameter search) until it ends and "
                   "prints the outcome (a search's trials, best first). Exits 0 when it "
                   "Succeeded, 1 when it Failed. The cluster stays up (`ringmaster local down` "
                   "stops it).");
  fs.addString("data-dir", &options.data_dir,
               "directory for the PKI, token, kubeconfig, state, pid files and logs",
               "RINGMASTER_LOCAL_DATA_DIR");
  fs.addInt("timeout-seconds", &timeout_seconds, "give up waiting for the job after this long");
  addAgentFlags(fs, &up_flags);
  std::vector<const char*> argv{"ringmaster-local-run"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::vector<std::string> positional;
  bool help = false;
  RM_RETURN_IF_ERROR(fs.parse(static_cast<int>(argv.size()), argv.data(), &help, &positional));
  if (help) {
    std::cout << fs.help();
    return core::Status::Ok();
  }
  // Word for word what stops this cluster: this binary, and the data dir unless the default.
  RM_ASSIGN_OR_RETURN(std::string self, selfPath());
  options.stop_command = shellWord(self) + " local down";
  if (options.data_dir != defaultDataDir()) {
    options.stop_command += " --data-dir " + shellWord(options.data_dir);
  }
  if (positional.size() != 1) {
    std::cout << fs.help();
    return core::usageError("ringmaster local run takes one manifest (JOB.yaml)");
  }
  if (timeout_seconds <= 0) return core::usageError("--timeout-seconds must be positive");
  options.manifest = positional[0];
  options.timeout = std::chrono::seconds(timeout_seconds);
  return runJob(options, [&up_flags](const std::string& data_dir) {
    up_flags.data_dir = data_dir;
    return up(up_flags);
  });
}

}  // namespace

core::Status runLocalCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? core::usageError("missing command") : core::Status::Ok();
  }
  const std::string& cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  CommonFlags flags;
  bool help = false;
  if (cmd == "serve") {
    RM_RETURN_IF_ERROR(
        parseFlags(cmd, "Runs the local API server in the foreground.", true, rest, &flags, &help));
    return help ? core::Status::Ok() : serve(flags);
  }
  if (cmd == "up") {
    RM_RETURN_IF_ERROR(parseFlags(cmd,
                                  "Starts the local API server, kubelet and operator in the "
                                  "background.",
                                  true, rest, &flags, &help, /*with_agents=*/true));
    return help ? core::Status::Ok() : up(flags);
  }
  if (cmd == "down") {
    RM_RETURN_IF_ERROR(parseFlags(cmd, "Stops the local API server, kubelet and operator.", false,
                                  rest, &flags, &help));
    return help ? core::Status::Ok() : down(flags);
  }
  if (cmd == "run") return run(rest);
  std::cout << kUsage;
  return core::usageError("unknown command: ringmaster local " + cmd);
}

}  // namespace ringmaster::local
