#include "trainer/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lzma.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace ringmaster::trainer::checkpoint {
namespace {

namespace fs = std::filesystem;
using core::Code;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* kSignature = "mlp:784-512-512-10";

Checkpoint makeCheckpoint(int64_t step) {
  Checkpoint c;
  c.epoch = step / 100;
  c.step = step;
  c.step_in_epoch = step % 100;
  c.model_signature = kSignature;
  for (int i = 0; i < 1000; ++i) c.params.push_back(static_cast<float>(step) + 0.25f * i);
  c.optimizer_type = "sgd";
  c.optimizer_step = step;
  c.optimizer_state = {std::vector<float>(1000, -1.5f), {}, {3.0f}};
  return c;
}

void expectSame(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.step_in_epoch, b.step_in_epoch);
  EXPECT_EQ(a.model_signature, b.model_signature);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.optimizer_type, b.optimizer_type);
  EXPECT_EQ(a.optimizer_step, b.optimizer_step);
  EXPECT_EQ(a.optimizer_state, b.optimizer_state);
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "rm_ckpt_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/ckpts";  // not created: writeCheckpoint makes it
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::string pathFor(int64_t step) const { return dir_ + "/" + checkpointFileName(step); }

  std::set<std::string> files() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }

  std::string readBytes(const std::string& path) const {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void writeBytes(const std::string& path, const std::string& bytes) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // Runs loadNewestCheckpoint, returning its result and what it logged.
  core::Result<std::optional<Checkpoint>> load(std::string* log,
                                               const std::string& signature = kSignature) {
    ::testing::internal::CaptureStderr();
    auto got = loadNewestCheckpoint(dir_, signature);
    *log = ::testing::internal::GetCapturedStderr();
    return got;
  }

  std::string root_;
  std::string dir_;
};

TEST_F(CheckpointTest, FileNameIsZeroPaddedStep) {
  EXPECT_EQ(checkpointFileName(500), "ckpt-000000000500.rmck");
  EXPECT_EQ(checkpointFileName(0), "ckpt-000000000000.rmck");
}

TEST_F(CheckpointTest, RoundTripsEveryField) {
  Checkpoint c = makeCheckpoint(1234);
  ASSERT_TRUE(writeCheckpoint(dir_, c).ok());
  EXPECT_EQ(files(), std::set<std::string>{"ckpt-000000001234.rmck"});
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  expectSame(**got, c);
}

// The trailer is CRC-64/XZ (liblzma's lzma_crc64; its catalogued check value pins the variant)
// of every byte before it, little-endian: what the format promises a foreign reader.
TEST_F(CheckpointTest, TrailerIsTheCrc64XzOfTheBody) {
  EXPECT_EQ(lzma_crc64(reinterpret_cast<const uint8_t*>("123456789"), 9, 0), 0x995DC9BBDF1939FAull);
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(7)).ok());
  const std::string bytes = readBytes(pathFor(7));
  ASSERT_GT(bytes.size(), 8u);
  const size_t body = bytes.size() - 8;
  uint64_t trailer = 0;
  for (int i = 7; i >= 0; --i) trailer = (trailer << 8) | static_cast<uint8_t>(bytes[body + i]);
  EXPECT_EQ(trailer, lzma_crc64(reinterpret_cast<const uint8_t*>(bytes.data()), body, 0));
}

TEST_F(CheckpointTest, RoundTripsAnEmptyCheckpoint) {
  Checkpoint c;
  c.model_signature = "";
  ASSERT_TRUE(writeCheckpoint(dir_, c).ok());
  auto got = readCheckpointFile(pathFor(0));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  expectSame(*got, c);
}

TEST_F(CheckpointTest, MissingDirectoryLoadsNothing) {
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_FALSE(got->has_value());
}

TEST_F(CheckpointTest, EmptyDirectoryLoadsNothing) {
  fs::create_directories(dir_);
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_FALSE(got->has_value());
}

TEST_F(CheckpointTest, NewestStepWinsNotNewestWritten) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(900)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(1000)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(950)).ok());
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->step, 1000);
}

TEST_F(CheckpointTest, OrdersByNumericStepBeyondTwelveDigits) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(999999999999)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(1000000000000)).ok());
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->step, 1000000000000);
}

TEST_F(CheckpointTest, TruncatedNewestIsSkippedWithWarningAndOlderLoaded) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(200)).ok());
  std::string bytes = readBytes(pathFor(200));
  writeBytes(pathFor(200), bytes.substr(0, bytes.size() / 2));
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->step, 100);
  expectSame(**got, makeCheckpoint(100));
  EXPECT_THAT(log, AllOf(HasSubstr(" W "), HasSubstr(pathFor(200)), HasSubstr("truncated")));
}

TEST_F(CheckpointTest, FlippedByteFailsTheChecksumAndIsSkipped) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(200)).ok());
  std::string bytes = readBytes(pathFor(200));
  bytes[bytes.size() / 2] ^= 0x04;  // inside the params
  writeBytes(pathFor(200), bytes);
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->step, 100);
  EXPECT_THAT(log, AllOf(HasSubstr(pathFor(200)), HasSubstr("checksum mismatch")));

  auto direct = readCheckpointFile(pathFor(200));
  EXPECT_EQ(direct.status().code(), Code::kDataLoss);
}

TEST_F(CheckpointTest, AllCorruptLoadsNothingAndWarns) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  writeBytes(pathFor(100), "RMCKPT\n\x1a garbage");
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_FALSE(got->has_value());
  EXPECT_THAT(log, AllOf(HasSubstr(pathFor(100)), HasSubstr("starting from scratch")));
}

TEST_F(CheckpointTest, NotACheckpointFileIsReportedAsBadMagic) {
  fs::create_directories(dir_);
  writeBytes(pathFor(5), "this is a text file that happens to have the name");
  auto got = readCheckpointFile(pathFor(5));
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(pathFor(5)), HasSubstr("bad magic")));
}

TEST_F(CheckpointTest, RenamedFileWhoseStepDisagreesIsSkipped) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(200)).ok());
  fs::copy_file(pathFor(100), pathFor(300));
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->step, 200);
  EXPECT_THAT(log, AllOf(HasSubstr(pathFor(300)), HasSubstr("header says step 100")));
}

TEST_F(CheckpointTest, SignatureMismatchIsAnErrorNamingBothSignatures) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  std::string log;
  auto got = load(&log, "mlp:784-256-10");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(kSignature), HasSubstr("mlp:784-256-10"), HasSubstr(pathFor(100))));
}

TEST_F(CheckpointTest, KeepLastPrunesTheOldestSteps) {
  for (int64_t step : {100, 200, 300, 400, 500}) {
    ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(step), /*keep_last=*/2).ok());
  }
  EXPECT_EQ(files(), (std::set<std::string>{checkpointFileName(400), checkpointFileName(500)}));
}

TEST_F(CheckpointTest, PruningNeverRemovesTheCheckpointJustWritten) {
  // A higher-step file (e.g. a corrupt one skipped on resume) must not evict the new one.
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(1000)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(600), /*keep_last=*/1).ok());
  EXPECT_EQ(files(), std::set<std::string>{checkpointFileName(600)});
}

TEST_F(CheckpointTest, RewritingTheSameStepReplacesIt) {
  Checkpoint c = makeCheckpoint(100);
  ASSERT_TRUE(writeCheckpoint(dir_, c).ok());
  c.params.assign(3, 7.0f);
  ASSERT_TRUE(writeCheckpoint(dir_, c).ok());
  auto got = readCheckpointFile(pathFor(100));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->params, std::vector<float>(3, 7.0f));
  EXPECT_EQ(files().size(), 1u);
}

TEST_F(CheckpointTest, LeftoverTemporaryFileIsIgnoredAndCleaned) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  // A crash mid-write of step 200 leaves a partial temporary file.
  const std::string temp = pathFor(200) + ".tmp-AbC123";
  writeBytes(temp, readBytes(pathFor(100)).substr(0, 40));
  std::string log;
  auto got = load(&log);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->step, 100);
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(files(), std::set<std::string>{checkpointFileName(100)});
}

TEST_F(CheckpointTest, UnrelatedFilesAreLeftAlone) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  writeBytes(dir_ + "/notes.txt", "hello");
  writeBytes(dir_ + "/ckpt-abc.rmck", "not a step");
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(200), /*keep_last=*/1).ok());
  EXPECT_EQ(files(),
            (std::set<std::string>{"notes.txt", "ckpt-abc.rmck", checkpointFileName(200)}));
}

TEST_F(CheckpointTest, RejectsNegativeStepAndKeepLastBelowOne) {
  Checkpoint c = makeCheckpoint(1);
  EXPECT_EQ(writeCheckpoint(dir_, c, 0).code(), Code::kInvalidArgument);
  c.step = -1;
  EXPECT_EQ(writeCheckpoint(dir_, c).code(), Code::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(CheckpointTest, UnwritableDirectoryIsAnErrorNamingIt) {
  const std::string blocker = root_ + "/a-file";
  writeBytes(blocker, "x");
  core::Status s = writeCheckpoint(blocker + "/sub", makeCheckpoint(1));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(blocker));
}

TEST_F(CheckpointTest, PathThatIsAFileIsAnErrorOnLoad) {
  const std::string blocker = root_ + "/a-file";
  writeBytes(blocker, "x");
  auto got = loadNewestCheckpoint(blocker, kSignature);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr(blocker));
}

// Rewrites `bytes` at `offset` and recomputes the trailing checksum, as a buggy or foreign
// writer would produce: the checksum passes, so the structure checks must catch it.
template <typename T>
std::string patchAndReseal(std::string bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
  const size_t body = bytes.size() - 8;
  const uint64_t crc = lzma_crc64(reinterpret_cast<const uint8_t*>(bytes.data()), body, 0);
  std::memcpy(bytes.data() + body, &crc, sizeof crc);
  return bytes;
}

TEST_F(CheckpointTest, UnknownFormatVersionIsAnErrorNotSkipped) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  writeBytes(pathFor(100), patchAndReseal(readBytes(pathFor(100)), 8, uint32_t{2}));
  std::string log;
  auto got = load(&log);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(pathFor(100)), HasSubstr("version 2")));
}

TEST_F(CheckpointTest, LengthRunningPastTheEndIsDataLossEvenWithAGoodChecksum) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  // The params count follows 56 fixed bytes and the two strings (4 + 18 and 4 + 3 bytes).
  const size_t params_count_offset = 56 + 4 + std::strlen(kSignature) + 4 + 3;
  writeBytes(pathFor(100),
             patchAndReseal(readBytes(pathFor(100)), params_count_offset, uint64_t{1} << 40));
  auto got = readCheckpointFile(pathFor(100));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("params at offset"), HasSubstr("runs past the end")));
}

TEST_F(CheckpointTest, MissingFileIsNotFound) {
  EXPECT_EQ(readCheckpointFile(pathFor(1)).status().code(), Code::kNotFound);
}

TEST_F(CheckpointTest, RunMarkerRoundTripsAndIsNotACheckpoint) {
  auto none = readRunMarker(dir_);
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(writeRunMarker(dir_, 18446744073709551615ull).ok());
  ASSERT_TRUE(writeRunMarker(dir_, 7).ok());  // a fresh start replaces it
  auto got = readRunMarker(dir_);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(*got, std::optional<uint64_t>(7));
  EXPECT_EQ(files(), std::set<std::string>{"run-marker.rmck"});
  std::string log;
  auto loaded = load(&log);
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  EXPECT_FALSE(loaded->has_value());
  EXPECT_EQ(log, "");
}

TEST_F(CheckpointTest, RunMarkerThatHoldsNoNumberIsDataLoss) {
  fs::create_directories(dir_);
  writeBytes(dir_ + "/run-marker.rmck", "12x\n");
  auto got = readRunMarker(dir_);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr("run-marker.rmck"), HasSubstr("12x")));
}

TEST_F(CheckpointTest, RemoveCheckpointsKeepsTheMarkerAndOtherFiles) {
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(100)).ok());
  ASSERT_TRUE(writeCheckpoint(dir_, makeCheckpoint(200)).ok());
  ASSERT_TRUE(writeRunMarker(dir_, 3).ok());
  writeBytes(dir_ + "/notes.txt", "hello");
  ASSERT_TRUE(removeCheckpoints(dir_).ok());
  EXPECT_EQ(files(), (std::set<std::string>{"notes.txt", "run-marker.rmck"}));
  EXPECT_EQ(removeCheckpoints(root_ + "/missing").code(), Code::kNotFound);
}

}  // namespace
}  // namespace ringmaster::trainer::checkpoint
