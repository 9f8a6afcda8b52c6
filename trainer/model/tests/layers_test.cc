// Each layer against a direct double-precision reference: forward values, and backward
// against central differences of that reference (in double with a tiny step, so the ReLU and
// max-pool kinks are never crossed).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "trainer/model/conv_layer.h"
#include "trainer/model/dense_layer.h"
#include "trainer/model/softmax_cross_entropy.h"
#include "trainer/model/tests/test_util.h"

namespace ringmaster::trainer::model {
namespace {

using testing::near;
using testing::randomFloats;
using testing::randomLabels;

constexpr double kStep = 1e-6;

// d f / d x[i] by central differences; x is restored.
double centralDiff(const std::function<double()>& f, double& x) {
  const double saved = x;
  x = saved + kStep;
  const double up = f();
  x = saved - kStep;
  const double down = f();
  x = saved;
  return (up - down) / (2 * kStep);
}

std::vector<double> toDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// A layer under test with its parameters, a batch and a random output gradient R: the
// objective is L = sum(out * R), so d L / d out = R.
struct Fixture {
  std::vector<float> params, grads, in, out, dout, din;
};

void checkAgainstReference(
    Layer& layer, int batch, uint64_t seed,
    const std::function<std::vector<double>(const std::vector<double>& p,
                                            const std::vector<double>& x)>& reference) {
  size_t count = 0;
  for (const ParamSpec& s : layer.paramSpecs()) count += s.count;
  Fixture f;
  f.params = randomFloats(count, seed);
  f.grads.assign(count, 0.0f);
  f.in = randomFloats(batch * layer.inputSize(), seed + 1);
  f.out.assign(batch * layer.outputSize(), 0.0f);
  const std::vector<float> r = randomFloats(batch * layer.outputSize(), seed + 2);
  f.dout = r;
  f.din.assign(batch * layer.inputSize(), 0.0f);
  layer.bind(f.params.data(), f.grads.data());

  layer.forward(f.in.data(), f.out.data(), batch);
  std::vector<double> p = toDouble(f.params), x = toDouble(f.in);
  const std::vector<double> want = reference(p, x);
  ASSERT_EQ(want.size(), f.out.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(near(f.out[i], want[i], 1e-5, 1e-5))
        << "out[" << i << "] " << f.out[i] << " vs " << want[i];
  }

  layer.backwardParams(f.in.data(), f.out.data(), f.dout.data(), batch, /*accumulate=*/false);
  layer.backwardInput(f.in.data(), f.out.data(), f.dout.data(), f.din.data(), batch);

  auto objective = [&] {
    const std::vector<double> o = reference(p, x);
    double sum = 0;
    for (size_t i = 0; i < o.size(); ++i) sum += o[i] * r[i];
    return sum;
  };
  for (size_t i = 0; i < p.size(); ++i) {
    const double fd = centralDiff(objective, p[i]);
    EXPECT_TRUE(near(f.grads[i], fd, 1e-4, 1e-4))
        << "param " << i << ": " << f.grads[i] << " vs finite difference " << fd;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double fd = centralDiff(objective, x[i]);
    EXPECT_TRUE(near(f.din[i], fd, 1e-4, 1e-4))
        << "input " << i << ": " << f.din[i] << " vs finite difference " << fd;
  }

  // accumulate adds the same gradients to what the buffer holds (a pipeline's micro-batches).
  const std::vector<float> fresh = f.grads, held = randomFloats(count, seed + 3);
  std::copy(held.begin(), held.end(), f.grads.begin());
  f.dout = r;
  layer.backwardParams(f.in.data(), f.out.data(), f.dout.data(), batch, /*accumulate=*/true);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_TRUE(near(f.grads[i], static_cast<double>(held[i]) + fresh[i], 1e-5, 1e-5))
        << "param " << i << " accumulated: " << f.grads[i] << " vs " << held[i] << " + "
        << fresh[i];
  }
}

std::vector<double> denseReference(const std::vector<double>& p, const std::vector<double>& x,
                                   int in, int out, bool relu) {
  const int batch = static_cast<int>(x.size()) / in;
  std::vector<double> y(static_cast<size_t>(batch) * out);
  for (int n = 0; n < batch; ++n) {
    for (int o = 0; o < out; ++o) {
      double z = p[static_cast<size_t>(out) * in + o];  // bias
      for (int i = 0; i < in; ++i) z += x[n * in + i] * p[o * in + i];
      y[n * out + o] = relu ? std::max(z, 0.0) : z;
    }
  }
  return y;
}

struct ConvShape {
  int cin, h, w, cout;
};

std::vector<double> convReluPoolReference(const std::vector<double>& p,
                                          const std::vector<double>& x, ConvShape s) {
  constexpr int k = 5, pad = 2;
  const int batch = static_cast<int>(x.size()) / (s.cin * s.h * s.w);
  const int ph = s.h / 2, pw = s.w / 2;
  const size_t wcount = static_cast<size_t>(s.cout) * s.cin * k * k;
  auto conv = [&](int n, int co, int y, int xx) {
    double z = 0;
    for (int ci = 0; ci < s.cin; ++ci) {
      for (int ky = 0; ky < k; ++ky) {
        for (int kx = 0; kx < k; ++kx) {
          const int sy = y + ky - pad, sx = xx + kx - pad;
          if (sy < 0 || sy >= s.h || sx < 0 || sx >= s.w) continue;
          // Weight layout [cout, k, k, cin].
          z += x[((n * s.cin + ci) * s.h + sy) * s.w + sx] *
               p[((co * k + ky) * k + kx) * s.cin + ci];
        }
      }
    }
    return z;
  };
  std::vector<double> out(static_cast<size_t>(batch) * s.cout * ph * pw);
  for (int n = 0; n < batch; ++n) {
    for (int co = 0; co < s.cout; ++co) {
      for (int py = 0; py < ph; ++py) {
        for (int px = 0; px < pw; ++px) {
          double m = -INFINITY;
          for (int j = 0; j < 4; ++j) m = std::max(m, conv(n, co, 2 * py + j / 2, 2 * px + j % 2));
          out[((n * s.cout + co) * ph + py) * pw + px] = std::max(m + p[wcount + co], 0.0);
        }
      }
    }
  }
  return out;
}

TEST(DenseLayer, ReluLayerMatchesReferenceAndFiniteDifferences) {
  DenseLayer layer("fc", 7, 5, /*relu=*/true);
  checkAgainstReference(
      layer, 4, 11, [](const auto& p, const auto& x) { return denseReference(p, x, 7, 5, true); });
}

TEST(DenseLayer, LinearLayerMatchesReferenceAndFiniteDifferences) {
  DenseLayer layer("fc", 6, 3, /*relu=*/false);
  checkAgainstReference(
      layer, 5, 12, [](const auto& p, const auto& x) { return denseReference(p, x, 6, 3, false); });
}

TEST(DenseLayer, ReportsWeightThenBiasWithFanIn) {
  DenseLayer layer("fc2", 7, 5, true);
  const auto specs = layer.paramSpecs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "fc2.weight");
  EXPECT_EQ(specs[0].count, 35u);
  EXPECT_EQ(specs[1].name, "fc2.bias");
  EXPECT_EQ(specs[1].count, 5u);
  EXPECT_EQ(specs[0].fan_in, 7);
  EXPECT_EQ(specs[1].fan_in, 7);
}

TEST(ConvReluPoolLayer, MatchesReferenceAndFiniteDifferencesInOneChunk) {
  const ConvShape s{2, 6, 6, 3};
  ConvReluPoolLayer layer("conv", s.cin, s.h, s.w, s.cout, 5, /*max_batch=*/3);
  ASSERT_EQ(layer.chunkSamples(), 3);
  checkAgainstReference(
      layer, 3, 21, [&](const auto& p, const auto& x) { return convReluPoolReference(p, x, s); });
}

TEST(ConvReluPoolLayer, MatchesReferenceWithOneSamplePerChunk) {
  const ConvShape s{3, 4, 4, 2};
  ConvReluPoolLayer layer("conv", s.cin, s.h, s.w, s.cout, 5, 3, /*cols_budget_floats=*/1);
  ASSERT_EQ(layer.chunkSamples(), 1);
  checkAgainstReference(
      layer, 3, 22, [&](const auto& p, const auto& x) { return convReluPoolReference(p, x, s); });
}

TEST(ConvReluPoolLayer, MatchesReferenceWithPartialLastChunk) {
  const ConvShape s{1, 6, 6, 2};
  // Two samples per chunk, five samples: chunks of 2, 2, 1.
  ConvReluPoolLayer layer("conv", s.cin, s.h, s.w, s.cout, 5, 8,
                          /*cols_budget_floats=*/2 * 25 * 36);
  ASSERT_EQ(layer.chunkSamples(), 2);
  checkAgainstReference(
      layer, 5, 23, [&](const auto& p, const auto& x) { return convReluPoolReference(p, x, s); });
}

TEST(ConvReluPoolLayer, OddSizesPoolWithFloorAndGetNoGradientFromDroppedEdge) {
  const ConvShape s{2, 7, 5, 2};
  ConvReluPoolLayer layer("conv", s.cin, s.h, s.w, s.cout, 5, 2);
  EXPECT_EQ(layer.outputSize(), 2u * 3 * 2);
  checkAgainstReference(
      layer, 2, 24, [&](const auto& p, const auto& x) { return convReluPoolReference(p, x, s); });
}

TEST(ConvReluPoolLayer, ForwardIsTheSameForEveryChunking) {
  const ConvShape s{2, 8, 8, 4};
  const int batch = 7;
  const auto params = randomFloats(4 * 2 * 25 + 4, 31);
  const auto in = randomFloats(batch * 2 * 64, 32);
  std::vector<float> grads(params.size());
  std::vector<std::vector<float>> outs;
  for (size_t budget :
       {size_t{1}, size_t{3 * 50 * 64}, ConvReluPoolLayer::kDefaultColsBudgetFloats}) {
    ConvReluPoolLayer layer("conv", s.cin, s.h, s.w, s.cout, 5, batch, budget);
    std::vector<float> p = params;
    layer.bind(p.data(), grads.data());
    outs.emplace_back(batch * layer.outputSize());
    layer.forward(in.data(), outs.back().data(), batch);
  }
  for (size_t i = 0; i < outs[0].size(); ++i) {
    EXPECT_NEAR(outs[1][i], outs[0][i], 1e-5f);
    EXPECT_NEAR(outs[2][i], outs[0][i], 1e-5f);
  }
}

TEST(SoftmaxCrossEntropy, MatchesReferenceLossHitsAndGradient) {
  const int batch = 6, classes = 5;
  const auto logits = randomFloats(batch * classes, 41, -3.0f, 3.0f);
  const auto labels = randomLabels(batch, classes, 42);
  std::vector<float> dlogits(logits.size());
  int correct = -1;
  const double loss =
      softmaxCrossEntropy(logits.data(), labels.data(), batch, classes, dlogits.data(), &correct);

  std::vector<double> z = toDouble(logits);
  auto mean_loss = [&] {
    double sum = 0;
    for (int n = 0; n < batch; ++n) {
      double denom = 0;
      for (int c = 0; c < classes; ++c) denom += std::exp(z[n * classes + c]);
      sum += std::log(denom) - z[n * classes + labels[n]];
    }
    return sum / batch;
  };
  EXPECT_NEAR(loss / batch, mean_loss(), 1e-5);
  int want_correct = 0;
  for (int n = 0; n < batch; ++n) {
    const auto* row = &logits[n * classes];
    want_correct += std::max_element(row, row + classes) - row == labels[n];
  }
  EXPECT_EQ(correct, want_correct);
  for (size_t i = 0; i < z.size(); ++i) {
    EXPECT_NEAR(dlogits[i], centralDiff(mean_loss, z[i]), 1e-5) << "logit " << i;
  }
}

TEST(SoftmaxCrossEntropy, IsStableForLargeLogits) {
  const float logits[3] = {1000.0f, 0.0f, -1000.0f};
  const int32_t label = 1;
  float d[3];
  const double loss = softmaxCrossEntropy(logits, &label, 1, 3, d, nullptr);
  EXPECT_NEAR(loss, 1000.0, 1e-3);
  EXPECT_NEAR(d[0], 1.0f, 1e-6f);
  EXPECT_NEAR(d[1], -1.0f, 1e-6f);
  EXPECT_NEAR(d[2], 0.0f, 1e-6f);
}

TEST(SoftmaxCrossEntropyDeathTest, AbortsOnLabelOutsideClasses) {
  const float logits[2] = {0.0f, 1.0f};
  const int32_t label = 2;
  EXPECT_DEATH(softmaxCrossEntropy(logits, &label, 1, 2, nullptr, nullptr), "label 2");
}

}  // namespace
}  // namespace ringmaster::trainer::model
