#pragma once
// Fashion-MNIST as the trainer consumes it: images as normalized floats, labels as int32.
// Debian's dataset-fashion-mnist (installed by scripts/setup) puts the four gzip'd IDX files
// in kDefaultFashionMnistDir.
//
// Ownership: a Dataset owns its vectors; loadFashionMnist() returns it by value.
// Thread-safety: loadFashionMnist() has no shared state; a const Dataset may be read from any
// number of threads.
// Failure: a missing directory or file is kNotFound naming the directory and the file names
// looked for; a corrupt file is kDataLoss naming the file and the byte offset (see idx.h);
// files that disagree (image vs label counts) or a label outside 0..9 are kDataLoss too.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::data {

inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Mean and standard deviation of the Fashion-MNIST training pixels scaled to [0, 1].
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;
inline constexpr int kFashionMnistClasses = 10;

enum class Split { kTrain, kTest };

struct Dataset {
  // size() x featureSize() floats, row-major: (pixel / 255 - kFashionMnistMean) / kFashionMnistStd.
  std::vector<float> images;
  std::vector<int32_t> labels;  // size() values in [0, kFashionMnistClasses)
  int rows = 0;
  int cols = 0;

  size_t size() const { return labels.size(); }
  size_t featureSize() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
};

// Loads `split` from `dir`, which holds train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each plain or with a ".gz" suffix (the
// plain file wins when both exist).
core::Result<Dataset> loadFashionMnist(const std::string& dir, Split split);

// The normalized value of one pixel byte (what Dataset::images holds for it).
float normalizePixel(uint8_t pixel);

}  // namespace ringmaster::trainer::data
