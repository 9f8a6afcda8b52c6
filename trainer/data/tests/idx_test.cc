#include "trainer/data/idx.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trainer/data/tests/idx_test_files.h"

namespace ringmaster::trainer::data {
namespace {

using core::Code;
using ::testing::AllOf;
using testing::gzipBytes;
using ::testing::HasSubstr;
using testing::idxBytes;
using testing::iotaBytes;

class IdxTest : public testing::TempDirTest {};

// 2 x 3 x 3 bytes: the header is 16 bytes, the payload runs from offset 16 to 34.
const std::vector<uint32_t> kDims = {2, 3, 3};
const std::vector<uint8_t> kPayload = iotaBytes(18, 100);

TEST_F(IdxTest, ReadsPlainFile) {
  auto got = readIdx(write("a-idx3-ubyte", idxBytes(kDims, kPayload)));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->dims, kDims);
  EXPECT_EQ(got->data, kPayload);
  EXPECT_EQ(got->payloadOffset(), 16u);
}

TEST_F(IdxTest, ReadsGzipFile) {
  auto got = readIdx(write("a-idx3-ubyte.gz", gzipBytes(idxBytes(kDims, kPayload))));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->dims, kDims);
  EXPECT_EQ(got->data, kPayload);
}

TEST_F(IdxTest, RecognisesGzipByContentNotByName) {
  auto gz = readIdx(write("no-suffix", gzipBytes(idxBytes(kDims, kPayload))));
  ASSERT_TRUE(gz.ok()) << gz.status().toString();
  EXPECT_EQ(gz->data, kPayload);
  auto plain = readIdx(write("plain.gz", idxBytes(kDims, kPayload)));
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  EXPECT_EQ(plain->data, kPayload);
}

TEST_F(IdxTest, ReadsConcatenatedGzipMembersAsOneStream) {
  std::string raw = idxBytes(kDims, kPayload);
  std::string gz = gzipBytes(raw.substr(0, 10)) + gzipBytes(raw.substr(10));
  auto got = readIdx(write("multi.gz", gz));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->data, kPayload);
}

TEST_F(IdxTest, ReadsOneDimensionalLabels) {
  auto got = readIdx(write("labels", idxBytes({5}, {1, 2, 3, 4, 5})));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->dims, std::vector<uint32_t>{5});
  EXPECT_EQ(got->payloadOffset(), 8u);
}

TEST_F(IdxTest, ReadsLargeGzipPayloadSpanningManyInputChunks) {
  // Incompressible-ish bytes so the compressed file is several 1 MiB input chunks long.
  std::vector<uint8_t> payload(3000 * 28 * 28);
  uint32_t x = 12345;
  for (auto& b : payload) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  auto got = readIdx(write("big.gz", gzipBytes(idxBytes({3000, 28, 28}, payload))));
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->data, payload);
}

TEST_F(IdxTest, TruncatedPlainPayloadNamesFileAndOffset) {
  std::string raw = idxBytes(kDims, kPayload);
  std::string path = write("cut-idx3-ubyte", raw.substr(0, raw.size() - 5));
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("truncated"), HasSubstr("offset 29"),
                    HasSubstr("offset 34"), HasSubstr("2x3x3")));
}

TEST_F(IdxTest, TruncatedGzipPayloadNamesDecompressedOffset) {
  std::string raw = idxBytes(kDims, kPayload);
  std::string path = write("cut.gz", gzipBytes(raw.substr(0, raw.size() - 5)));
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(path), HasSubstr("truncated payload"),
                                            HasSubstr("offset 29"), HasSubstr("offset 34")));
}

TEST_F(IdxTest, TruncatedHeaderNamesOffset) {
  std::string path = write("short", idxBytes(kDims, {}).substr(0, 10));
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("truncated IDX header"), HasSubstr("offset 10")));
}

TEST_F(IdxTest, EmptyFileIsTruncatedAtOffsetZero) {
  std::string path = write("empty", "");
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(path), HasSubstr("offset 0")));
}

TEST_F(IdxTest, BadMagicNamesFileAndOffsetZero) {
  std::string raw = idxBytes(kDims, kPayload);
  raw[2] = 0x09;  // element type int8 instead of unsigned byte
  std::string path = write("bad-magic", raw);
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("bad IDX magic 0x00000903 at offset 0")));
}

TEST_F(IdxTest, BadMagicInsideGzipIsReported) {
  std::string path = write("bad-magic.gz", gzipBytes("\x12\x34\x56\x78 not an idx file"));
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("bad IDX magic 0x12345678 at offset 0")));
}

TEST_F(IdxTest, ExtraBytesAfterPayloadAreAnError) {
  std::string raw = idxBytes(kDims, kPayload) + "xx";
  std::string plain = write("long", raw);
  auto got = readIdx(plain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(plain), HasSubstr("do not match the file length"),
                    HasSubstr("offset 36"), HasSubstr("offset 34")));

  std::string gz = write("long.gz", gzipBytes(raw));
  got = readIdx(gz);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(gz), HasSubstr("unexpected data at offset 34")));
}

TEST_F(IdxTest, CorruptGzipChecksumIsDataLoss) {
  std::string gz = gzipBytes(idxBytes(kDims, kPayload));
  gz[gz.size() - 8] ^= 0x01;  // CRC32 in the gzip trailer
  std::string path = write("crc.gz", gz);
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream"),
                    HasSubstr("decompressed offset 34"), HasSubstr("incorrect data check")));
}

TEST_F(IdxTest, GarbageDeflateDataIsDataLoss) {
  std::string gz = gzipBytes(idxBytes(kDims, kPayload));
  for (size_t i = 10; i < gz.size() - 8; ++i) gz[i] = static_cast<char>(0xff);
  std::string path = write("garbage.gz", gz);
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream at decompressed offset 0"),
                    HasSubstr("compressed offset")));
}

TEST_F(IdxTest, CutGzipFileIsDataLoss) {
  std::string gz = gzipBytes(idxBytes(kDims, kPayload));
  std::string path = write("cut-stream.gz", gz.substr(0, gz.size() - 4));
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream"),
                                            HasSubstr("ends before the gzip stream does")));
}

TEST_F(IdxTest, TrailingGarbageAfterGzipMemberIsDataLoss) {
  std::string path = write("tail.gz", gzipBytes(idxBytes(kDims, kPayload)) + "garbage!");
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream")));
}

TEST_F(IdxTest, ImplausibleDimsInGzipAreRejectedBeforeAllocating) {
  std::string path = write("huge.gz", gzipBytes(idxBytes({4000000000u, 1000}, {1, 2, 3})));
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(path), HasSubstr("4000000000x1000"), HasSubstr("can hold")));
}

TEST_F(IdxTest, MissingFileIsNotFoundNamingThePath) {
  std::string path = dir_ + "/nope-idx3-ubyte";
  auto got = readIdx(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr(path));
}

TEST_F(IdxTest, DirectoryIsNotAFile) {
  auto got = readIdx(dir_);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr(dir_));
}

TEST(FormatDims, JoinsWithX) {
  EXPECT_EQ(formatDims({60000, 28, 28}), "60000x28x28");
  EXPECT_EQ(formatDims({7}), "7");
}

}  // namespace
}  // namespace ringmaster::trainer::data
