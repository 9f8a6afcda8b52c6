#include "trainer/data/fashion_mnist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <cmath>

#include "trainer/data/tests/idx_test_files.h"

namespace ringmaster::trainer::data {
namespace {

using core::Code;
using ::testing::AllOf;
using testing::gzipBytes;
using ::testing::HasSubstr;
using testing::idxBytes;
using testing::iotaBytes;

class FashionMnistTest : public testing::TempDirTest {
 protected:
  // Four 2x3 images whose pixels are 0, 1, 2, ...; labels as given.
  void writeSplit(const std::string& prefix, const std::vector<uint8_t>& labels, bool gzip) {
    const uint32_t n = static_cast<uint32_t>(labels.size());
    std::string images = idxBytes({n, 2, 3}, iotaBytes(n * 6));
    std::string label_bytes = idxBytes({n}, labels);
    const std::string suffix = gzip ? ".gz" : "";
    write(prefix + "-images-idx3-ubyte" + suffix, gzip ? gzipBytes(images) : images);
    write(prefix + "-labels-idx1-ubyte" + suffix, gzip ? gzipBytes(label_bytes) : label_bytes);
  }
};

TEST_F(FashionMnistTest, LoadsGzippedTrainSplitNormalized) {
  writeSplit("train", {3, 0, 9, 1}, /*gzip=*/true);
  auto got = loadFashionMnist(dir_, Split::kTrain);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->size(), 4u);
  EXPECT_EQ(got->rows, 2);
  EXPECT_EQ(got->cols, 3);
  EXPECT_EQ(got->featureSize(), 6u);
  EXPECT_EQ(got->labels, (std::vector<int32_t>{3, 0, 9, 1}));
  ASSERT_EQ(got->images.size(), 24u);
  for (int p = 0; p < 24; ++p) {
    EXPECT_NEAR(got->images[p], (p / 255.0 - 0.2860) / 0.3530, 1e-6) << "pixel " << p;
  }
}

TEST_F(FashionMnistTest, LoadsPlainTestSplitFromT10kFiles) {
  writeSplit("t10k", {5, 5}, /*gzip=*/false);
  auto got = loadFashionMnist(dir_, Split::kTest);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->labels, (std::vector<int32_t>{5, 5}));
  // The train split is not there.
  auto train = loadFashionMnist(dir_, Split::kTrain);
  EXPECT_EQ(train.status().code(), Code::kNotFound);
}

TEST_F(FashionMnistTest, NormalizePixelMapsExtremes) {
  EXPECT_NEAR(normalizePixel(0), -0.2860 / 0.3530, 1e-6);
  EXPECT_NEAR(normalizePixel(255), (1 - 0.2860) / 0.3530, 1e-6);
}

TEST_F(FashionMnistTest, MismatchedCountsNameBothFiles) {
  write("train-images-idx3-ubyte", idxBytes({3, 2, 3}, iotaBytes(18)));
  write("train-labels-idx1-ubyte", idxBytes({2}, {1, 2}));
  auto got = loadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("train-images-idx3-ubyte"), HasSubstr("train-labels-idx1-ubyte"),
                    HasSubstr("3 images"), HasSubstr("2 labels")));
}

TEST_F(FashionMnistTest, LabelOutOfRangeNamesFileAndOffset) {
  writeSplit("train", {1, 2, 3, 12}, /*gzip=*/true);
  auto got = loadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  // Label 3 of a 1-dim file: header 8 bytes + 3.
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(dir_ + "/train-labels-idx1-ubyte.gz"), HasSubstr("label 12"),
                    HasSubstr("item 3"), HasSubstr("offset 11")));
}

TEST_F(FashionMnistTest, ImagesWithWrongRankAreRejected) {
  write("train-images-idx3-ubyte", idxBytes({2, 6}, iotaBytes(12)));
  write("train-labels-idx1-ubyte", idxBytes({2}, {1, 2}));
  auto got = loadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("train-images-idx3-ubyte"), HasSubstr("expected 3 dims")));
}

TEST_F(FashionMnistTest, CorruptImagesFileErrorNamesIt) {
  writeSplit("train", {1, 2}, /*gzip=*/false);
  std::string raw = idxBytes({2, 2, 3}, iotaBytes(12));
  write("train-images-idx3-ubyte", raw.substr(0, raw.size() - 1));
  auto got = loadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kDataLoss);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("train-images-idx3-ubyte"), HasSubstr("offset 27")));
}

TEST_F(FashionMnistTest, MissingDirectoryNamesItAndTheFilesAndTheFix) {
  std::string missing = dir_ + "/not-there";
  auto got = loadFashionMnist(missing, Split::kTrain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kNotFound);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr(missing), HasSubstr("train-images-idx3-ubyte"),
                    HasSubstr("train-labels-idx1-ubyte"), HasSubstr("scripts/setup"),
                    HasSubstr("dataset-fashion-mnist")));
}

TEST_F(FashionMnistTest, MissingLabelsFileNamesDirectoryAndFileNames) {
  write("t10k-images-idx3-ubyte.gz", gzipBytes(idxBytes({1, 2, 3}, iotaBytes(6))));
  auto got = loadFashionMnist(dir_, Split::kTest);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kNotFound);
  EXPECT_THAT(got.status().message(), AllOf(HasSubstr(dir_), HasSubstr("t10k-labels-idx1-ubyte.gz"),
                                            HasSubstr("scripts/setup")));
}

TEST_F(FashionMnistTest, FileInsteadOfDirectoryIsInvalidArgument) {
  std::string file = write("a-file", "x");
  auto got = loadFashionMnist(file, Split::kTrain);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr(file));
}

// The real data from Debian's dataset-fashion-mnist.
bool haveRealData() {
  struct stat st {};
  return ::stat(kDefaultFashionMnistDir, &st) == 0;
}

void expectBalanced(const Dataset& d, size_t per_class) {
  std::array<size_t, kFashionMnistClasses> histogram{};
  for (int32_t label : d.labels) histogram.at(static_cast<size_t>(label))++;
  for (int c = 0; c < kFashionMnistClasses; ++c)
    EXPECT_EQ(histogram[c], per_class) << "class " << c;
}

TEST(FashionMnistRealData, TrainSplitHas60000BalancedImagesOf28x28) {
  if (!haveRealData()) GTEST_SKIP() << kDefaultFashionMnistDir << " absent (scripts/setup)";
  auto got = loadFashionMnist(kDefaultFashionMnistDir, Split::kTrain);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->size(), 60000u);
  EXPECT_EQ(got->rows, 28);
  EXPECT_EQ(got->cols, 28);
  ASSERT_EQ(got->images.size(), 60000u * 784u);
  expectBalanced(*got, 6000);
  // The normalization constants are the training set's: mean ~0, std ~1 after it.
  double sum = 0, sum_sq = 0;
  for (float v : got->images) {
    sum += v;
    sum_sq += double{v} * v;
  }
  const double n = static_cast<double>(got->images.size());
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 1.0, 0.01);
}

TEST(FashionMnistRealData, TestSplitHas10000BalancedImagesOf28x28) {
  if (!haveRealData()) GTEST_SKIP() << kDefaultFashionMnistDir << " absent (scripts/setup)";
  auto got = loadFashionMnist(kDefaultFashionMnistDir, Split::kTest);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->size(), 10000u);
  EXPECT_EQ(got->rows, 28);
  EXPECT_EQ(got->cols, 28);
  expectBalanced(*got, 1000);
}

}  // namespace
}  // namespace ringmaster::trainer::data
