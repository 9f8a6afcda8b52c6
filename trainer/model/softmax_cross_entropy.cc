#include "trainer/model/softmax_cross_entropy.h"

#include <cmath>
#include <cstddef>

#include "trainer/model/check.h"

namespace ringmaster::trainer::model {

double softmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                           float* dlogits, int* correct) {
  double loss_sum = 0.0;
  int hits = 0;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  for (int r = 0; r < batch; ++r) {
    const float* z = logits + static_cast<size_t>(r) * classes;
    const int32_t label = labels[r];
    RM_MODEL_CHECK(label >= 0 && label < classes, "label %d of sample %d outside [0, %d)",
                   static_cast<int>(label), r, classes);
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (z[c] > z[best]) best = c;
    }
    hits += best == label;
    const float max = z[best];
    float sum = 0.0f;
    if (dlogits != nullptr) {
      float* d = dlogits + static_cast<size_t>(r) * classes;
      for (int c = 0; c < classes; ++c) {
        d[c] = std::exp(z[c] - max);
        sum += d[c];
      }
      const float scale = inv_batch / sum;
      for (int c = 0; c < classes; ++c) d[c] *= scale;
      d[label] -= inv_batch;
    } else {
      for (int c = 0; c < classes; ++c) sum += std::exp(z[c] - max);
    }
    // -log softmax(z)[label] = log(sum) + max - z[label]
    loss_sum += static_cast<double>(std::log(sum)) + static_cast<double>(max) - z[label];
  }
  if (correct != nullptr) *correct = hits;
  return loss_sum;
}

}  // namespace ringmaster::trainer::model
