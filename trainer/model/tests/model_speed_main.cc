// model_speed: samples/s of one rank's compute (no communication) at batch 128 with one
// OpenBLAS thread, for the default MLP and CNN: forward only, forward+backward, and
// forward+backward+SGD step (the step a 1-thread PyTorch loop does). A quick check for
// model changes; the comparison with PyTorch lives in bench/train.
//
// Usage: model_speed [seconds per measurement, default 2]

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <vector>

#include "trainer/model/init.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"

namespace {

using namespace ringmaster::trainer;
using Clock = std::chrono::steady_clock;

constexpr int kBatch = 128;
constexpr int kRepeats = 5;

double threadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Rate {
  double wall;  // samples per wall-clock second
  double cpu;   // samples per second of this thread's CPU time (steadier on a busy machine)
};

// Medians over kRepeats runs of about `seconds` / kRepeats each.
Rate samplesPerSecond(const std::function<void()>& step, double seconds) {
  for (int i = 0; i < 5; ++i) step();  // warm up caches and OpenBLAS buffers
  std::vector<double> wall, cpu;
  for (int r = 0; r < kRepeats; ++r) {
    int steps = 0;
    const auto start = Clock::now();
    const double cpu_start = threadCpuSeconds();
    double elapsed = 0;
    do {
      step();
      ++steps;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < seconds / kRepeats);
    wall.push_back(steps * kBatch / elapsed);
    cpu.push_back(steps * kBatch / (threadCpuSeconds() - cpu_start));
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[kRepeats / 2], cpu[kRepeats / 2]};
}

int run(const model::ModelConfig& config, double seconds) {
  auto created = model::Model::create(config, 1, kBatch);
  if (!created.ok()) {
    std::fprintf(stderr, "model_speed: %s\n", created.status().toString().c_str());
    return 1;
  }
  model::Model& m = **created;
  auto opt = optim::Optimizer::create(optim::OptimizerConfig(), m.params().size());
  if (!opt.ok()) {
    std::fprintf(stderr, "model_speed: %s\n", opt.status().toString().c_str());
    return 1;
  }
  model::Rng rng(7);
  std::vector<float> x(kBatch * m.inputSize());
  for (float& v : x) v = rng.uniform(0.0f, 1.0f);
  std::vector<int32_t> labels(kBatch);
  for (int32_t& l : labels) l = static_cast<int32_t>(rng.next() % m.numClasses());

  const Rate fwd = samplesPerSecond([&] { m.evaluate(x.data(), labels.data(), kBatch); }, seconds);
  const Rate fwd_bwd = samplesPerSecond(
      [&] {
        m.forwardLoss(x.data(), labels.data(), kBatch, nullptr);
        m.backward({});
      },
      seconds);
  const Rate train = samplesPerSecond(
      [&] {
        m.forwardLoss(x.data(), labels.data(), kBatch, nullptr);
        m.backward({});
        (*opt)->step(m.params(), m.grads());
      },
      seconds);
  std::printf(
      "%-24s %8zu params  forward %7.0f (%7.0f)  fwd+bwd %7.0f (%7.0f)  "
      "fwd+bwd+sgd %7.0f (%7.0f)\n",
      m.signature().c_str(), m.params().size(), fwd.wall, fwd.cpu, fwd_bwd.wall, fwd_bwd.cpu,
      train.wall, train.cpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  openblas_set_num_threads(1);
  std::printf("samples/s at batch %d, 1 OpenBLAS thread (%s); wall (per CPU-second)\n", kBatch,
              openblas_get_config());
  model::ModelConfig mlp;
  model::ModelConfig cnn;
  cnn.type = "cnn";
  return run(mlp, seconds) | run(cnn, seconds);
}
