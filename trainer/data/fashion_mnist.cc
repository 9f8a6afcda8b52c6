#include "trainer/data/fashion_mnist.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <climits>

#include "ringmaster/core/log.h"
#include "trainer/data/idx.h"

namespace ringmaster::trainer::data {
namespace {

using core::Result;
using core::Status;

struct SplitFiles {
  const char* images;
  const char* labels;
};

SplitFiles filesFor(Split split) {
  if (split == Split::kTrain) return {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
  return {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
}

std::string lookedFor(const SplitFiles& files) {
  return "looked for " + std::string(files.images) + "[.gz] and " + files.labels +
         "[.gz]; scripts/setup installs Debian's dataset-fashion-mnist into " +
         kDefaultFashionMnistDir;
}

Status checkDirectory(const std::string& dir, const SplitFiles& files) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return core::notFound("Fashion-MNIST directory " + dir + " does not exist (" +
                            lookedFor(files) + ")");
    }
    return core::errnoError("stat Fashion-MNIST directory " + dir, err);
  }
  if (!S_ISDIR(st.st_mode)) {
    return core::invalidArgument("Fashion-MNIST path " + dir + " is not a directory (" +
                                 lookedFor(files) + ")");
  }
  return Status::Ok();
}

// dir/base, else dir/base.gz.
Result<std::string> findFile(const std::string& dir, const char* base, const SplitFiles& files) {
  for (const char* suffix : {"", ".gz"}) {
    std::string path = dir + "/" + base + suffix;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return path;
    if (errno != ENOENT) return core::errnoError("stat " + path, errno);
  }
  return core::notFound("Fashion-MNIST directory " + dir + " has no " + base + " or " + base +
                        ".gz (" + lookedFor(files) + ")");
}

// (p / 255 - mean) / std as one multiply-add in float, so the conversion loop vectorizes;
// normalizePixel() uses the same expression, so both agree bit for bit.
constexpr float kPixelScale = 1.0f / (255.0f * kFashionMnistStd);
constexpr float kPixelOffset = -kFashionMnistMean / kFashionMnistStd;

}  // namespace

float normalizePixel(uint8_t pixel) {
  return static_cast<float>(pixel) * kPixelScale + kPixelOffset;
}

Result<Dataset> loadFashionMnist(const std::string& dir, Split split) {
  const auto start = std::chrono::steady_clock::now();
  const SplitFiles files = filesFor(split);
  RM_RETURN_IF_ERROR(checkDirectory(dir, files));
  RM_ASSIGN_OR_RETURN(std::string images_path, findFile(dir, files.images, files));
  RM_ASSIGN_OR_RETURN(std::string labels_path, findFile(dir, files.labels, files));

  RM_ASSIGN_OR_RETURN(IdxArray images, readIdx(images_path));
  if (images.dims.size() != 3) {
    return core::dataLoss(images_path + ": expected 3 dims (count x rows x cols, magic " +
                          "0x00000803) but the header at offset 0 has " +
                          std::to_string(images.dims.size()) + " (" + formatDims(images.dims) +
                          ")");
  }
  if (images.dims[1] > INT_MAX || images.dims[2] > INT_MAX) {
    return core::dataLoss(images_path + ": image dims " + formatDims(images.dims) +
                          " at offset 8 are too large");
  }
  RM_ASSIGN_OR_RETURN(IdxArray labels, readIdx(labels_path));
  if (labels.dims.size() != 1) {
    return core::dataLoss(labels_path + ": expected 1 dim (count, magic 0x00000801) but the " +
                          "header at offset 0 has " + std::to_string(labels.dims.size()) + " (" +
                          formatDims(labels.dims) + ")");
  }
  if (images.dims[0] != labels.dims[0]) {
    return core::dataLoss("Fashion-MNIST files disagree: " + images_path + " holds " +
                          std::to_string(images.dims[0]) + " images but " + labels_path +
                          " holds " + std::to_string(labels.dims[0]) + " labels");
  }

  Dataset out;
  out.rows = static_cast<int>(images.dims[1]);
  out.cols = static_cast<int>(images.dims[2]);
  const size_t n = labels.dims[0];
  out.labels.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t label = labels.data[i];
    if (label >= kFashionMnistClasses) {
      return core::dataLoss(labels_path + ": label " + std::to_string(label) + " of item " +
                            std::to_string(i) + " at offset " +
                            std::to_string(labels.payloadOffset() + i) + " is outside 0.." +
                            std::to_string(kFashionMnistClasses - 1));
    }
    out.labels[i] = label;
  }
  out.images.resize(images.data.size());
  const uint8_t* src = images.data.data();
  float* dst = out.images.data();
  for (size_t i = 0, count = images.data.size(); i < count; ++i) {
    dst[i] = static_cast<float>(src[i]) * kPixelScale + kPixelOffset;
  }

  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  RM_LOG(INFO, DATA) << "loaded Fashion-MNIST " << (split == Split::kTrain ? "train" : "test")
                     << " split: " << n << " images " << out.rows << "x" << out.cols << " from "
                     << dir << " in " << ms << " ms";
  return out;
}

}  // namespace ringmaster::trainer::data
