#pragma once
// Softmax + cross-entropy fused in one pass over the logits, the way the model ends: the loss,
// the argmax hits and (optionally) the gradient of the *mean* loss w.r.t. the logits,
// (softmax - onehot) / batch, which is where backward starts.
//
// Thread-safety: pure function. Failure: a label outside [0, classes) aborts (caller bug; the
// data loader validates labels when it reads them).

#include <cstdint>

namespace ringmaster::trainer::model {

// logits: [batch, classes] row-major. Returns the summed (not mean) loss. dlogits may be null
// (evaluation); correct may be null. Ties in argmax go to the lowest class index.
double softmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                           float* dlogits, int* correct);

}  // namespace ringmaster::trainer::model
