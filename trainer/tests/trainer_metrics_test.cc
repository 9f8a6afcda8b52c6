// The allreduce metrics say which transport and which algorithm moved the gradients: two ranks
// training over tcp, with a first gradient bucket small enough for recursive doubling and the
// rest large enough for the ring, export a series of each, and the series' bytes add up to every
// step's gradients.

#include "trainer/trainer_metrics.h"

#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/metrics/metrics.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/factory.h"
#include "trainer/comm/tcp_communicator.h"
#include "trainer/tests/synthetic_data.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer {
namespace {

// The value of the series of `name` whose labels include `labels` ("a=\"x\",b=\"y\"", in the
// exposition's sorted order); -1 when there is none.
double sample(const std::string& text, const std::string& name, const std::string& labels) {
  const std::regex line("^" + name + "\\{([^}]*)\\} (\\S+)$", std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    if ((*it)[1].str().find(labels) != std::string::npos) return std::stod((*it)[2].str());
  }
  return -1;
}

TEST(TrainerMetrics, AllreduceSeriesNameTheTransportAndTheAlgorithm) {
  contract::TrainerSettings config = defaultTrainerSettings();
  config.model.hidden = {256};        // 203,530 parameters: about 800 KB of gradients
  config.first_bucket_cap_mb = 0.01;  // a first bucket of about 10 KB: recursive doubling
  config.bucket_cap_mb = 4;           // the rest in one bucket: the ring
  config.epochs = 1;
  config.max_steps = 3;
  config.batch_size = 32;
  const data::Dataset train = testing::syntheticSet(256, 1);
  const data::Dataset test = testing::syntheticSet(64, 2);

  auto store = rendezvous::makeInMemoryStore();
  constexpr int kWorld = 2;
  std::vector<std::unique_ptr<comm::Communicator>> comms(kWorld);
  std::vector<core::Status> made(kWorld);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorld; ++r) {
      threads.emplace_back([&, r] {
        comm::CommConfig c;
        c.backend = "tcp";
        c.rank = r;
        c.world_size = kWorld;
        c.store = store.get();
        c.host = "127.0.0.1";
        c.timeout = std::chrono::seconds(30);
        auto comm = comm::makeCommunicator(c);
        if (comm.ok()) comms[r] = std::move(comm).value();
        made[r] = comm.status();
      });
    }
    for (auto& t : threads) t.join();
  }
  for (const auto& s : made) ASSERT_TRUE(s.ok()) << s.message();

  metrics::Registry registry;
  auto metrics = TrainerMetrics::create(registry, comms[0]->backend());
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  std::vector<core::Result<TrainSummary>> results(kWorld, core::internalError("not run"));
  std::vector<size_t> parameters(kWorld);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorld; ++r) {
      threads.emplace_back([&, r] {
        TrainerContext ctx;
        ctx.comm = comms[r].get();
        ctx.train = &train;
        ctx.test = &test;
        if (r == 0) ctx.metrics = &*metrics;
        Trainer trainer(config, ctx);
        results[r] = trainer.run();
        parameters[r] = trainer.parameters().size();
      });
    }
    for (auto& t : threads) t.join();
  }
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().message();

  const std::string text = registry.serialize();
  const std::string name = "ringmaster_trainer_allreduce_bytes_total";
  const double doubling = sample(text, name, "algorithm=\"recursive_doubling\",backend=\"tcp\"");
  const double ring = sample(text, name, "algorithm=\"ring\",backend=\"tcp\"");
  EXPECT_GT(doubling, 0) << text;
  EXPECT_GT(ring, 0) << text;
  EXPECT_LE(doubling / 3, comm::tcpDoublingMaxBytes(kWorld)) << "one step's doubling bucket";
  EXPECT_EQ(doubling + ring, 3.0 * static_cast<double>(parameters[0] * sizeof(float))) << text;
  EXPECT_GT(sample(text, "ringmaster_trainer_allreduce_seconds_count",
                   "algorithm=\"ring\",backend=\"tcp\""),
            0)
      << text;
}

}  // namespace
}  // namespace ringmaster::trainer
