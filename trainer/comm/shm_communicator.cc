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
constexpr uint32_t kVersion = 2;
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
size_t segmentBytes(int size, size_t slot_bytes) {
  return slotsOffset(size) + static_cast<size_t>(size) * kSlots * slot_bytes;
}

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
  RM_ASSIGN_OR_RETURN(auto segment,
                      ShmSegment::open(name, segmentBytes(config.size, config.slot_bytes)));
  const auto* h = static_cast<const Header*>(segment->data());
  if (h->magic != kMagic || h->version != kVersion || h->token != token ||
      h->world_size != static_cast<uint32_t>(config.size) || h->slot_bytes != config.slot_bytes) {
    return core::invalidArgument("shm segment " + name + " is not the one rank 0 created");
  }
  return segment;
}

}  // namespace

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
  rendezvous::PrefixStore store(config.store, "shm");
  const size_t bytes = segmentBytes(config.size, config.slot_bytes);

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
      inputs_(config.size) {
  char* base = static_cast<char*>(segment_->data());
  layout_->header = reinterpret_cast<Header*>(base);
  layout_->control = reinterpret_cast<Control*>(base + controlOffset());
  layout_->slots = base + slotsOffset(size_);
  my_pid_namespace_ = pidNamespace();
  layout_->control[rank_].pid_namespace.store(my_pid_namespace_, std::memory_order_relaxed);
  layout_->control[rank_].pid.store(::getpid(), std::memory_order_release);
}

std::optional<std::string> ShmCommunicator::goneRank(int which, uint32_t target) const {
  if (my_pid_namespace_ == 0) return std::nullopt;
  for (int q = 0; q < size_; ++q) {
    const Control& c = layout_->control[q];
    if (q == rank_ || reached(counterOf(c, which), target)) continue;
    const pid_t pid = c.pid.load(std::memory_order_acquire);
    // Another namespace's pid means nothing here (pods sharing /dev/shm but not pids).
    if (pid <= 0 || pid == ::getpid() ||
        c.pid_namespace.load(std::memory_order_relaxed) != my_pid_namespace_) {
      continue;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      return "rank " + std::to_string(q) + " (pid " + std::to_string(pid) + ")";
    }
  }
  return std::nullopt;
}

ShmCommunicator::~ShmCommunicator() = default;

std::string ShmCommunicator::describe(const Call& call) const {
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
  // Wake sleepers, if any. Without a fence this check may miss a rank that is just falling
  // asleep; such a rank sleeps at most kMaxSleep before it looks again.
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

core::Status ShmCommunicator::waitAll(int which, uint32_t target, Clock::time_point deadline,
                                      const Call& call) {
  Header* h = layout_->header;
  auto all_reached = [&] {
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      if (!reached(counterOf(layout_->control[q], which), target)) {
        return false;
      }
    }
    return true;
  };
  if (all_reached()) return core::Status::Ok();

  const auto start = Clock::now();
  const auto spin_until = start + spin_;
  const auto yield_until = spin_until + yield_;
  auto next_liveness_check = start + kLivenessEvery;
  while (true) {
    for (int k = 0; k < 64; ++k) {
      if (all_reached()) return core::Status::Ok();
      cpuRelax();
    }
    if (const uint32_t by = h->aborted_by.load(std::memory_order_acquire); by != 0) {
      return fail(core::unavailable(describe(call) + ": rank " + std::to_string(by - 1) +
                                    " failed and aborted the group"));
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      std::string missing;
      for (int q = 0; q < size_; ++q) {
        if (q == rank_ || reached(counterOf(layout_->control[q], which), target)) {
          continue;
        }
        missing += (missing.empty() ? "" : ", ") + std::to_string(q);
      }
      if (missing.empty()) return core::Status::Ok();
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
      return fail(core::timeoutError(describe(call) + " over shm: timed out after " +
                                     std::to_string(waited.count()) + " ms waiting for rank(s) " +
                                     missing + " to " + phaseName(which) + " (step " +
                                     std::to_string(target) + ")"));
    }
    if (now < spin_until) continue;
    if (now < yield_until) {
      sched_yield();
      continue;
    }
    if (now >= next_liveness_check) {
      // A rank killed mid-collective never arrives: fail now, not at the deadline.
      next_liveness_check = now + kLivenessEvery;
      if (std::optional<std::string> gone = goneRank(which, target)) {
        return fail(core::unavailable(describe(call) + " over shm: " + *gone +
                                      " exited before it could " + phaseName(which) + " (step " +
                                      std::to_string(target) + ")"));
      }
    }
    h->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t word = h->wake_word.load(std::memory_order_seq_cst);
    if (!all_reached() && h->aborted_by.load(std::memory_order_acquire) == 0) {
      // Bounded: a wake can be missed (see publish), and the deadline must hold.
      futexWait(&h->wake_word, word, std::min<std::chrono::nanoseconds>(deadline - now, kMaxSleep));
    }
    h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
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

}  // namespace ringmaster::trainer::comm
