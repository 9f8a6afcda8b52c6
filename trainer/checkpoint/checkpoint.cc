#include "trainer/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string_view>
#include <utility>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::checkpoint {
namespace {

using core::Result;
using core::Status;
namespace fs = std::filesystem;

// Integers and floats are stored with memcpy; the format is little-endian.
static_assert(std::endian::native == std::endian::little,
              "checkpoint format assumes little-endian");

constexpr char kMagic[8] = {'R', 'M', 'C', 'K', 'P', 'T', '\n', '\x1a'};
constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".rmck";
constexpr std::string_view kTempMarker = ".rmck.tmp-";
constexpr std::string_view kRunMarkerName = "run-marker.rmck";
// magic, version, reserved, size, 4 x i64, 2 empty strings, 0 params, 0 states, checksum.
constexpr size_t kMinFileSize = 8 + 4 + 4 + 8 + 4 * 8 + 2 * 4 + 8 + 4 + 8;
constexpr size_t kSizeFieldOffset = 16;

// ---- encoding --------------------------------------------------------------------------------

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void putString(std::string& out, const std::string& s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out += s;
}

void putFloats(std::string& out, const std::vector<float>& v) {
  put<uint64_t>(out, v.size());
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string encode(const Checkpoint& c) {
  size_t payload = c.params.size();
  for (const auto& s : c.optimizer_state) payload += s.size();
  std::string out;
  out.reserve(kMinFileSize + c.model_signature.size() + c.optimizer_type.size() +
              8 * c.optimizer_state.size() + payload * sizeof(float));
  out.append(kMagic, sizeof kMagic);
  put<uint32_t>(out, kFormatVersion);
  put<uint32_t>(out, 0);
  put<uint64_t>(out, 0);  // file size, patched below
  put<int64_t>(out, c.epoch);
  put<int64_t>(out, c.step);
  put<int64_t>(out, c.step_in_epoch);
  put<int64_t>(out, c.optimizer_step);
  putString(out, c.model_signature);
  putString(out, c.optimizer_type);
  putFloats(out, c.params);
  put<uint32_t>(out, static_cast<uint32_t>(c.optimizer_state.size()));
  for (const auto& s : c.optimizer_state) putFloats(out, s);
  const uint64_t size = out.size() + sizeof(uint64_t);
  std::memcpy(out.data() + kSizeFieldOffset, &size, sizeof size);
  put<uint64_t>(out, lzma_crc64(reinterpret_cast<const uint8_t*>(out.data()), out.size(), 0));
  return out;
}

// ---- decoding --------------------------------------------------------------------------------

// Bounds-checked reads over a verified buffer; the first failure sticks.
class Cursor {
 public:
  Cursor(std::string_view bytes, size_t pos) : bytes_(bytes), pos_(pos) {}

  template <typename T>
  bool get(T* value, const char* field) {
    if (!need(sizeof(T), field)) return false;
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool getString(std::string* s, const char* field) {
    uint32_t n = 0;
    if (!get(&n, field) || !need(n, field)) return false;
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool getFloats(std::vector<float>* v, const char* field) {
    uint64_t n = 0;
    if (!get(&n, field)) return false;
    if (n > (bytes_.size() - pos_) / sizeof(float)) return fail(n, field);
    v->resize(n);
    if (n > 0) std::memcpy(v->data(), bytes_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return true;
  }
  size_t pos() const { return pos_; }
  const std::string& error() const { return error_; }

 private:
  bool need(uint64_t n, const char* field) {
    return n <= bytes_.size() - pos_ ? true : fail(n, field);
  }
  bool fail(uint64_t n, const char* field) {
    if (error_.empty()) {
      error_ = std::string(field) + " at offset " + std::to_string(pos_) + ": length " +
               std::to_string(n) + " runs past the end of the data";
    }
    return false;
  }

  std::string_view bytes_;
  size_t pos_;
  std::string error_;
};

Status corrupt(const std::string& path, const std::string& what) {
  return core::dataLoss("checkpoint " + path + ": " + what);
}

std::string hex64(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

Result<Checkpoint> decode(const std::string& path, const std::string& bytes) {
  if (bytes.size() < sizeof kMagic) {
    return corrupt(path, "truncated: " + std::to_string(bytes.size()) + " bytes");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return corrupt(path, "bad magic: not a ringmaster checkpoint");
  }
  if (bytes.size() < kMinFileSize) {
    return corrupt(path, "truncated: " + std::to_string(bytes.size()) +
                             " bytes, less than the smallest checkpoint (" +
                             std::to_string(kMinFileSize) + ")");
  }
  uint64_t recorded = 0;
  std::memcpy(&recorded, bytes.data() + kSizeFieldOffset, sizeof recorded);
  if (recorded != bytes.size()) {
    return corrupt(path, (bytes.size() < recorded ? "truncated: " : "too long: ") +
                             std::to_string(bytes.size()) + " bytes but its header says " +
                             std::to_string(recorded));
  }
  const size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  const uint64_t computed = lzma_crc64(reinterpret_cast<const uint8_t*>(bytes.data()), body, 0);
  if (stored != computed) {
    return corrupt(path, "checksum mismatch: stored CRC-64 " + hex64(stored) + ", computed " +
                             hex64(computed));
  }

  Cursor in(std::string_view(bytes.data(), body), sizeof kMagic);
  uint32_t version = 0, reserved = 0;
  uint64_t size = 0;
  in.get(&version, "version");
  if (version != kFormatVersion) {
    // The checksum is good, so this is a real file from another build: refuse, do not skip.
    return core::invalidArgument("checkpoint " + path + ": format version " +
                                 std::to_string(version) + ", this build reads version " +
                                 std::to_string(kFormatVersion));
  }
  Checkpoint c;
  uint32_t states = 0;
  bool ok = in.get(&reserved, "reserved") && in.get(&size, "size") && in.get(&c.epoch, "epoch") &&
            in.get(&c.step, "step") && in.get(&c.step_in_epoch, "step_in_epoch") &&
            in.get(&c.optimizer_step, "optimizer_step") &&
            in.getString(&c.model_signature, "model_signature") &&
            in.getString(&c.optimizer_type, "optimizer_type") &&
            in.getFloats(&c.params, "params") && in.get(&states, "optimizer state count");
  for (uint32_t i = 0; ok && i < states; ++i) {
    std::vector<float> state;
    ok = in.getFloats(&state, "optimizer state");
    c.optimizer_state.push_back(std::move(state));
  }
  if (!ok) return corrupt(path, in.error());
  if (in.pos() != body) {
    return corrupt(path, std::to_string(body - in.pos()) + " unexplained bytes at offset " +
                             std::to_string(in.pos()));
  }
  return c;
}

// ---- files -----------------------------------------------------------------------------------

Result<std::string> readWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return core::errnoError("open checkpoint " + path, errno);
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int err = errno;
      ::close(fd);
      return core::errnoError("read checkpoint " + path, err);
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return out;
}

Status writeAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return core::errnoError("write " + path, errno);
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status fsyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return core::errnoError("open checkpoint directory " + dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return core::errnoError("fsync checkpoint directory " + dir, err);
  return Status::Ok();
}

// Writes `bytes` to a temporary file beside `final_path` (its name holds kTempMarker, so a
// crash's leftover is cleaned on load), fsyncs it, renames it over `final_path` and fsyncs `dir`.
Status writeFileAtomically(const std::string& dir, const std::string& final_path,
                           const std::string& bytes) {
  std::string temp_path = final_path + std::string(kTempMarker.substr(kSuffix.size())) + "XXXXXX";
  int fd = ::mkstemp(temp_path.data());
  if (fd < 0) return core::errnoError("create temporary file in " + dir, errno);

  Status status = Status::Ok();
  if (::fchmod(fd, 0644) != 0) status = core::errnoError("fchmod " + temp_path, errno);
  if (status.ok()) status = writeAll(fd, bytes, temp_path);
  if (status.ok() && ::fsync(fd) != 0) status = core::errnoError("fsync " + temp_path, errno);
  if (::close(fd) != 0 && status.ok()) status = core::errnoError("close " + temp_path, errno);
  if (status.ok() && ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    status = core::errnoError("rename " + temp_path + " to " + final_path, errno);
  }
  if (!status.ok()) {
    ::unlink(temp_path.c_str());
    return status;
  }
  return fsyncDirectory(dir);
}

// "ckpt-<digits>.rmck" -> step; anything else -> nullopt.
std::optional<int64_t> parseStep(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  int64_t step = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size() || step < 0) return std::nullopt;
  return step;
}

struct Listing {
  std::vector<std::pair<int64_t, std::string>> checkpoints;  // (step, path), newest first
  std::vector<std::string> temporaries;
};

Result<Listing> listDirectory(const std::string& dir) {
  Listing out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(kTempMarker) != std::string::npos) {
      out.temporaries.push_back(it->path().string());
    } else if (std::optional<int64_t> step = parseStep(name)) {
      out.checkpoints.emplace_back(*step, it->path().string());
    }
  }
  if (ec) return core::errnoError("list checkpoint directory " + dir, ec.value());
  std::sort(out.checkpoints.begin(), out.checkpoints.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

void prune(const std::string& dir, const std::string& written, int keep_last) {
  Result<Listing> listing = listDirectory(dir);
  if (!listing.ok()) {
    RM_LOG(WARN, CKPT) << "not pruning old checkpoints: " << listing.status().toString();
    return;
  }
  int kept = 1;  // the checkpoint just written always stays
  for (const auto& [step, path] : listing->checkpoints) {
    if (path == written) continue;
    if (kept < keep_last) {
      ++kept;
      continue;
    }
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) {
      RM_LOG(WARN, CKPT) << "could not remove old checkpoint " << path << ": " << ec.message();
    }
  }
}

}  // namespace

std::string checkpointFileName(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.rmck", static_cast<long long>(step));
  return name;
}

Status writeCheckpoint(const std::string& dir, const Checkpoint& ckpt, int keep_last) {
  if (ckpt.step < 0) {
    return core::invalidArgument("checkpoint step " + std::to_string(ckpt.step) + " is negative");
  }
  if (keep_last < 1) {
    return core::invalidArgument("checkpoint keep_last " + std::to_string(keep_last) +
                                 " must be at least 1");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::errnoError("create checkpoint directory " + dir, ec.value());

  const std::string bytes = encode(ckpt);
  const std::string final_path = dir + "/" + checkpointFileName(ckpt.step);
  RM_RETURN_IF_ERROR(writeFileAtomically(dir, final_path, bytes));
  RM_LOG(DEBUG, CKPT) << "wrote checkpoint " << final_path << " (" << bytes.size()
                      << " bytes, epoch " << ckpt.epoch << ", step " << ckpt.step << ")";
  prune(dir, final_path, keep_last);
  return Status::Ok();
}

Result<Checkpoint> readCheckpointFile(const std::string& path) {
  RM_ASSIGN_OR_RETURN(std::string bytes, readWholeFile(path));
  return decode(path, bytes);
}

Result<std::optional<Checkpoint>> loadNewestCheckpoint(const std::string& dir,
                                                       const std::string& expected_signature) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<Checkpoint>();
    return core::errnoError("stat checkpoint directory " + dir, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return core::invalidArgument("checkpoint path " + dir + " is not a directory");
  }
  RM_ASSIGN_OR_RETURN(Listing listing, listDirectory(dir));
  for (const std::string& temp : listing.temporaries) {
    std::error_code ec;
    if (fs::remove(temp, ec)) {
      RM_LOG(INFO, CKPT) << "removed temporary file " << temp << " left by an interrupted write";
    } else if (ec) {
      RM_LOG(WARN, CKPT) << "could not remove leftover temporary file " << temp << ": "
                         << ec.message();
    }
  }
  for (const auto& [step, path] : listing.checkpoints) {
    Result<Checkpoint> ckpt = readCheckpointFile(path);
    if (!ckpt.ok()) {
      // Corrupt: fall back to an older one. Vanished meanwhile: likewise. Anything else
      // (permissions, I/O) would make us silently lose progress, so it is returned.
      if (ckpt.status().code() != core::Code::kDataLoss &&
          ckpt.status().code() != core::Code::kNotFound) {
        return ckpt.status();
      }
      RM_LOG(WARN, CKPT) << "skipping checkpoint: " << ckpt.status().toString();
      continue;
    }
    if (ckpt->step != step) {
      RM_LOG(WARN, CKPT) << "skipping checkpoint " << path << ": its header says step "
                         << ckpt->step << " but its name says " << step;
      continue;
    }
    if (ckpt->model_signature != expected_signature) {
      return core::invalidArgument(
          "checkpoint " + path + " was written for model '" + ckpt->model_signature +
          "' but this run's model is '" + expected_signature +
          "'; use a new checkpoint path for a changed model, or restore the old model");
    }
    return std::optional<Checkpoint>(std::move(ckpt).value());
  }
  if (!listing.checkpoints.empty()) {
    RM_LOG(WARN, CKPT) << "none of the " << listing.checkpoints.size() << " checkpoint files in "
                       << dir << " is valid; starting from scratch";
  }
  return std::optional<Checkpoint>();
}

uint64_t drawRunMarker() {
  std::mt19937_64 random(std::random_device{}());
  return std::uniform_int_distribution<uint64_t>(
      1, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))(random);
}

Status writeRunMarker(const std::string& dir, uint64_t run) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::errnoError("create checkpoint directory " + dir, ec.value());
  return writeFileAtomically(dir, dir + "/" + std::string(kRunMarkerName),
                             std::to_string(run) + "\n");
}

Result<std::optional<uint64_t>> readRunMarker(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kRunMarkerName);
  Result<std::string> text = readWholeFile(path);
  if (!text.ok()) {
    if (text.status().code() == core::Code::kNotFound) return std::optional<uint64_t>();
    return text.status();
  }
  uint64_t run = 0;
  const char* end = text->data() + text->size();
  if (text->ends_with('\n')) --end;
  auto [stop, ec] = std::from_chars(text->data(), end, run);
  if (ec != std::errc() || stop != end) {
    return core::dataLoss("run marker " + path + " holds '" + *text + "', not a run number");
  }
  return std::optional<uint64_t>(run);
}

Status removeCheckpoints(const std::string& dir) {
  RM_ASSIGN_OR_RETURN(Listing listing, listDirectory(dir));
  for (const auto& [step, path] : listing.checkpoints) {
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) return core::errnoError("remove checkpoint " + path, ec.value());
  }
  return Status::Ok();
}

}  // namespace ringmaster::trainer::checkpoint
