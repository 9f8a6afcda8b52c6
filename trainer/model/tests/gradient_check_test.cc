// Whole-model gradients (MLP, CNN) against central differences of the loss. The model is
// fp32, so each difference is taken with two step sizes: where they disagree the step crossed a
// ReLU or max-pool kink and that parameter is skipped (rare; the test bounds how rare).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/model/tests/test_util.h"

namespace ringmaster::trainer::model {
namespace {

using testing::near;
using testing::randomFloats;
using testing::randomLabels;

constexpr double kAtol = 3e-4, kRtol = 2e-2;

void checkGradients(const ModelConfig& config, int batch, uint64_t seed) {
  auto created = Model::create(config, seed, batch);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  Model& m = **created;
  const auto x = randomFloats(batch * m.inputSize(), seed + 1);
  const auto labels = randomLabels(batch, config.num_classes, seed + 2);
  m.forwardLoss(x.data(), labels.data(), batch, nullptr);
  m.backward({});
  const std::vector<float> grads(m.grads().begin(), m.grads().end());

  auto mean_loss = [&] {
    double sum = 0;
    m.evaluate(x.data(), labels.data(), batch, &sum);
    return sum / batch;
  };
  auto central = [&](float& p, double step) {
    const float saved = p;
    p = static_cast<float>(saved + step);
    const double up = mean_loss();
    const double h_up = static_cast<double>(p) - saved;  // the step fp32 actually took
    p = static_cast<float>(saved - step);
    const double down = mean_loss();
    const double h_down = saved - static_cast<double>(p);
    p = saved;
    return (up - down) / (h_up + h_down);
  };

  std::span<float> params = m.params();
  int checked = 0, skipped = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const double fd = central(params[i], 1e-3);
    const double fd_half = central(params[i], 5e-4);
    if (!near(fd, fd_half, kAtol, kRtol)) {
      ++skipped;  // a kink between the two steps
      continue;
    }
    ++checked;
    EXPECT_TRUE(near(grads[i], fd, kAtol, kRtol))
        << "param " << i << ": backward " << grads[i] << " vs finite difference " << fd;
  }
  EXPECT_LE(skipped, std::max<int>(2, static_cast<int>(params.size()) / 33))
      << "too many parameters near a kink (" << skipped << " of " << params.size() << ")";
  EXPECT_GT(checked, 0);
}

TEST(ModelGradients, SoftmaxRegressionMatchesFiniteDifferences) {
  ModelConfig c;
  c.hidden = {};
  c.input_height = 3;
  c.input_width = 4;
  c.num_classes = 4;
  checkGradients(c, 3, 1);
}

TEST(ModelGradients, MlpWithTwoReluLayersMatchesFiniteDifferences) {
  ModelConfig c;
  c.hidden = {6, 5};
  c.input_height = 3;
  c.input_width = 4;
  c.num_classes = 4;
  checkGradients(c, 3, 2);
}

TEST(ModelGradients, CnnWithHiddenLayerMatchesFiniteDifferences) {
  ModelConfig c;
  c.type = ModelKind::kCnn;
  c.conv_channels = {3, 4};
  c.cnn_hidden = 6;
  c.input_height = 8;
  c.input_width = 8;
  c.num_classes = 3;
  checkGradients(c, 2, 3);
}

TEST(ModelGradients, CnnWithOddSizesAndTwoInputChannelsMatchesFiniteDifferences) {
  ModelConfig c;
  c.type = ModelKind::kCnn;
  c.conv_channels = {2};
  c.input_channels = 2;
  c.input_height = 7;
  c.input_width = 6;
  c.num_classes = 3;
  checkGradients(c, 2, 4);
}

}  // namespace
}  // namespace ringmaster::trainer::model
