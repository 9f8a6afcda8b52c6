// model_bench: samples/s of one rank's compute (no communication) at batch 128 with one OpenBLAS
// thread, for the default MLP and CNN: forward only, forward+backward, and forward+backward+SGD
// step (the step a one-thread PyTorch loop does). A check for model changes: run it on the build
// before and after and compare the two (Google Benchmark's compare.py, from libbenchmark-tools,
// prints the ratios). The comparison with PyTorch itself lives in bench/train.
//
// Usage: model_bench [--benchmark_filter=cnn] [--benchmark_repetitions=5] [--benchmark_min_time=2]
// samples/s is the items_per_second column, per CPU-second of the benchmark's thread (steadier
// on a busy machine than per wall second, which the Time column gives).

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <memory>
#include <string>
#include <vector>

#include "trainer/model/init.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"

namespace {

using namespace ringmaster::trainer;

constexpr int kBatch = 128;

enum class Phase { kForward, kForwardBackward, kTrainStep };

// One model with a fixed random batch; built outside the timed loop.
struct Bench {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::vector<float> x;
  std::vector<int32_t> labels;
};

bool build(const model::ModelConfig& config, Bench& b, benchmark::State& state) {
  auto created = model::Model::create(config, 1, kBatch);
  if (!created.ok()) {
    state.SkipWithError(created.status().toString().c_str());
    return false;
  }
  b.model = std::move(created).value();
  auto optimizer = optim::Optimizer::create(optim::OptimizerConfig(), b.model->params().size());
  if (!optimizer.ok()) {
    state.SkipWithError(optimizer.status().toString().c_str());
    return false;
  }
  b.optimizer = std::move(optimizer).value();
  model::Rng rng(7);
  b.x.resize(static_cast<size_t>(kBatch) * b.model->inputSize());
  for (float& v : b.x) v = rng.uniform(0.0f, 1.0f);
  b.labels.resize(kBatch);
  for (int32_t& l : b.labels) l = static_cast<int32_t>(rng.next() % b.model->numClasses());
  return true;
}

void samplesPerSecond(benchmark::State& state, const model::ModelConfig& config, Phase phase) {
  Bench b;
  if (!build(config, b, state)) return;
  model::Model& m = *b.model;
  auto step = [&] {
    if (phase == Phase::kForward) {
      m.evaluate(b.x.data(), b.labels.data(), kBatch);
      return;
    }
    m.forwardLoss(b.x.data(), b.labels.data(), kBatch, nullptr);
    m.backward({});
    if (phase == Phase::kTrainStep) b.optimizer->step(m.params(), m.grads());
  };
  for (int i = 0; i < 5; ++i) step();  // warm caches and OpenBLAS's buffers
  for (auto _ : state) step();
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(m.signature() + ", " + std::to_string(m.params().size()) + " params");
}

void registerModel(const std::string& name, const model::ModelConfig& config) {
  const struct {
    const char* name;
    Phase phase;
  } kPhases[] = {{"forward", Phase::kForward},
                 {"forward_backward", Phase::kForwardBackward},
                 {"train_step", Phase::kTrainStep}};
  for (const auto& p : kPhases) {
    benchmark::RegisterBenchmark((name + "/" + p.name).c_str(), samplesPerSecond, config, p.phase)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("batch", std::to_string(kBatch));
  benchmark::AddCustomContext("openblas", openblas_get_config());
  model::ModelConfig mlp;
  model::ModelConfig cnn;
  cnn.type = model::ModelKind::kCnn;
  registerModel("mlp", mlp);
  registerModel("cnn", cnn);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
