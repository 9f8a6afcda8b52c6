// The GPU conv block's index math (conv_math.h) against the CPU layer's helpers: im2col, the
// pool with its tie-breaking, and the adjoint col2im. Runs without a GPU.

#include "trainer/gpu/conv_math.h"

#include <gtest/gtest.h>

#include <vector>

#include "trainer/model/im2col.h"
#include "trainer/model/pool.h"
#include "trainer/model/tests/test_util.h"

namespace ringmaster::trainer::gpu {
namespace {

using model::testing::randomFloats;

// Odd sizes on purpose: an odd edge that the pool drops, channels > 1, two samples.
constexpr ConvShape kShape{3, 7, 9, 5, 4};
constexpr int kSamples = 2;

model::ConvGeometry geometry() { return {kShape.cin, kShape.h, kShape.w, kShape.k}; }

TEST(ConvMath, Im2colSourceMatchesTheCpuPatchRows) {
  const auto in = randomFloats(kSamples * kShape.cin * kShape.h * kShape.w, 21);
  const model::ConvGeometry g = geometry();
  std::vector<float> xpad(g.paddedSize() * kSamples, 0.0f);
  model::nchwToPaddedNhwc(g, in.data(), kSamples, xpad.data());
  const int64_t rows = int64_t{kSamples} * kShape.h * kShape.w;
  std::vector<float> cols(rows * kShape.kdim());
  model::im2col(g, xpad.data(), kSamples, cols.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < kShape.kdim(); ++c) {
      const int64_t src = im2colSource(kShape, r, c);
      const float expected = cols[r * kShape.kdim() + c];
      ASSERT_EQ(src >= 0 ? in[src] : 0.0f, expected) << "row " << r << " col " << c;
    }
  }
}

TEST(ConvMath, PoolElementMatchesTheCpuPoolIncludingTies) {
  // Integers in [-3, 3]: many ties and many windows whose ReLU is off.
  auto z = randomFloats(kShape.h * kShape.w * kShape.cout, 22, -3.5f, 3.5f);
  for (float& v : z) v = static_cast<float>(static_cast<int>(v));
  const std::vector<float> bias = {0.5f, -1.0f, 0.0f, 2.0f};
  std::vector<float> pooled(kShape.ph() * kShape.pw() * kShape.cout);
  std::vector<uint8_t> route(pooled.size());
  model::poolForward(z.data(), bias.data(), kShape.h, kShape.w, kShape.cout, pooled.data(),
                     route.data());
  for (int py = 0; py < kShape.ph(); ++py) {
    for (int px = 0; px < kShape.pw(); ++px) {
      for (int c = 0; c < kShape.cout; ++c) {
        float v[4];
        for (int pos = 0; pos < 4; ++pos)
          v[pos] = z[poolSourceRow(kShape, 0, py, px, pos) * kShape.cout + c];
        uint8_t r = 9;
        const float out = poolElement(v[0], v[1], v[2], v[3], bias[c], &r);
        const size_t at = (static_cast<size_t>(py) * kShape.pw() + px) * kShape.cout + c;
        ASSERT_EQ(out, pooled[at]) << py << "," << px << "," << c;
        ASSERT_EQ(r, route[at]) << py << "," << px << "," << c;
      }
    }
  }
}

TEST(ConvMath, Col2imGatherIsTheCpuAdjoint) {
  const model::ConvGeometry g = geometry();
  const int64_t rows = int64_t{kSamples} * kShape.h * kShape.w;
  const auto dcols = randomFloats(rows * kShape.kdim(), 23);
  std::vector<float> dxpad(g.paddedSize() * kSamples, 0.0f);
  model::col2imAdd(g, dcols.data(), kSamples, dxpad.data());
  std::vector<float> din(kSamples * kShape.cin * kShape.h * kShape.w);
  model::paddedNhwcToNchw(g, dxpad.data(), kSamples, din.data());
  auto load = [](const float* p, int64_t i) { return p[i]; };
  for (int n = 0; n < kSamples; ++n)
    for (int c = 0; c < kShape.cin; ++c)
      for (int y = 0; y < kShape.h; ++y)
        for (int x = 0; x < kShape.w; ++x) {
          const float expected = din[((n * kShape.cin + c) * kShape.h + y) * kShape.w + x];
          const float got = col2imGather(kShape, dcols.data(), n, c, y, x, load);
          ASSERT_NEAR(got, expected, 1e-5f) << n << "," << c << "," << y << "," << x;
        }
}

}  // namespace
}  // namespace ringmaster::trainer::gpu
