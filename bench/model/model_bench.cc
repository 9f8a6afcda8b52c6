// model_bench: samples/s of one rank's compute (no communication) at batch 128 with one OpenBLAS
// thread, for the default MLP and CNN: forward only, forward+backward, and forward+backward+SGD
// step (the step a one-thread PyTorch loop does). A check for model changes: run it on the build
// before and after and compare the two (Google Benchmark's compare.py, from libbenchmark-tools,
// prints the ratios). The comparison with PyTorch itself lives in bench/train.
//
// Usage: model_bench [--benchmark_filter=cnn] [--benchmark_repetitions=5] [--benchmark_min_time=2]
// samples/s is the items_per_second column, per CPU-second of the benchmark's thread (steadier
// on a busy machine than per wall second, which the Time column gives). The MLP's rows also count
// FLOP/s (2 per multiply-add of its dense layers' products: forward; backward, the weights'
// gradients and every layer's input gradient but the first's), beside
// sgemm/1024, a square product's FLOP/s: the core's practical peak under OpenBLAS, which says how
// much faster the MLP's step could be at all.

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
  if (config.type == model::ModelKind::kMlp) {
    // Multiply-adds per sample, one per weight and product: forward; backward, the weights'
    // gradients and the inputs' (but the first layer's, which nothing needs).
    double weights = 0, first = 0;
    for (const model::ParamView& view : m.paramViews()) {
      if (!view.name.ends_with(".weight")) continue;
      if (weights == 0) first = static_cast<double>(view.count);
      weights += static_cast<double>(view.count);
    }
    const double products = phase == Phase::kForward ? weights : 3 * weights - first;
    state.counters["FLOP/s"] =
        benchmark::Counter(2 * products * kBatch * static_cast<double>(state.iterations()),
                           benchmark::Counter::kIsRate);
  }
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

// C = A * B of n x n floats on one OpenBLAS thread.
void sgemmPeak(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
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
  benchmark::RegisterBenchmark("sgemm", sgemmPeak)->Arg(1024)->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
