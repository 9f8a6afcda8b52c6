#include "ringmaster/core/log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace ringmaster::core::log {

namespace detail {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
}  // namespace detail

namespace {
std::mutex g_mu;
std::string g_default_prefix;       // guarded by g_mu
thread_local std::string t_prefix;  // empty: use the default
thread_local bool t_prefix_set = false;
}  // namespace

std::string_view levelName(Level level) {
  switch (level) {
    case Level::kError:
      return "E";
    case Level::kWarn:
      return "W";
    case Level::kInfo:
      return "I";
    case Level::kDebug:
      return "D";
    case Level::kTrace:
      return "T";
  }
  return "?";
}

std::string_view subsystemName(Subsystem s) {
  switch (s) {
    case Subsystem::kCore:
      return "CORE";
    case Subsystem::kConfig:
      return "CONFIG";
    case Subsystem::kData:
      return "DATA";
    case Subsystem::kModel:
      return "MODEL";
    case Subsystem::kStep:
      return "STEP";
    case Subsystem::kComm:
      return "COMM";
    case Subsystem::kRdzv:
      return "RDZV";
    case Subsystem::kCkpt:
      return "CKPT";
    case Subsystem::kMetrics:
      return "METRICS";
    case Subsystem::kWatch:
      return "WATCH";
    case Subsystem::kReconcile:
      return "RECONCILE";
    case Subsystem::kKube:
      return "KUBE";
    case Subsystem::kLocal:
      return "LOCAL";
    case Subsystem::kLaunch:
      return "LAUNCH";
    case Subsystem::kBench:
      return "BENCH";
  }
  return "?";
}

void setLevel(Level level) { detail::g_level.store(static_cast<int>(level)); }
Level level() { return static_cast<Level>(detail::g_level.load()); }

bool parseLevel(std::string_view text, Level* out) {
  static constexpr std::pair<std::string_view, Level> kNames[] = {{"error", Level::kError},
                                                                  {"warn", Level::kWarn},
                                                                  {"info", Level::kInfo},
                                                                  {"debug", Level::kDebug},
                                                                  {"trace", Level::kTrace}};
  for (const auto& [name, value] : kNames) {
    if (text == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

void initFromEnv() {
  const char* env = std::getenv("RINGMASTER_LOG_LEVEL");
  if (env == nullptr) return;
  Level parsed;
  if (parseLevel(env, &parsed)) {
    setLevel(parsed);
  } else {
    RM_LOG(WARN, CORE) << "RINGMASTER_LOG_LEVEL=" << env
                       << " is not one of error|warn|info|debug|trace; keeping info";
  }
}

void setThreadPrefix(std::string prefix) {
  t_prefix = std::move(prefix);
  t_prefix_set = true;
}

void setDefaultPrefix(std::string prefix) {
  std::lock_guard lock(g_mu);
  g_default_prefix = std::move(prefix);
}

namespace detail {
void emit(Level level, Subsystem subsystem, const std::string& text) {
  using std::chrono::system_clock;
  const auto now = system_clock::now();
  const std::time_t secs = system_clock::to_time_t(now);
  const int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

  std::string line;
  line.reserve(text.size() + 64);
  line += stamp;
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ ", millis);
  line += ms;
  line += levelName(level);
  line += ' ';
  std::string_view sub = subsystemName(subsystem);
  line += sub;
  if (sub.size() < 7) line.append(7 - sub.size(), ' ');
  std::lock_guard lock(g_mu);
  const std::string& prefix = t_prefix_set ? t_prefix : g_default_prefix;
  if (!prefix.empty()) {
    line += " [";
    line += prefix;
    line += ']';
  }
  line += ' ';
  line += text;
  line += '\n';
  // One write per line so concurrent processes sharing stderr do not interleave mid-line.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}
}  // namespace detail

}  // namespace ringmaster::core::log
