#pragma once
// Test helper: a data-parallel run of `world` ranks as threads of this process over one
// in-process communicator group, as the trainer runs them in pods.

#include <memory>
#include <thread>
#include <vector>

#include "trainer/comm/inproc_communicator.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer::testing {

// Runs `settings` on `world` ranks; returns rank 0's summary (or the first other rank's error).
// Rank 0 reports to `metrics` when given; `params` gets rank 0's final parameters.
inline core::Result<TrainSummary> runRanks(const contract::TrainerSettings& settings, int world,
                                           const data::Dataset& train, const data::Dataset& test,
                                           TrainerMetrics* metrics = nullptr,
                                           std::vector<float>* params = nullptr) {
  auto group = std::make_shared<comm::InProcGroup>(world);
  std::vector<std::unique_ptr<comm::Communicator>> comms;
  for (int r = 0; r < world; ++r)
    comms.push_back(std::make_unique<comm::InProcCommunicator>(group, r));
  std::vector<core::Result<TrainSummary>> results(world, core::internalError("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      TrainerContext ctx;
      ctx.comm = comms[r].get();
      ctx.train = &train;
      ctx.test = &test;
      if (r == 0) ctx.metrics = metrics;
      Trainer trainer(settings, ctx);
      results[r] = trainer.run();
      if (r == 0 && params != nullptr) *params = trainer.parameters();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 1; r < world; ++r) {
    if (!results[r].ok()) return results[r].status().withContext("rank " + std::to_string(r));
  }
  return results[0];
}

}  // namespace ringmaster::trainer::testing
