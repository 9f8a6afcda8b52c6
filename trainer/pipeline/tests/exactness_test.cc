// A pipeline trains the same network as one process: after 20 SGD steps (momentum 0.9) on the
// same mini-batches, S stages with M micro-batches under gpipe and 1f1b, and T tensor-parallel
// ranks per stage, hold the parameters a single Model holds, to a relative difference of 1e-5
// (fp32, summation order the only difference). Stages run as threads over inproc and, for one
// shape, tcp and gloo (real sockets, sends that wait for their receiver); and over a model of
// NCCL's point-to-point rules (comm/tests/nccl_model.h), where the stages' messages travel as
// the GPU's do, in groups that must not wait on each other.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "trainer/comm/inproc_communicator.h"
#include "trainer/comm/tests/rank_threads.h"
#include "trainer/model/model.h"
#include "trainer/model/model_stage.h"
#include "trainer/model/network.h"
#include "trainer/model/tests/test_util.h"
#include "trainer/optim/optimizer.h"
#include "trainer/pipeline/partition.h"
#include "trainer/pipeline/stage_executor.h"

namespace ringmaster::trainer::pipeline {
namespace {

constexpr int kSteps = 20;
constexpr int kBatch = 16;
constexpr uint64_t kSeed = 11;

model::ModelConfig network() {
  model::ModelConfig c;
  c.hidden = {64, 48, 32};  // four layers: up to four stages of one layer
  return c;
}

optim::OptimizerConfig sgd() {
  optim::OptimizerConfig c;
  c.learning_rate = 0.05;
  c.momentum = 0.9;
  return c;
}

// Mini-batch `step`: the same on every rank and for the reference.
struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
};
Data batchAt(int step, size_t input) {
  return {model::testing::randomFloats(kBatch * input, 100 + step),
          model::testing::randomLabels(kBatch, 10, 200 + step)};
}

std::vector<float> trainOneProcess() {
  auto m = model::Model::create(network(), kSeed, kBatch);
  EXPECT_TRUE(m.ok());
  auto opt = optim::Optimizer::create(sgd(), (*m)->params().size());
  for (int step = 0; step < kSteps; ++step) {
    const Data d = batchAt(step, (*m)->inputSize());
    (*m)->forwardLoss(d.x.data(), d.y.data(), kBatch, nullptr);
    (*m)->backward({});
    (*opt)->step((*m)->params(), (*m)->grads());
  }
  return {(*m)->params().begin(), (*m)->params().end()};
}

struct Shape {
  const char* backend;
  ScheduleKind kind;
  int stages, micro;
};

// Every stage's parameters after kSteps, concatenated in stage order.
std::vector<float> trainPipeline(const Shape& shape) {
  const int layers = *model::ModelStage::layerCount(network());
  // Even cut (by layer count): the cut does not change the mathematics.
  StageStarts starts;
  for (int s = 0; s < shape.stages; ++s) starts.push_back(s * layers / shape.stages);
  auto comms = comm::testing::makeCommunicators(shape.backend, shape.stages);
  EXPECT_EQ(comms.size(), static_cast<size_t>(shape.stages));
  std::vector<std::vector<float>> params(shape.stages);
  const int micro_rows = (kBatch + shape.micro - 1) / shape.micro;
  comm::testing::runRanks(shape.stages, [&](int s) {
    const int end = s + 1 < shape.stages ? starts[s + 1] : layers;
    auto slots = StageExecutor::slotsNeeded(shape.kind, s, shape.stages, shape.micro);
    ASSERT_TRUE(slots.ok());
    auto stage = model::ModelStage::create(network(), kSeed, micro_rows, starts[s], end, *slots);
    ASSERT_TRUE(stage.ok()) << stage.status().toString();
    auto opt = optim::Optimizer::create(sgd(), (*stage)->params().size());
    StageLinks links;
    links.comm = comms[s].get();
    links.prev = s > 0 ? s - 1 : -1;
    links.next = s + 1 < shape.stages ? s + 1 : -1;
    StageExecutor executor(**stage, shape.kind, s, shape.stages, shape.micro, links);
    const size_t input = model::Model::create(network(), kSeed, 1).value()->inputSize();
    for (int step = 0; step < kSteps; ++step) {
      const Data d = batchAt(step, input);
      auto stats = executor.run({d.x.data(), d.y.data(), kBatch}, step);
      ASSERT_TRUE(stats.ok()) << stats.status().toString();
      (*opt)->step((*stage)->params(), (*stage)->grads());
    }
    params[s].assign((*stage)->params().begin(), (*stage)->params().end());
  });
  std::vector<float> all;
  for (auto& p : params) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// max_i |a_i - b_i| / max_i |b_i|: the difference relative to the parameters' scale.
double relativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

// The one-process parameters after kSteps (computed once), and the check every shape makes:
// within 1e-5, with the difference recorded in the test's XML output.
const std::vector<float>& oneProcess() {
  static const std::vector<float> want = trainOneProcess();
  return want;
}
void expectExact(const std::vector<float>& got) {
  const std::vector<float>& want = oneProcess();
  ASSERT_EQ(got.size(), want.size());
  const double diff = relativeDifference(got, want);
  EXPECT_LE(diff, 1e-5);
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", diff);
  ::testing::Test::RecordProperty("relative_difference", text);
}

class PipelineExactness : public ::testing::TestWithParam<Shape> {};

TEST_P(PipelineExactness, MatchesOneProcessAfterTwentySteps) {
  expectExact(trainPipeline(GetParam()));
  const std::vector<float>& want = oneProcess();
  // The parameters moved: a pipeline that skipped its updates would match the start, not this.
  auto start = model::Model::create(network(), kSeed, 1);
  const auto p0 = (*start)->params();
  EXPECT_GT(relativeDifference(std::vector<float>(p0.begin(), p0.end()), want), 1e-3);
}

// Tensor parallelism, alone and inside a pipeline: S stages x T tensor ranks (rank s * T + t),
// each tensor group summing over an inproc group of its own. The parts, put back together, are
// the single process's parameters after 20 steps.
struct TensorShape {
  int stages, tensor, micro;
  ScheduleKind kind;
};

// Every rank's parts placed into the whole network's flat layout (Model::paramViews); a tensor
// every rank holds whole must be the same on all of them.
std::vector<float> assemble(const std::vector<std::vector<float>>& parts, const TensorShape& shape,
                            const StageStarts& starts) {
  auto whole_model = model::Model::create(network(), kSeed, 1);
  std::map<std::string, model::ParamView> views;
  for (const auto& v : (*whole_model)->paramViews()) views[v.name] = v;
  std::vector<float> out((*whole_model)->params().size(), 0.0f);
  const int layers = *model::ModelStage::layerCount(network());
  for (int s = 0; s < shape.stages; ++s) {
    for (int t = 0; t < shape.tensor; ++t) {
      auto net = model::buildNetwork(network(), 1, {t, shape.tensor});
      EXPECT_TRUE(net.ok());
      const std::vector<float>& mine = parts[s * shape.tensor + t];
      size_t offset = 0;
      const int end = s + 1 < shape.stages ? starts[s + 1] : layers;
      for (int i = starts[s]; i < end; ++i) {
        for (const model::ParamSpec& p : net->layers[i]->paramSpecs()) {
          const model::ParamView& v = views.at(p.name);
          if (!p.block) {
            if (t == 0) {
              std::copy(mine.begin() + offset, mine.begin() + offset + p.count,
                        out.begin() + v.offset);
            } else {
              EXPECT_TRUE(std::equal(mine.begin() + offset, mine.begin() + offset + p.count,
                                     out.begin() + v.offset))
                  << p.name << " differs between tensor ranks";
            }
          } else {
            const model::TensorBlock& b = *p.block;
            for (size_t r = 0; r < b.rows; ++r) {
              std::copy(mine.begin() + offset + r * b.cols,
                        mine.begin() + offset + (r + 1) * b.cols,
                        out.begin() + v.offset + (b.row0 + r) * b.full_cols + b.col0);
            }
          }
          offset += p.count;
        }
      }
      EXPECT_EQ(offset, mine.size());
    }
  }
  return out;
}

std::vector<float> trainTensorParallel(const TensorShape& shape) {
  const int layers = *model::ModelStage::layerCount(network());
  // Stages start at even layers: a stage never cuts a column/row pair.
  StageStarts starts;
  for (int s = 0; s < shape.stages; ++s) starts.push_back(2 * (s * (layers / 2) / shape.stages));
  const int world = shape.stages * shape.tensor;
  auto comms = comm::testing::makeCommunicators("inproc", world);
  std::vector<std::vector<std::unique_ptr<comm::Communicator>>> tensor_groups;
  for (int s = 0; s < shape.stages; ++s) {
    tensor_groups.push_back(comm::makeInProcCommunicators(shape.tensor));
  }
  std::vector<std::vector<float>> parts(world);
  const int micro_rows = kBatch / shape.micro;
  comm::testing::runRanks(world, [&](int r) {
    const int s = r / shape.tensor, t = r % shape.tensor;
    const int end = s + 1 < shape.stages ? starts[s + 1] : layers;
    auto slots = StageExecutor::slotsNeeded(shape.kind, s, shape.stages, shape.micro);
    auto stage = model::ModelStage::create(network(), kSeed, micro_rows, starts[s], end, *slots,
                                           {t, shape.tensor});
    ASSERT_TRUE(stage.ok()) << stage.status().toString();
    comm::Communicator* group = tensor_groups[s][t].get();
    (*stage)->setTensorReducer(
        [group](float* data, size_t count) { return group->allreduceSum(data, count, {}); });
    auto opt = optim::Optimizer::create(sgd(), (*stage)->params().size());
    StageLinks links{comms[r].get(),
                     s > 0 ? r - shape.tensor : -1,
                     s + 1 < shape.stages ? r + shape.tensor : -1,
                     {}};
    StageExecutor executor(**stage, shape.kind, s, shape.stages, shape.micro, links);
    for (int step = 0; step < kSteps; ++step) {
      const Data d = batchAt(step, 784);
      auto stats = executor.run({d.x.data(), d.y.data(), kBatch}, step);
      ASSERT_TRUE(stats.ok()) << stats.status().toString();
      (*opt)->step((*stage)->params(), (*stage)->grads());
    }
    parts[r].assign((*stage)->params().begin(), (*stage)->params().end());
  });
  return assemble(parts, shape, starts);
}

class TensorExactness : public ::testing::TestWithParam<TensorShape> {};

TEST_P(TensorExactness, MatchesOneProcessAfterTwentySteps) {
  expectExact(trainTensorParallel(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, TensorExactness,
                         ::testing::Values(TensorShape{1, 2, 1, ScheduleKind::kGPipe},
                                           TensorShape{1, 4, 4, ScheduleKind::kOneFOneB},
                                           TensorShape{2, 2, 4, ScheduleKind::kOneFOneB},
                                           TensorShape{2, 2, 8, ScheduleKind::kGPipe}),
                         [](const auto& info) {
                           const TensorShape& s = info.param;
                           return "S" + std::to_string(s.stages) + "_T" + std::to_string(s.tensor) +
                                  "_M" + std::to_string(s.micro) +
                                  (s.kind == ScheduleKind::kGPipe ? "_gpipe" : "_onefoneb");
                         });

TEST(TensorParallel, RejectsWidthsItCannotSplitAndConvLayersNamingTheField) {
  auto uneven = model::ModelStage::create(network(), kSeed, 4, 0, 4, 1, {0, 5});
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.status().message().find("parallelism.tensor: 5 does not divide model.hidden[0]"),
            std::string::npos)
      << uneven.status().message();
  model::ModelConfig cnn;
  cnn.type = model::ModelKind::kCnn;
  auto conv = model::ModelStage::create(cnn, kSeed, 4, 0, 3, 1, {0, 2});
  ASSERT_FALSE(conv.ok());
  EXPECT_NE(conv.status().message().find("conv layers cannot be split"), std::string::npos);
  auto odd = model::ModelStage::create(network(), kSeed, 4, 1, 4, 1, {0, 2});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("second of a tensor-parallel pair"), std::string::npos);
}

// Activation memory, measured as the bytes of slots each stage allocated while training: 1f1b
// holds at most (S / M) of gpipe's plus one micro-batch's, on every stage.
TEST(PipelineMemory, OneFOneBHoldsAtMostSOverMOfGPipesActivationsPlusOneMicroBatch) {
  constexpr int kStages = 4;
  for (int micro : {4, 8, 16}) {
    std::vector<size_t> bytes[2];
    for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
      auto comms = comm::testing::makeCommunicators("inproc", kStages);
      std::vector<size_t>& out = bytes[kind == ScheduleKind::kGPipe ? 0 : 1];
      out.assign(kStages, 0);
      comm::testing::runRanks(kStages, [&](int s) {
        auto slots = StageExecutor::slotsNeeded(kind, s, kStages, micro);
        auto stage = model::ModelStage::create(network(), kSeed, kBatch / micro, s, s + 1, *slots);
        ASSERT_TRUE(stage.ok()) << stage.status().toString();
        StageLinks links{comms[s].get(), s > 0 ? s - 1 : -1, s + 1 < kStages ? s + 1 : -1, {}};
        StageExecutor executor(**stage, kind, s, kStages, micro, links);
        const Data d = batchAt(0, 784);
        ASSERT_TRUE(executor.run({d.x.data(), d.y.data(), kBatch}, 0).ok());
        out[s] = (*stage)->activationBytes();
      });
    }
    for (int s = 0; s < kStages; ++s) {
      const double gpipe = static_cast<double>(bytes[0][s]);
      const double one_micro = gpipe / micro;
      const double bound = static_cast<double>(kStages) / micro * gpipe + one_micro;
      std::printf("M=%d stage %d: gpipe %zu B, 1f1b %zu B (bound %.0f B)\n", micro, s, bytes[0][s],
                  bytes[1][s], bound);
      EXPECT_LE(static_cast<double>(bytes[1][s]), bound) << "M=" << micro << " stage " << s;
      // Stage s keeps S - s micro-batches under 1f1b: fewer than gpipe's M once M exceeds it.
      if (micro > kStages - s) {
        EXPECT_LT(bytes[1][s], bytes[0][s]) << "M=" << micro << " stage " << s;
      }
    }
  }
}

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
    for (int stages : {2, 4}) {
      for (int micro : {1, 4, 8}) out.push_back({"inproc", kind, stages, micro});
    }
    out.push_back({"inproc", kind, 3, 5});  // micro-batches of 4 and 3 rows
    out.push_back({"gloo", kind, 4, 8});
    out.push_back({"tcp", kind, 4, 8});
    // GPU stages' messages: every schedule's crossing sends must travel in groups.
    for (int stages : {2, 3, 4}) {
      for (int micro : {1, 4, 5, 8}) out.push_back({"nccl-model", kind, stages, micro});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelineExactness, ::testing::ValuesIn(shapes()),
                         [](const auto& info) {
                           const Shape& s = info.param;
                           std::string backend = s.backend;
                           std::replace(backend.begin(), backend.end(), '-', '_');
                           return backend + "_" +
                                  (s.kind == ScheduleKind::kGPipe ? "gpipe" : "onefoneb") + "_S" +
                                  std::to_string(s.stages) + "_M" + std::to_string(s.micro);
                         });

}  // namespace
}  // namespace ringmaster::trainer::pipeline
