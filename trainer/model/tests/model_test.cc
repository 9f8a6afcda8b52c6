#include "trainer/model/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "trainer/model/tests/test_util.h"

namespace ringmaster::trainer::model {
namespace {

using ::testing::HasSubstr;
using testing::randomFloats;
using testing::randomLabels;

std::unique_ptr<Model> makeModel(const ModelConfig& c, uint64_t seed, int max_batch) {
  auto m = Model::create(c, seed, max_batch);
  EXPECT_TRUE(m.ok()) << m.status().toString();
  return m.ok() ? std::move(m).value() : nullptr;
}

ModelConfig smallCnn() {
  ModelConfig c;
  c.type = ModelKind::kCnn;
  c.conv_channels = {4, 8};
  c.input_height = 12;
  c.input_width = 12;
  c.num_classes = 5;
  return c;
}

ModelConfig smallMlp() {
  ModelConfig c;
  c.hidden = {16, 8};
  c.input_height = 6;
  c.input_width = 6;
  c.num_classes = 5;
  return c;
}

std::string createError(const ModelConfig& c, int max_batch = 4) {
  auto m = Model::create(c, 1, max_batch);
  EXPECT_FALSE(m.ok());
  if (m.ok()) return "";
  EXPECT_EQ(m.status().code(), core::Code::kInvalidArgument);
  return m.status().message();
}

TEST(ModelCreate, RejectsBadConfigNamingTheField) {
  ModelConfig c;
  c.hidden = {512, 0};
  EXPECT_THAT(createError(c), HasSubstr("model.hidden[1]"));
  c = ModelConfig();
  c.num_classes = 1;
  EXPECT_THAT(createError(c), HasSubstr("model.numClasses"));
  c = ModelConfig();
  c.input_height = 0;
  EXPECT_THAT(createError(c), HasSubstr("model.inputHeight"));
  c = smallCnn();
  c.conv_channels = {4, 8, 8, 8};  // 12 -> 6 -> 3 -> 1 -> too small
  EXPECT_THAT(createError(c), HasSubstr("model.convChannels[3]"));
  c = smallCnn();
  c.conv_channels = {};
  EXPECT_THAT(createError(c), HasSubstr("model.convChannels"));
  c = smallCnn();
  c.cnn_hidden = -1;
  EXPECT_THAT(createError(c), HasSubstr("model.cnnHidden"));
  EXPECT_THAT(createError(ModelConfig(), 0), HasSubstr("max_batch"));
  c = ModelConfig();
  c.hidden = {1 << 30};  // 784 * 2^30 weights
  EXPECT_THAT(createError(c), HasSubstr("too large"));
  c = smallCnn();
  c.conv_channels = {1 << 28};
  EXPECT_THAT(createError(c), HasSubstr("model.convChannels[0]"));
}

TEST(ModelCreate, SignatureDescribesTheArchitecture) {
  EXPECT_EQ(makeModel(ModelConfig(), 1, 2)->signature(), "mlp:784-512-512-10");
  ModelConfig cnn;
  cnn.type = ModelKind::kCnn;
  EXPECT_EQ(makeModel(cnn, 1, 2)->signature(), "cnn:1x28x28-c16-c32-10");
  cnn.cnn_hidden = 64;
  EXPECT_EQ(makeModel(cnn, 1, 2)->signature(), "cnn:1x28x28-c16-c32-h64-10");
}

TEST(ModelCreate, ParamViewsTileTheBufferInForwardOrder) {
  auto m = makeModel(ModelConfig(), 1, 2);
  const auto& v = m->paramViews();
  ASSERT_EQ(v.size(), 6u);
  const std::vector<std::pair<std::string, size_t>> want = {
      {"fc1.weight", 784 * 512}, {"fc1.bias", 512},    {"fc2.weight", 512 * 512},
      {"fc2.bias", 512},         {"fc3.weight", 5120}, {"fc3.bias", 10}};
  size_t offset = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i].name, want[i].first);
    EXPECT_EQ(v[i].count, want[i].second);
    EXPECT_EQ(v[i].offset, offset);
    offset += v[i].count;
  }
  EXPECT_EQ(m->params().size(), offset);
  EXPECT_EQ(m->grads().size(), offset);
  EXPECT_EQ(m->inputSize(), 784u);

  ModelConfig cnn;
  cnn.type = ModelKind::kCnn;
  auto c = makeModel(cnn, 1, 2);
  std::vector<std::string> names;
  for (const auto& p : c->paramViews()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight",
                                             "conv2.bias", "fc1.weight", "fc1.bias"}));
  EXPECT_EQ(c->paramViews()[4].count, 32u * 7 * 7 * 10);
}

TEST(ModelCreate, SameSeedGivesIdenticalParamsAndAnotherSeedDoesNot) {
  for (const ModelConfig& c : {smallMlp(), smallCnn()}) {
    auto a = makeModel(c, 42, 4), b = makeModel(c, 42, 8), d = makeModel(c, 43, 4);
    ASSERT_EQ(a->params().size(), b->params().size());
    EXPECT_EQ(0, std::memcmp(a->params().data(), b->params().data(), a->params().size_bytes()));
    EXPECT_NE(0, std::memcmp(a->params().data(), d->params().data(), a->params().size_bytes()));
  }
}

TEST(ModelCreate, InitIsUniformWithinOneOverSqrtFanIn) {
  auto m = makeModel(ModelConfig(), 7, 2);
  for (const ParamView& v : m->paramViews()) {
    const int fan_in = v.name.starts_with("fc1") ? 784 : v.name.starts_with("fc2") ? 512 : 512;
    const double bound = 1.0 / std::sqrt(fan_in);
    auto p = m->params().subspan(v.offset, v.count);
    double sum = 0, max_abs = 0;
    for (float x : p) {
      sum += x;
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
    }
    EXPECT_LE(max_abs, bound * (1 + 1e-6)) << v.name;
    if (v.count >= 5000) {
      // U(-b, b): mean ~0 (sd b/sqrt(3n)), max |x| close to b.
      EXPECT_LT(std::fabs(sum / v.count), 5 * bound / std::sqrt(3.0 * v.count)) << v.name;
      EXPECT_GT(max_abs, 0.99 * bound) << v.name;
    }
  }
}

// Runs forwardLoss + backward and records the on_ready calls.
std::vector<std::pair<size_t, size_t>> readyRanges(Model& m, int batch, uint64_t seed) {
  const auto x = randomFloats(batch * m.inputSize(), seed);
  const auto labels = randomLabels(batch, m.numClasses(), seed);
  m.forwardLoss(x.data(), labels.data(), batch, nullptr);
  std::vector<std::pair<size_t, size_t>> ranges;
  m.backward([&](size_t offset, size_t count) { ranges.emplace_back(offset, count); });
  return ranges;
}

TEST(ModelBackward, ReadyRangesArriveFromTheEndAndCoverTheBufferExactlyOnce) {
  for (const ModelConfig& c : {ModelConfig(), smallMlp(), smallCnn()}) {
    auto m = makeModel(c, 3, 4);
    const auto ranges = readyRanges(*m, 4, 5);
    ASSERT_FALSE(ranges.empty());
    size_t end = m->grads().size();
    for (const auto& [offset, count] : ranges) {
      EXPECT_GT(count, 0u);
      EXPECT_EQ(offset + count, end) << "ranges must be contiguous, decreasing, disjoint";
      end = offset;
    }
    EXPECT_EQ(end, 0u) << m->signature();
    // One range per layer, and each starts at a weight.
    for (const auto& range : ranges) {
      EXPECT_TRUE(std::any_of(m->paramViews().begin(), m->paramViews().end(), [&](auto& v) {
        return v.offset == range.first && v.name.ends_with(".weight");
      }));
    }
  }
}

TEST(ModelBackward, NeverTouchesARangeAfterAnnouncingIt) {
  // The callback doubles each range as soon as it is ready (like an in-place allreduce of two
  // equal ranks); the result must be exactly twice a plain backward.
  for (const ModelConfig& c : {smallMlp(), smallCnn()}) {
    auto m = makeModel(c, 3, 4);
    const auto x = randomFloats(4 * m->inputSize(), 8);
    const auto labels = randomLabels(4, m->numClasses(), 9);
    m->forwardLoss(x.data(), labels.data(), 4, nullptr);
    m->backward({});
    const std::vector<float> plain(m->grads().begin(), m->grads().end());
    m->forwardLoss(x.data(), labels.data(), 4, nullptr);
    m->backward([&](size_t offset, size_t count) {
      for (float& g : m->grads().subspan(offset, count)) g *= 2;
    });
    for (size_t i = 0; i < plain.size(); ++i) {
      ASSERT_EQ(m->grads()[i], 2 * plain[i]) << m->signature() << " grad " << i;
    }
  }
}

TEST(ModelBackward, IsDeterministicAndOverwritesGradients) {
  for (const ModelConfig& c : {smallMlp(), smallCnn()}) {
    auto a = makeModel(c, 3, 6), b = makeModel(c, 3, 6);
    std::fill(b->grads().begin(), b->grads().end(), 123.0f);  // stale values must not leak in
    readyRanges(*a, 6, 10);
    readyRanges(*b, 6, 10);
    EXPECT_EQ(0, std::memcmp(a->grads().data(), b->grads().data(), a->grads().size_bytes()));
  }
}

TEST(ModelBackward, UsesItsOwnCopyOfTheInput) {
  auto m = makeModel(smallCnn(), 3, 4);
  auto x = randomFloats(4 * m->inputSize(), 11);
  const auto labels = randomLabels(4, m->numClasses(), 12);
  m->forwardLoss(x.data(), labels.data(), 4, nullptr);
  m->backward({});
  const std::vector<float> want(m->grads().begin(), m->grads().end());
  m->forwardLoss(x.data(), labels.data(), 4, nullptr);
  std::fill(x.begin(), x.end(), 0.5f);  // the caller refills its buffer during backward
  m->backward({});
  EXPECT_EQ(0, std::memcmp(want.data(), m->grads().data(), m->grads().size_bytes()));
}

TEST(ModelBackward, ModelsInConcurrentThreadsMatchASequentialRun) {
  // Ranks run as threads in the trainer's tests: models must share no hidden state.
  auto run = [](std::vector<float>* grads, uint64_t seed) {
    auto m = makeModel(smallCnn(), seed, 8);
    for (int step = 0; step < 3; ++step) {
      readyRanges(*m, 8, seed + step);
      for (size_t i = 0; i < m->params().size(); ++i) m->params()[i] -= 0.1f * m->grads()[i];
    }
    grads->assign(m->grads().begin(), m->grads().end());
  };
  std::vector<float> want[2], got[2];
  run(&want[0], 1);
  run(&want[1], 2);
  std::thread t0(run, &got[0], 1), t1(run, &got[1], 2);
  t0.join();
  t1.join();
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[1]);
}

TEST(ModelEvaluate, MatchesForwardLossHitsAndLossAcrossSlices) {
  for (const ModelConfig& c : {smallMlp(), smallCnn()}) {
    auto m = makeModel(c, 5, 16);
    const int n = 40;  // evaluate() slices it into 16 + 16 + 8
    const auto x = randomFloats(n * m->inputSize(), 13);
    const auto labels = randomLabels(n, m->numClasses(), 14);
    int want_hits = 0;
    double want_loss = 0;
    for (int n0 = 0; n0 < n; n0 += 16) {
      const int b = std::min(16, n - n0);
      int hits = 0;
      want_loss += static_cast<double>(m->forwardLoss(x.data() + n0 * m->inputSize(),
                                                      labels.data() + n0, b, &hits)) *
                   b;
      want_hits += hits;
    }
    double loss = 1.0;  // evaluate adds to it
    EXPECT_EQ(m->evaluate(x.data(), labels.data(), n, &loss), want_hits);
    EXPECT_NEAR(loss - 1.0, want_loss, 1e-4 * want_loss);
    EXPECT_EQ(m->evaluate(x.data(), labels.data(), n), want_hits);
    EXPECT_EQ(m->evaluate(x.data(), labels.data(), 0), 0);
  }
}

// Two Gaussian-ish blobs per class around fixed centres: linearly separable.
void separableData(int n, int dim, int classes, std::vector<float>* x, std::vector<int32_t>* y) {
  const auto centres = randomFloats(classes * dim, 77, -1.0f, 1.0f);
  const auto noise = randomFloats(n * dim, 78, -0.3f, 0.3f);
  x->resize(n * dim);
  y->resize(n);
  for (int i = 0; i < n; ++i) {
    (*y)[i] = i % classes;
    for (int d = 0; d < dim; ++d)
      (*x)[i * dim + d] = centres[(i % classes) * dim + d] + noise[i * dim + d];
  }
}

TEST(ModelTraining, LossFallsAndAccuracyRisesOnASeparableProblem) {
  for (const ModelConfig& c : {smallMlp(), smallCnn()}) {
    const int n = 32;
    auto m = makeModel(c, 9, n);
    std::vector<float> x;
    std::vector<int32_t> y;
    separableData(n, static_cast<int>(m->inputSize()), m->numClasses(), &x, &y);
    int correct = 0;
    const float first = m->forwardLoss(x.data(), y.data(), n, &correct);
    float last = first;
    std::vector<float> momentum(m->params().size());
    for (int step = 0; step < 80; ++step) {
      m->backward({});
      auto p = m->params();
      auto g = m->grads();
      for (size_t i = 0; i < p.size(); ++i) {
        momentum[i] = 0.9f * momentum[i] + g[i];
        p[i] -= 0.05f * momentum[i];
      }
      last = m->forwardLoss(x.data(), y.data(), n, &correct);
    }
    EXPECT_LT(last, 0.1f * first) << m->signature();
    EXPECT_EQ(correct, n) << m->signature();
  }
}

TEST(ModelDeathTest, AbortsOnBrokenCallContracts) {
  auto m = makeModel(smallMlp(), 1, 4);
  const auto x = randomFloats(8 * m->inputSize(), 1);
  const std::vector<int32_t> labels(8, 0);
  EXPECT_DEATH(m->forwardLoss(x.data(), labels.data(), 5, nullptr), "batch 5 outside");
  EXPECT_DEATH(m->backward({}), "backward\\(\\) needs a forwardLoss");
  m->forwardLoss(x.data(), labels.data(), 4, nullptr);
  m->evaluate(x.data(), labels.data(), 4);
  EXPECT_DEATH(m->backward({}), "after the last evaluate");
}

}  // namespace
}  // namespace ringmaster::trainer::model
