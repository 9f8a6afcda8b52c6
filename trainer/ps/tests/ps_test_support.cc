#include "trainer/ps/tests/ps_test_support.h"

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <filesystem>
#include <string>
#include <thread>

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer::ps::test_support {

const Sets* fashionMnist() {
  static const Sets* sets = []() -> const Sets* {
    const std::string dir = data::kDefaultFashionMnistDir;
    if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) return nullptr;
    openblas_set_num_threads(1);
    auto train = data::loadFashionMnist(dir, data::Split::kTrain);
    auto test = data::loadFashionMnist(dir, data::Split::kTest);
    if (!train.ok() || !test.ok()) return nullptr;
    return new Sets{std::move(*train), std::move(*test)};
  }();
  return sets;
}

contract::TrainerSettings settings() {
  contract::TrainerSettings c = defaultTrainerSettings();
  c.batch_size = kBatch;
  c.max_steps = kSteps;
  c.epochs = 1;
  c.optimizer.learning_rate = 0.05;
  c.optimizer.momentum = 0.9;
  c.optimizer.weight_decay = 0;
  return c;
}

void flushDenormals() { _mm_setcsr(_mm_getcsr() | 0x8040); }

std::unique_ptr<model::Model> makeModel() {
  auto made = model::Model::create(modelConfig(settings().model), settings().seed, kBatch);
  EXPECT_TRUE(made.ok()) << made.status().toString();
  return made.ok() ? std::move(*made) : nullptr;
}

std::unique_ptr<Cluster> makeCluster(int servers, Consistency consistency) {
  auto cluster = std::make_unique<Cluster>();
  auto model = makeModel();
  if (!model) return nullptr;
  cluster->layout = FlatLayout::of(model->paramViews());
  auto plan = planShards(cluster->layout.tensors, servers, {.min_piece_bytes = kMinPieceBytes});
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  if (!plan.ok()) return nullptr;
  cluster->plan = *plan;
  ServerOptions options;
  options.consistency = consistency;
  options.optimizer = optimizerConfig(settings().optimizer);
  options.wait_timeout = std::chrono::seconds(60);
  auto made = makeServers(cluster->plan, cluster->layout, model->params(), kWorkers, options);
  EXPECT_TRUE(made.ok()) << made.status().toString();
  if (!made.ok()) return nullptr;
  cluster->servers = std::move(*made);
  return cluster;
}

Connector inProcConnector(Cluster& cluster) {
  return [&cluster](WorkerId) {
    std::vector<std::unique_ptr<ServerConnection>> connections;
    for (auto& server : cluster.servers) {
      connections.push_back(std::make_unique<InProcConnection>(server.get()));
    }
    return connections;
  };
}

namespace {

std::unique_ptr<WorkerKit> makeWorker(Cluster& cluster, WorkerId id, const Connector& connect) {
  auto kit = std::make_unique<WorkerKit>();
  kit->model = makeModel();
  if (!kit->model) return nullptr;
  kit->connections = connect(id);
  if (kit->connections.size() != cluster.servers.size()) {
    ADD_FAILURE() << "worker " << id << ": " << kit->connections.size() << " connections for "
                  << cluster.servers.size() << " servers";
    return nullptr;
  }
  std::vector<ServerConnection*> connections;
  for (auto& c : kit->connections) connections.push_back(c.get());
  kit->batches =
      std::make_unique<ShardBatches>(fashionMnist()->train, id, kWorkers, kBatch, settings().seed);
  auto worker =
      PsWorker::create(id, kit->model.get(), cluster.plan, cluster.layout, std::move(connections));
  EXPECT_TRUE(worker.ok()) << worker.status().toString();
  if (!worker.ok()) return nullptr;
  kit->worker = std::move(*worker);
  return kit;
}

}  // namespace

void runWorkers(Cluster& cluster, const std::function<void(WorkerId, WorkerKit&)>& body,
                Connector connect) {
  if (!connect) connect = inProcConnector(cluster);
  std::vector<std::thread> threads;
  for (WorkerId w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      flushDenormals();
      auto kit = makeWorker(cluster, w, connect);
      if (kit) body(w, *kit);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace ringmaster::trainer::ps::test_support
