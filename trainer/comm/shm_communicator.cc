#include "trainer/comm/shm_communicator.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <random>
#include <sstream>
#include <vector>

#include "ringmaster/core/log.h"
#include "trainer/comm/call_context.h"
#include "trainer/comm/rank_keys.h"
#include "trainer/comm/sum_kernel.h"

namespace ringmaster::trainer::comm {
namespace {

constexpr uint64_t kMagic = 0x4d4f434d48534d52ull;  // "RMSHMCOM"
constexpr uint32_t kVersion = 3;
constexpr size_t kPage = 4096;
constexpr size_t kSliceAlign = 16;  // floats: slices start on their own cache line
constexpr int kSlots = 2;

enum Kind : uint32_t { kAllreduceSum = 1, kBroadcast = 2, kBarrier = 3 };
enum Which : int { kPosted = 0, kReduced = 1, kDone = 2, kFinished = 3 /* reduced + done */ };
constexpr std::chrono::milliseconds kMaxSleep{1};
// How often a sleeping waiter checks that the ranks it waits for still exist.
constexpr std::chrono::milliseconds kLivenessEvery{100};

const char* kindName(uint32_t kind) {
  switch (kind) {
    case kAllreduceSum:
      return "allreduceSum";
    case kBroadcast:
      return "broadcast";
    case kBarrier:
      return "barrier";
  }
  return "nothing";
}

const char* phaseName(int which) {
  switch (which) {
    case kPosted:
      return "post its chunk";
    case kReduced:
      return "reduce its slice";
    case kDone:
      return "finish the previous step";
  }
  return "?";
}

struct Descriptor {
  uint64_t bytes;
  uint32_t kind;
  int32_t root;
};

struct alignas(64) Header {
  uint64_t magic;
  uint32_t version;
  uint32_t world_size;
  uint64_t token;
  uint64_t slot_bytes;
  uint64_t ring_bytes;
  alignas(64) std::atomic<uint32_t> aborted_by;  // 0, or the failing rank + 1
  alignas(64) std::atomic<uint32_t> wake_word;   // futex word, bumped to wake sleepers
  std::atomic<uint32_t> sleepers;                // ranks asleep (or about to be) on wake_word
};

struct alignas(64) Control {
  std::atomic<uint32_t> posted;    // steps whose data is in my slot (and descriptor written)
  std::atomic<uint64_t> progress;  // steps reduced (low half) and done (high half): one store
                                   // raises both when a step needs no separate reduce phase
  Descriptor desc[kSlots];         // written before `posted` is raised for that slot's step
  // Who maps this block, for liveness checks: written once before the first step.
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> pid_namespace;  // inode of /proc/self/ns/pid (0: unknown)
};

uint32_t counterOf(const Control& c, int which) {
  if (which == kPosted) return c.posted.load(std::memory_order_acquire);
  const uint64_t progress = c.progress.load(std::memory_order_acquire);
  return static_cast<uint32_t>(which == kReduced ? progress : progress >> 32);
}

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free");

size_t roundUp(size_t v, size_t m) { return (v + m - 1) / m * m; }

size_t controlOffset() { return roundUp(sizeof(Header), 64); }
size_t slotsOffset(int size) { return roundUp(controlOffset() + size * sizeof(Control), kPage); }
size_t slotsEnd(int size, size_t slot_bytes) {
  return slotsOffset(size) + static_cast<size_t>(size) * kSlots * slot_bytes;
}
// One channel per ordered pair (from, to), from != to.
size_t channelCount(int size, size_t ring_bytes) {
  return ring_bytes == 0 ? 0 : static_cast<size_t>(size) * (size - 1);
}
size_t channelIndex(int size, int from, int to) {
  return static_cast<size_t>(from) * (size - 1) + (to < from ? to : to - 1);
}
size_t ringsOffset(int size, size_t slot_bytes, size_t ring_bytes) {
  return roundUp(
      slotsEnd(size, slot_bytes) + channelCount(size, ring_bytes) * sizeof(ShmChannelCounters),
      kPage);
}
size_t segmentBytes(int size, size_t slot_bytes, size_t ring_bytes) {
  return ringsOffset(size, slot_bytes, ring_bytes) + channelCount(size, ring_bytes) * ring_bytes;
}

// A point-to-point message's length header, and the payload's padding to keep every header
// aligned in the ring.
constexpr size_t kMessageHeader = sizeof(uint64_t);
size_t paddingOf(size_t bytes) { return roundUp(bytes, kMessageHeader) - bytes; }

// a >= b for counters that wrap.
bool reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds max) {
  timespec ts{};
  ts.tv_sec = max.count() / 1000000000;
  ts.tv_nsec = max.count() % 1000000000;
  // Shared (not PRIVATE): the word lives in memory mapped by several processes. Spurious
  // returns (EAGAIN, EINTR, ETIMEDOUT) are fine, the caller rechecks.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Slice r of `n` elements over `size` ranks, cache-line aligned: [begin, end).
std::pair<size_t, size_t> alignedSliceOf(size_t n, int size, int r) {
  const size_t per = roundUp((n + size - 1) / size, kSliceAlign);
  const size_t begin = std::min(n, per * r);
  return {begin, std::min(n, begin + per)};
}

std::string uniqueSegmentName() {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::ostringstream name;
  name << "/ringmaster-" << ::getpid() << "-" << std::hex << r;
  return name.str();
}

// This process's PID namespace (the inode of /proc/self/ns/pid), 0 when unknown: pids are only
// comparable between processes of one namespace.
uint64_t pidNamespace() {
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

uint64_t randomToken() {
  std::random_device rd;
  return ((static_cast<uint64_t>(rd()) << 32) ^ rd()) | 1;
}

// Maps the segment on a non-zero rank and checks that it is the one rank 0 described.
core::Result<std::unique_ptr<ShmSegment>> openAndCheck(const std::string& name, uint64_t token,
                                                       const ShmConfig& config) {
  RM_ASSIGN_OR_RETURN(
      auto segment,
      ShmSegment::open(name, segmentBytes(config.size, config.slot_bytes, config.ring_bytes)));
  const auto* h = static_cast<const Header*>(segment->data());
  if (h->magic != kMagic || h->version != kVersion || h->token != token ||
      h->world_size != static_cast<uint32_t>(config.size) || h->slot_bytes != config.slot_bytes ||
      h->ring_bytes != config.ring_bytes) {
    return core::invalidArgument("shm segment " + name + " is not the one rank 0 created");
  }
  return segment;
}

}  // namespace

size_t defaultShmRingBytes(int size) {
  constexpr size_t kBudget = 32 << 20, kMax = 4 << 20, kMin = 256 << 10;
  if (size < 2) return kMin;
  const size_t pairs = static_cast<size_t>(size) * (size - 1);
  return std::clamp(kBudget / pairs / kPage * kPage, kMin, kMax);
}

struct ShmCommunicator::Outgoing {
  const char* data;
  size_t bytes;  // payload
  int peer;
  std::string tag;
  Clock::time_point deadline;
  uint64_t header;  // the length, as it goes into the ring
  size_t sent = 0;  // of header + payload + padding
  bool done = false;
  size_t total() const { return kMessageHeader + bytes + paddingOf(bytes); }
};

// Waits (moving every queued send on meanwhile) until its message is wholly in the ring.
class ShmCommunicator::QueuedSend final : public PendingSend {
 public:
  QueuedSend(ShmCommunicator* comm, std::shared_ptr<Outgoing> message)
      : comm_(comm), message_(std::move(message)) {}
  ~QueuedSend() override { (void)wait(); }
  core::Status wait() override {
    if (!waited_) {
      result_ = comm_->waitSent(*message_);
      waited_ = true;
    }
    return result_;
  }

 private:
  ShmCommunicator* comm_;
  std::shared_ptr<Outgoing> message_;
  bool waited_ = false;
  core::Status result_;
};

struct ShmCommunicator::Layout {
  Header* header;
  Control* control;  // [size]
  char* slots;       // [size][kSlots][slot_bytes]
};

core::Result<std::unique_ptr<ShmCommunicator>> ShmCommunicator::create(const ShmConfig& config) {
  const std::string what = "rank " + std::to_string(config.rank) + ": shm setup (world " +
                           std::to_string(config.size) + ")";
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
    return core::invalidArgument(what + ": rank out of range");
  }
  if (config.store == nullptr) return core::invalidArgument(what + ": no store");
  if (config.slot_bytes < kPage || config.slot_bytes % kPage != 0 ||
      config.direct_max_bytes > config.slot_bytes) {
    return core::invalidArgument(what + ": slot_bytes must be a multiple of 4096 and at least " +
                                 "direct_max_bytes");
  }
  if (config.ring_bytes % kPage != 0) {
    return core::invalidArgument(what + ": ring_bytes must be a multiple of 4096 (or 0)");
  }
  rendezvous::PrefixStore store(config.store, "shm");
  const size_t bytes = segmentBytes(config.size, config.slot_bytes, config.ring_bytes);

  // Rank 0 creates and publishes "<name> <token>", or "! <reason>" when it cannot.
  std::unique_ptr<ShmSegment> segment;
  std::string my_problem;
  if (config.rank == 0) {
    const std::string name = uniqueSegmentName();
    const uint64_t token = randomToken();
    core::Result<std::unique_ptr<ShmSegment>> created = ShmSegment::create(name, bytes);
    std::string published;
    if (created.ok()) {
      segment = std::move(created).value();
      auto* h = new (segment->data()) Header{};
      h->magic = kMagic;
      h->version = kVersion;
      h->world_size = config.size;
      h->token = token;
      h->slot_bytes = config.slot_bytes;
      h->ring_bytes = config.ring_bytes;
      published = name + " " + std::to_string(token);
    } else {
      my_problem = created.status().message();
      published = "! " + my_problem;
    }
    RM_RETURN_IF_ERROR_CTX(store.set("segment", rendezvous::toBytes(published)), what);
  } else {
    core::Result<rendezvous::Bytes> published_bytes = store.get("segment", config.timeout);
    if (!published_bytes.ok()) {
      return published_bytes.status().withContext(what + ": rank 0 did not publish the segment");
    }
    const std::string published = rendezvous::toString(*published_bytes);
    if (config.pretend_unreachable_for_testing) {
      my_problem = "pretending to be unreachable (test)";
    } else if (published.rfind("! ", 0) == 0) {
      my_problem = "rank 0 could not create it";
    } else {
      std::istringstream in(published);
      std::string name;
      uint64_t token = 0;
      in >> name >> token;
      core::Result<std::unique_ptr<ShmSegment>> opened = openAndCheck(name, token, config);
      if (opened.ok()) {
        segment = std::move(opened).value();
      } else {
        my_problem = opened.status().message();
      }
    }
  }

  // Everyone reports; everyone reads every report, so all ranks reach the same verdict.
  RM_RETURN_IF_ERROR_CTX(store.set(rankKey("open", config.rank),
                                   rendezvous::toBytes(my_problem.empty() ? "ok" : my_problem)),
                         what);
  RM_RETURN_IF_ERROR_CTX(
      waitForRankKeys(store, "open", config.size, config.timeout, "report on the segment"), what);
  std::string problems;
  for (int q = 0; q < config.size; ++q) {
    core::Result<rendezvous::Bytes> report = store.get(rankKey("open", q), config.timeout);
    if (!report.ok()) return report.status().withContext(what);
    const std::string text = rendezvous::toString(*report);
    if (text != "ok")
      problems += (problems.empty() ? "" : "; ") + ("rank " + std::to_string(q) + ": " + text);
  }
  if (segment != nullptr) {
    // Every rank has mapped it (or given up): the name is no longer needed.
    if (core::Status s = segment->unlink(); !s.ok()) {
      RM_LOG(WARN, COMM) << what << ": " << s.message();
    }
  }
  if (!problems.empty()) {
    return core::unavailable(what + ": not every rank can map the segment: " + problems);
  }
  RM_LOG(DEBUG, COMM) << "shm: rank " << config.rank << "/" << config.size << " mapped "
                      << segment->name() << " (" << bytes << " bytes)";
  return std::unique_ptr<ShmCommunicator>(new ShmCommunicator(config, std::move(segment)));
}

ShmCommunicator::ShmCommunicator(const ShmConfig& config, std::unique_ptr<ShmSegment> segment)
    : rank_(config.rank),
      size_(config.size),
      timeout_(config.timeout),
      slot_bytes_(config.slot_bytes),
      direct_max_bytes_(config.direct_max_bytes),
      spin_(config.spin),
      yield_(config.yield),
      segment_(std::move(segment)),
      layout_(std::make_unique<Layout>()),
      inputs_(config.size),
      ring_bytes_(config.ring_bytes),
      to_(config.size),
      from_(config.size),
      queued_(config.size) {
  char* base = static_cast<char*>(segment_->data());
  layout_->header = reinterpret_cast<Header*>(base);
  layout_->control = reinterpret_cast<Control*>(base + controlOffset());
  layout_->slots = base + slotsOffset(size_);
  if (ring_bytes_ > 0) {
    // The segment is zero-filled, which is what fresh counters hold.
    auto* counters = reinterpret_cast<ShmChannelCounters*>(base + slotsEnd(size_, slot_bytes_));
    char* rings = base + ringsOffset(size_, slot_bytes_, ring_bytes_);
    auto channel = [&](int from, int to) {
      const size_t i = channelIndex(size_, from, to);
      return ShmChannel(counters + i, rings + i * ring_bytes_, ring_bytes_);
    };
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      to_[q] = channel(rank_, q);
      from_[q] = channel(q, rank_);
    }
  }
  my_pid_namespace_ = pidNamespace();
  layout_->control[rank_].pid_namespace.store(my_pid_namespace_, std::memory_order_relaxed);
  layout_->control[rank_].pid.store(::getpid(), std::memory_order_release);
}

std::optional<std::string> ShmCommunicator::exitedRank(int q) const {
  if (my_pid_namespace_ == 0) return std::nullopt;
  const Control& c = layout_->control[q];
  const pid_t pid = c.pid.load(std::memory_order_acquire);
  // Another namespace's pid means nothing here (pods sharing /dev/shm but not pids).
  if (pid <= 0 || pid == ::getpid() ||
      c.pid_namespace.load(std::memory_order_relaxed) != my_pid_namespace_) {
    return std::nullopt;
  }
  if (::kill(pid, 0) != 0 && errno == ESRCH) {
    return "rank " + std::to_string(q) + " (pid " + std::to_string(pid) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> ShmCommunicator::goneRank(int which, uint32_t target) const {
  for (int q = 0; q < size_; ++q) {
    if (q == rank_ || reached(counterOf(layout_->control[q], which), target)) continue;
    if (std::optional<std::string> gone = exitedRank(q)) return gone;
  }
  return std::nullopt;
}

ShmCommunicator::~ShmCommunicator() = default;

std::string ShmCommunicator::describe(const Call& call) const {
  if (call.description != nullptr) return *call.description;
  std::string name = call.name;
  if (call.root >= 0) name += " from rank " + std::to_string(call.root);
  return describeRankCall(rank_, name, call.tag, call.bytes);
}

core::Status ShmCommunicator::brokenError(const Call& call) const {
  return core::unavailable(describe(call) + ": broken by an earlier error: " + broken_.message());
}

char* ShmCommunicator::slot(int rank, int which_slot) const {
  return layout_->slots + (static_cast<size_t>(rank) * kSlots + which_slot) * slot_bytes_;
}

void ShmCommunicator::publish(int which, uint32_t value) {
  Control& mine = layout_->control[rank_];
  // Plain release stores: a locked instruction here would stall until the line comes back from
  // the core that polls it, which costs about a microsecond per call on a small VM.
  if (which == kPosted) {
    mine.posted.store(value, std::memory_order_release);
  } else {
    if (which == kReduced || which == kFinished) reduced_ = value;
    if (which == kDone || which == kFinished) done_ = value;
    mine.progress.store(static_cast<uint64_t>(done_) << 32 | reduced_, std::memory_order_release);
  }
  wakeSleepers();
}

void ShmCommunicator::wakeSleepers() {
  // Without a fence this check may miss a rank that is just falling asleep; such a rank sleeps
  // at most kMaxSleep before it looks again.
  Header* h = layout_->header;
  if (h->sleepers.load(std::memory_order_relaxed) != 0) {
    h->wake_word.fetch_add(1, std::memory_order_seq_cst);
    futexWakeAll(&h->wake_word);
  }
}

core::Status ShmCommunicator::fail(core::Status status) {
  if (broken_.ok()) broken_ = status;
  uint32_t expected = 0;
  Header* h = layout_->header;
  h->aborted_by.compare_exchange_strong(expected, static_cast<uint32_t>(rank_ + 1));
  h->wake_word.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(&h->wake_word);
  return status;
}

template <typename Ready, typename TimedOut, typename Gone>
core::Status ShmCommunicator::waitUntil(Ready ready, Clock::time_point deadline, const Call& call,
                                        TimedOut timedOut, Gone gone) {
  Header* h = layout_->header;
  if (ready()) return core::Status::Ok();
  const auto start = Clock::now();
  const auto spin_until = start + spin_;
  const auto yield_until = spin_until + yield_;
  auto next_liveness_check = start + kLivenessEvery;
  while (true) {
    for (int k = 0; k < 64; ++k) {
      if (ready()) return core::Status::Ok();
      cpuRelax();
    }
    if (const uint32_t by = h->aborted_by.load(std::memory_order_acquire); by != 0) {
      return fail(core::unavailable(describe(call) + ": rank " + std::to_string(by - 1) +
                                    " failed and aborted the group"));
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      if (ready()) return core::Status::Ok();
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
      return fail(core::timeoutError(describe(call) + " over shm: timed out after " +
                                     std::to_string(waited.count()) + " ms " + timedOut()));
    }
    if (now < spin_until) continue;
    if (now < yield_until) {
      sched_yield();
      continue;
    }
    if (now >= next_liveness_check) {
      // A rank killed mid-call never arrives: fail now, not at the deadline.
      next_liveness_check = now + kLivenessEvery;
      if (std::optional<std::string> why = gone()) {
        return fail(core::unavailable(describe(call) + " over shm: " + *why));
      }
    }
    h->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t word = h->wake_word.load(std::memory_order_seq_cst);
    if (!ready() && h->aborted_by.load(std::memory_order_acquire) == 0) {
      // Bounded: a wake can be missed (see wakeSleepers), and the deadline must hold.
      futexWait(&h->wake_word, word, std::min<std::chrono::nanoseconds>(deadline - now, kMaxSleep));
    }
    h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

core::Status ShmCommunicator::waitAll(int which, uint32_t target, Clock::time_point deadline,
                                      const Call& call) {
  auto all_reached = [&] {
    // A neighbour may be waiting for the rest of a started send before it joins this call.
    if (queued_count_ > 0) progressSends();
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      if (!reached(counterOf(layout_->control[q], which), target)) {
        return false;
      }
    }
    return true;
  };
  auto missing = [&] {
    std::string ranks;
    for (int q = 0; q < size_; ++q) {
      if (q == rank_ || reached(counterOf(layout_->control[q], which), target)) continue;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
    }
    return "waiting for rank(s) " + ranks + " to " + phaseName(which) + " (step " +
           std::to_string(target) + ")";
  };
  auto gone = [&]() -> std::optional<std::string> {
    std::optional<std::string> rank = goneRank(which, target);
    if (!rank) return std::nullopt;
    return *rank + " exited before it could " + phaseName(which) + " (step " +
           std::to_string(target) + ")";
  };
  return waitUntil(all_reached, deadline, call, missing, gone);
}

core::Status ShmCommunicator::beginStep(uint32_t kind, uint64_t bytes, int root,
                                        Clock::time_point deadline, const Call& call) {
  // A rank that failed may have left its counters half-way: do not build on them.
  if (const uint32_t by = layout_->header->aborted_by.load(std::memory_order_acquire); by != 0) {
    return fail(core::unavailable(describe(call) + ": rank " + std::to_string(by - 1) +
                                  " failed and aborted the group"));
  }
  // Slot step_ % 2 was last used by step step_ - 2: every rank must be done with it.
  RM_RETURN_IF_ERROR(waitAll(kDone, step_ - 1, deadline, call));
  layout_->control[rank_].desc[step_ % kSlots] = Descriptor{bytes, kind, root};
  return core::Status::Ok();
}

core::Status ShmCommunicator::checkDescriptors(const Call& call) {
  const Descriptor& mine = layout_->control[rank_].desc[step_ % kSlots];
  for (int q = 0; q < size_; ++q) {
    const Descriptor& theirs = layout_->control[q].desc[step_ % kSlots];
    if (theirs.kind != mine.kind || theirs.bytes != mine.bytes || theirs.root != mine.root) {
      return fail(core::invalidArgument(describe(call) + ": rank " + std::to_string(q) +
                                        " called " + kindName(theirs.kind) + " (" +
                                        std::to_string(theirs.bytes) + " bytes, root " +
                                        std::to_string(theirs.root) + ")"));
    }
  }
  return core::Status::Ok();
}

std::string ShmCommunicator::allreduceAlgorithm(size_t bytes) const {
  return isDirect(bytes) ? "direct" : "reduce_scatter_allgather";
}

core::Status ShmCommunicator::allreduceSum(float* data, size_t count,
                                           const AllreduceOptions& opts) {
  const auto start = Clock::now();
  const size_t bytes = count * sizeof(float);
  const Call call{"allreduceSum", opts.tag, bytes, -1};
  if (!broken_.ok()) return brokenError(call);
  const auto deadline = start + (opts.timeout.count() > 0 ? opts.timeout : timeout_);
  const size_t chunk_elems = slot_bytes_ / sizeof(float);
  const bool direct = isDirect(bytes);
  std::vector<const float*>& in = inputs_;

  for (size_t off = 0; off < count; off += chunk_elems) {
    const size_t n = std::min(chunk_elems, count - off);
    const int s = static_cast<int>(step_ % kSlots);
    RM_RETURN_IF_ERROR(beginStep(kAllreduceSum, bytes, -1, deadline, call));
    float* mine = reinterpret_cast<float*>(slot(rank_, s));
    if (direct) {
      std::memcpy(mine, data + off, n * sizeof(float));
    } else {
      // Only the slices that others reduce: my own slice I read from my buffer.
      for (int q = 0; q < size_; ++q) {
        const auto [qb, qe] = alignedSliceOf(n, size_, q);
        if (q != rank_ && qe > qb)
          std::memcpy(mine + qb, data + off + qb, (qe - qb) * sizeof(float));
      }
    }
    publish(kPosted, step_ + 1);
    RM_RETURN_IF_ERROR(waitAll(kPosted, step_ + 1, deadline, call));
    RM_RETURN_IF_ERROR(checkDescriptors(call));

    if (direct) {
      for (int q = 0; q < size_; ++q) in[q] = reinterpret_cast<const float*>(slot(q, s));
      in[rank_] = data + off;  // same values as my slot, but already in my cache
      sumArrays(data + off, in.data(), size_, n);
      publish(kFinished, step_ + 1);
    } else {
      // Reduce-scatter: my slice, summed over every rank's slot, into my buffer and my slot.
      const auto [b, e] = alignedSliceOf(n, size_, rank_);
      for (int q = 0; q < size_; ++q) in[q] = reinterpret_cast<const float*>(slot(q, s)) + b;
      in[rank_] = data + off + b;
      sumArraysTwice(data + off + b, mine + b, in.data(), size_, e - b);
      publish(kReduced, step_ + 1);
      RM_RETURN_IF_ERROR(waitAll(kReduced, step_ + 1, deadline, call));
      // Allgather: every other rank's reduced slice, from its slot.
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) continue;
        const auto [qb, qe] = alignedSliceOf(n, size_, q);
        if (qe > qb) {
          std::memcpy(data + off + qb, reinterpret_cast<const float*>(slot(q, s)) + qb,
                      (qe - qb) * sizeof(float));
        }
      }
      publish(kDone, step_ + 1);
    }
    ++step_;
  }
  countAllreduce(bytes, start);
  return core::Status::Ok();
}

core::Status ShmCommunicator::broadcast(void* data, size_t bytes, int root) {
  const Call call{"broadcast", {}, bytes, root};
  if (root < 0 || root >= size_)
    return core::invalidArgument(describe(call) + ": root out of range");
  if (!broken_.ok()) return brokenError(call);
  const auto deadline = Clock::now() + timeout_;
  char* p = static_cast<char*>(data);
  for (size_t off = 0; off < bytes; off += slot_bytes_) {
    const size_t n = std::min(slot_bytes_, bytes - off);
    const int s = static_cast<int>(step_ % kSlots);
    RM_RETURN_IF_ERROR(beginStep(kBroadcast, bytes, root, deadline, call));
    if (rank_ == root) std::memcpy(slot(rank_, s), p + off, n);
    publish(kPosted, step_ + 1);
    RM_RETURN_IF_ERROR(waitAll(kPosted, step_ + 1, deadline, call));
    RM_RETURN_IF_ERROR(checkDescriptors(call));
    if (rank_ != root) std::memcpy(p + off, slot(root, s), n);
    publish(kFinished, step_ + 1);
    ++step_;
  }
  return core::Status::Ok();
}

core::Status ShmCommunicator::barrier() {
  const Call call{"barrier", {}, 0, -1};
  if (!broken_.ok()) return brokenError(call);
  const auto deadline = Clock::now() + timeout_;
  RM_RETURN_IF_ERROR(beginStep(kBarrier, 0, -1, deadline, call));
  publish(kPosted, step_ + 1);
  RM_RETURN_IF_ERROR(waitAll(kPosted, step_ + 1, deadline, call));
  RM_RETURN_IF_ERROR(checkDescriptors(call));
  publish(kFinished, step_ + 1);
  ++step_;
  return core::Status::Ok();
}

core::Status ShmCommunicator::checkPointToPoint(int peer, const std::string& what) const {
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  if (ring_bytes_ == 0) {
    return core::invalidArgument(what +
                                 ": this shm communicator was made without point-to-point "
                                 "rings (ShmConfig::ring_bytes 0)");
  }
  return core::Status::Ok();
}

void ShmCommunicator::progressSends() {
  bool moved = false;
  for (auto& queue : queued_) {
    while (!queue.empty()) {
      Outgoing& m = *queue.front();
      ShmChannel& ring = to_[m.peer];
      // Header, payload and padding in one stream: each write takes what fits.
      const size_t payload_end = kMessageHeader + m.bytes;
      while (m.sent < m.total()) {
        size_t n = 0;
        if (m.sent < kMessageHeader) {
          // Headers never straddle the ring's end: everything in it is a multiple of 8 long.
          n = ring.write(&m.header, kMessageHeader);
        } else if (m.sent < payload_end) {
          n = ring.write(m.data + (m.sent - kMessageHeader), payload_end - m.sent);
        } else {
          n = ring.write(nullptr, m.total() - m.sent);
        }
        if (n == 0) break;
        m.sent += n;
        moved = true;
      }
      if (m.sent < m.total()) break;  // the ring is full: later messages to this peer wait
      m.done = true;
      queue.pop_front();
      --queued_count_;
    }
  }
  if (moved) wakeSleepers();
}

core::Result<std::unique_ptr<PendingSend>> ShmCommunicator::startSend(
    const void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("send to", peer, opts, bytes);
  RM_RETURN_IF_ERROR(checkPointToPoint(peer, what));
  if (!broken_.ok()) return brokenError(Call{"send", opts.tag, bytes, -1, &what});
  auto message = std::make_shared<Outgoing>();
  message->data = static_cast<const char*>(data);
  message->bytes = bytes;
  message->peer = peer;
  message->tag = opts.tag;
  message->deadline = Clock::now() + (opts.timeout.count() > 0 ? opts.timeout : timeout_);
  message->header = bytes;
  queued_[peer].push_back(message);
  ++queued_count_;
  progressSends();
  return std::unique_ptr<PendingSend>(std::make_unique<QueuedSend>(this, std::move(message)));
}

core::Status ShmCommunicator::waitSent(Outgoing& m) {
  if (m.done) return core::Status::Ok();
  const std::string what = describePointToPoint("send to", m.peer, {.tag = m.tag}, m.bytes);
  const Call call{"send", m.tag, m.bytes, -1, &what};
  if (!broken_.ok()) return brokenError(call);
  return waitUntil(
      [&] {
        progressSends();
        return m.done;
      },
      m.deadline, call,
      [&] {
        const size_t handed = std::min(m.sent, kMessageHeader + m.bytes);
        return "waiting for rank " + std::to_string(m.peer) + " to make room (" +
               std::to_string(handed - std::min(handed, kMessageHeader)) + " of " +
               std::to_string(m.bytes) + " bytes handed over)";
      },
      [&]() -> std::optional<std::string> {
        std::optional<std::string> rank = exitedRank(m.peer);
        if (!rank) return std::nullopt;
        return *rank + " exited before it took the message";
      });
}

core::Status ShmCommunicator::send(const void* data, size_t bytes, int peer,
                                   const PointToPointOptions& opts) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<PendingSend> pending, startSend(data, bytes, peer, opts));
  return pending->wait();
}

core::Status ShmCommunicator::recv(void* data, size_t bytes, int peer,
                                   const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("receive from", peer, opts, bytes);
  RM_RETURN_IF_ERROR(checkPointToPoint(peer, what));
  const Call call{"recv", opts.tag, bytes, -1, &what};
  if (!broken_.ok()) return brokenError(call);
  const auto deadline = Clock::now() + (opts.timeout.count() > 0 ? opts.timeout : timeout_);
  ShmChannel& ring = from_[peer];
  size_t received = 0;  // of the payload
  auto wait = [&](size_t need, const char* part) {
    return waitUntil(
        [&] {
          if (queued_count_ > 0) progressSends();  // the peer may be waiting for ours first
          return ring.readable() >= need;
        },
        deadline, call,
        [&] {
          return std::string("waiting for ") + part + " (" + std::to_string(received) + " of " +
                 std::to_string(bytes) + " bytes arrived)";
        },
        [&]() -> std::optional<std::string> {
          std::optional<std::string> rank = exitedRank(peer);
          if (!rank) return std::nullopt;
          return *rank + " exited before it sent " + part;
        });
  };

  RM_RETURN_IF_ERROR(wait(kMessageHeader, "the message"));
  uint64_t length = 0;
  ring.read(&length, kMessageHeader);
  wakeSleepers();  // the sender may be waiting for room
  if (length != bytes) {
    return fail(core::invalidArgument(what + ": rank " + std::to_string(peer) + " sent " +
                                      std::to_string(length) + " bytes"));
  }
  char* out = static_cast<char*>(data);
  const size_t total = bytes + paddingOf(bytes);
  for (size_t taken = 0; taken < total;) {
    RM_RETURN_IF_ERROR(wait(1, "the rest of the message"));
    const size_t n =
        taken < bytes ? ring.read(out + taken, bytes - taken) : ring.read(nullptr, total - taken);
    taken += n;
    received = std::min(taken, bytes);
    wakeSleepers();  // the sender may be waiting for room
  }
  return core::Status::Ok();
}

}  // namespace ringmaster::trainer::comm
