#pragma once
// Leveled, subsystem logging: one line per event on stderr,
//   "2026-11-22T10:00:00.123Z I STEP  [fmnist rank 1/2] epoch 3 loss 0.31"
// A disabled level costs one relaxed atomic load (RM_LOG checks before building the line).
//
// Thread-safety: all functions are thread-safe; lines from different threads never interleave.
// The line prefix (job, rank) is per thread, so N ranks running as threads in one test process
// each log with their own prefix. Failure: writing a log line never fails the caller.

#include <atomic>
#include <sstream>
#include <string>
#include <string_view>

namespace ringmaster::core::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };
enum class Subsystem {
  kCore,
  kConfig,
  kData,
  kModel,
  kStep,
  kComm,
  kRdzv,
  kCkpt,
  kMetrics,
  kWatch,
  kReconcile,
  kKube,
  kLocal,
  kLaunch,
  kBench
};

std::string_view levelName(Level level);
std::string_view subsystemName(Subsystem subsystem);

// Global threshold; set from RINGMASTER_LOG_LEVEL (error|warn|info|debug|trace) by
// initFromEnv() or explicitly.
void setLevel(Level level);
Level level();
bool parseLevel(std::string_view text, Level* out);
void initFromEnv();

// The prefix for lines from the calling thread ("fmnist rank 1/2"); inherited by no one.
// setDefaultPrefix() sets it for threads that have not set their own.
void setThreadPrefix(std::string prefix);
void setDefaultPrefix(std::string prefix);

namespace detail {
extern std::atomic<int> g_level;
void emit(Level level, Subsystem subsystem, const std::string& text);

class LineBuilder {
 public:
  LineBuilder(Level level, Subsystem subsystem) : level_(level), subsystem_(subsystem) {}
  ~LineBuilder() { emit(level_, subsystem_, out_.str()); }
  template <typename T>
  LineBuilder& operator<<(const T& value) {
    out_ << value;
    return *this;
  }

 private:
  Level level_;
  Subsystem subsystem_;
  std::ostringstream out_;
};

struct Voidify {
  void operator&(const LineBuilder&) {}
};
}  // namespace detail

inline bool enabled(Level level) {
  return static_cast<int>(level) <= detail::g_level.load(std::memory_order_relaxed);
}

}  // namespace ringmaster::core::log

// RM_LOG(INFO, STEP) << "epoch " << e;   levels: ERROR WARN INFO DEBUG TRACE;
// subsystems: CORE CONFIG DATA MODEL STEP COMM RDZV CKPT METRICS WATCH RECONCILE KUBE LOCAL
// LAUNCH BENCH.
// An expression (glog's trick: `&` binds looser than `<<`), so it nests in unbraced ifs.
#define RM_LOG(LEVEL, SUBSYS)                                                  \
  !::ringmaster::core::log::enabled(RM_LOG_LEVEL_##LEVEL)                      \
      ? (void)0                                                                \
      : ::ringmaster::core::log::detail::Voidify() &                           \
            ::ringmaster::core::log::detail::LineBuilder(RM_LOG_LEVEL_##LEVEL, \
                                                         RM_LOG_SUBSYS_##SUBSYS)

#define RM_LOG_LEVEL_ERROR ::ringmaster::core::log::Level::kError
#define RM_LOG_LEVEL_WARN ::ringmaster::core::log::Level::kWarn
#define RM_LOG_LEVEL_INFO ::ringmaster::core::log::Level::kInfo
#define RM_LOG_LEVEL_DEBUG ::ringmaster::core::log::Level::kDebug
#define RM_LOG_LEVEL_TRACE ::ringmaster::core::log::Level::kTrace
#define RM_LOG_SUBSYS_CORE ::ringmaster::core::log::Subsystem::kCore
#define RM_LOG_SUBSYS_CONFIG ::ringmaster::core::log::Subsystem::kConfig
#define RM_LOG_SUBSYS_DATA ::ringmaster::core::log::Subsystem::kData
#define RM_LOG_SUBSYS_MODEL ::ringmaster::core::log::Subsystem::kModel
#define RM_LOG_SUBSYS_STEP ::ringmaster::core::log::Subsystem::kStep
#define RM_LOG_SUBSYS_COMM ::ringmaster::core::log::Subsystem::kComm
#define RM_LOG_SUBSYS_RDZV ::ringmaster::core::log::Subsystem::kRdzv
#define RM_LOG_SUBSYS_CKPT ::ringmaster::core::log::Subsystem::kCkpt
#define RM_LOG_SUBSYS_METRICS ::ringmaster::core::log::Subsystem::kMetrics
#define RM_LOG_SUBSYS_WATCH ::ringmaster::core::log::Subsystem::kWatch
#define RM_LOG_SUBSYS_RECONCILE ::ringmaster::core::log::Subsystem::kReconcile
#define RM_LOG_SUBSYS_KUBE ::ringmaster::core::log::Subsystem::kKube
#define RM_LOG_SUBSYS_LOCAL ::ringmaster::core::log::Subsystem::kLocal
#define RM_LOG_SUBSYS_LAUNCH ::ringmaster::core::log::Subsystem::kLaunch
#define RM_LOG_SUBSYS_BENCH ::ringmaster::core::log::Subsystem::kBench
