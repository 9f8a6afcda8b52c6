#include "local/kubelet/session.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace ringmaster::local::kubelet {

namespace {

// One whitespace-separated number; nullopt when `word` is not one.
template <class T>
std::optional<T> number(std::string_view word) {
  T value{};
  auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || ptr != word.data() + word.size()) return std::nullopt;
  return value;
}

}  // namespace

// "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses, so the fields
// are counted from the last ')'.
std::optional<ProcessStat> parseStatLine(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  ProcessStat out;
  const size_t open = stat.find(" (");
  if (open != std::string_view::npos) out.pid = number<pid_t>(stat.substr(0, open)).value_or(0);
  std::string_view rest = stat.substr(paren + 1);
  // Fields after comm, from 0: state, ppid, pgrp, session, ... utime 11, stime 12, cutime 13,
  // cstime 14, ... rss 21.
  constexpr int kSession = 3, kUtime = 11, kStime = 12, kCutime = 13, kCstime = 14, kRss = 21;
  for (int field = 0; field <= kRss; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) {
      if (field <= kSession) return std::nullopt;
      break;
    }
    const size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view word = rest.substr(0, end);
    rest.remove_prefix(end);
    if (field == 0) {
      if (word.size() != 1) return std::nullopt;
      out.state = word[0];
    } else if (field == kSession) {
      auto session = number<long>(word);
      if (!session || *session < 0) return std::nullopt;
      out.session = static_cast<pid_t>(*session);
    } else if (field == kUtime || field == kStime) {
      out.cpu_ticks += number<uint64_t>(word).value_or(0);
    } else if (field == kCutime || field == kCstime) {
      out.reaped_cpu_ticks += number<uint64_t>(word).value_or(0);
    } else if (field == kRss) {
      out.rss_pages = std::max<int64_t>(0, number<int64_t>(word).value_or(0));
    }
  }
  return out;
}

std::optional<pid_t> sessionOfStatLine(std::string_view stat) {
  auto fields = parseStatLine(stat);
  if (!fields) return std::nullopt;
  return fields->session;
}

std::vector<ProcessStat> liveProcesses() {
  std::vector<ProcessStat> processes;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return processes;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // gone meanwhile
    auto fields = parseStatLine(line);
    if (!fields || fields->state == 'Z') continue;
    fields->pid = pid;
    processes.push_back(*fields);
  }
  closedir(proc);
  return processes;
}

std::vector<pid_t> sessionMembers(pid_t sid) {
  std::vector<pid_t> members;
  for (const ProcessStat& p : liveProcesses())
    if (p.session == sid) members.push_back(p.pid);
  return members;
}

std::map<pid_t, SessionUsage> sessionUsage(const std::vector<ProcessStat>& processes,
                                           const std::set<pid_t>& sessions, long ticks_per_second,
                                           long page_size) {
  std::map<pid_t, SessionUsage> usage;
  if (ticks_per_second <= 0) return usage;
  for (const ProcessStat& p : processes) {
    if (!sessions.count(p.session)) continue;
    SessionUsage& u = usage[p.session];
    u.cpu_seconds += static_cast<double>(p.cpu_ticks + p.reaped_cpu_ticks) /
                     static_cast<double>(ticks_per_second);
    u.memory_bytes += p.rss_pages * page_size;
  }
  return usage;
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
