#include "process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "process_tree.h"

extern char** environ;

namespace ringmaster::testutil {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int countLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

http::Response httpGet(const std::string& host, int port, const std::string& path) {
  core::Result<http::Response> answer = http::get(http::url(host, port, path));
  return answer.ok() ? *std::move(answer) : http::Response{};
}

http::Response httpGet(int port, const std::string& path) {
  return httpGet("127.0.0.1", port, path);
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "rm-test-XXXXXX").string();
  char* made = mkdtemp(tmpl.data());
  path_ = made ? made : "";
}
TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty() && !std::getenv("RM_KEEP_TEMP")) std::filesystem::remove_all(path_, ec);
}

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string findHelm() {
  if (const char* h = std::getenv("RM_HELM"); h && *h) return h;
  for (const char* dir : {"/usr/local/bin", "/usr/bin"}) {
    const std::string path = std::string(dir) + "/helm";
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string findKubectl() {
  for (const char* p : {"/usr/lib/google-cloud-sdk/bin/kubectl.1.32", "/usr/local/bin/kubectl",
                        "/usr/bin/kubectl"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

bool haveFashionMnist() {
  return std::filesystem::exists(kFashionMnistDir + "/train-images-idx3-ubyte.gz");
}

std::string binaryPath(const std::string& relative) {
  const char* dir = std::getenv("RM_BINARY_DIR");
  return std::string(dir ? dir : ".") + "/" + relative;
}

Process::Process(std::vector<std::string> argv, std::map<std::string, std::string> env)
    : argv_(std::move(argv)), env_(std::move(env)) {
  static int counter = 0;
  const std::string base =
      (std::filesystem::temp_directory_path() /
       ("rm-proc-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
          .string();
  out_path_ = base + ".out";
  err_path_ = base + ".err";
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
  std::remove(out_path_.c_str());
  std::remove(err_path_.c_str());
}

void Process::start() {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    if (!env_.count(key)) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env_)
    if (!v.empty()) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_) args.push_back(s.data());
  args.push_back(nullptr);

  pid_ = fork();
  if (pid_ == 0) {
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(args[0], args.data(), envp.data());
    dprintf(STDERR_FILENO, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
}

void Process::signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

bool Process::running() {
  if (pid_ <= 0 || reaped_) return false;
  pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

std::string Process::stdoutSoFar() const { return readFile(out_path_); }

std::string Process::stderrSoFar() const { return readFile(err_path_); }

ProcessResult Process::wait(std::chrono::seconds limit) {
  ProcessResult result;
  std::string tree_at_timeout;  // what its processes were doing just before the SIGKILL
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!reaped_) {
    pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      tree_at_timeout = describeProcessTree(pid_);
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // polling a child, not a test sleep
  }
  if (WIFEXITED(status_)) result.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) {
    result.signaled = true;
    result.term_signal = WTERMSIG(status_);
    result.core_dumped = WCOREDUMP(status_);
  }
  result.stdout_text = readFile(out_path_);
  result.stderr_text = readFile(err_path_);
  if (result.timed_out) {
    result.stderr_text += "[testutil] no exit after " + std::to_string(limit.count()) +
                          " s; killed. Its processes then:\n" + tree_at_timeout;
  }
  return result;
}

ProcessResult run(std::vector<std::string> argv, std::map<std::string, std::string> env,
                  std::chrono::seconds limit) {
  Process p(std::move(argv), std::move(env));
  p.start();
  return p.wait(limit);
}

bool liveProcess(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

}  // namespace ringmaster::testutil
