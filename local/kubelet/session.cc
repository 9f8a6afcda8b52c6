#include "local/kubelet/session.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace ringmaster::local::kubelet {

namespace {

// "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses, so the fields
// are counted from the last ')'. Returns the state letter and the session.
struct StatFields {
  char state = '?';
  pid_t session = 0;
};

std::optional<StatFields> parseStat(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(paren + 1);
  StatFields out;
  // Fields after comm: state, ppid, pgrp, session.
  for (int field = 0; field < 4; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) return std::nullopt;
    const size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view word = rest.substr(0, end);
    if (field == 0) {
      if (word.size() != 1) return std::nullopt;
      out.state = word[0];
    } else if (field == 3) {
      long value = 0;
      auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (ec != std::errc() || ptr != word.data() + word.size() || value < 0) return std::nullopt;
      out.session = static_cast<pid_t>(value);
    }
    rest.remove_prefix(end);
  }
  return out;
}

}  // namespace

std::optional<pid_t> sessionOfStatLine(std::string_view stat) {
  auto fields = parseStat(stat);
  if (!fields) return std::nullopt;
  return fields->session;
}

std::vector<pid_t> sessionMembers(pid_t sid) {
  std::vector<pid_t> members;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return members;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // gone meanwhile
    auto fields = parseStat(line);
    if (fields && fields->session == sid && fields->state != 'Z') members.push_back(pid);
  }
  closedir(proc);
  return members;
}

int killSession(pid_t sid) {
  if (sid <= 1 || sid == getsid(0)) return 0;
  constexpr int kRounds = 50;
  int signalled = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<pid_t> members = sessionMembers(sid);
    if (members.empty()) break;
    for (pid_t pid : members) {
      if (pid != getpid() && kill(pid, SIGKILL) == 0) ++signalled;
    }
    // A process forking while it was killed may leave a child: the next round finds it.
    std::this_thread::sleep_for(std::chrono::milliseconds(round == 0 ? 1 : 10));
  }
  return signalled;
}

}  // namespace ringmaster::local::kubelet
