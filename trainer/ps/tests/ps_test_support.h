#pragma once
// What the parameter-server training tests share: Fashion-MNIST (null when not installed), the
// data-parallel trainer's settings, servers started from the MLP's initial parameters, and
// workers as threads with connections of the test's choosing (in-process unless it says
// otherwise).
//
// Thread-safety: fashionMnist() loads once and is then read-only; a WorkerKit belongs to the
// thread that made it. Failure: helpers record a gtest failure and return null.

#include <functional>
#include <memory>
#include <vector>

#include "trainer/config.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/ps/parameter_server.h"
#include "trainer/ps/ps_worker.h"

namespace ringmaster::trainer::ps::test_support {

inline constexpr int kWorkers = 2;
inline constexpr int kBatch = 64;  // per worker, as per data-parallel rank
inline constexpr int64_t kSteps = 20;
// Small enough that the MLP's weights and hidden biases are cut across servers.
inline constexpr int64_t kMinPieceBytes = 1024;

struct Sets {
  data::Dataset train, test;
};
const Sets* fashionMnist();

// The data-parallel trainer's settings: the example job's SGD with momentum, no weight decay
// (see equivalence_test.cc on fp32 and ReLU flips).
contract::TrainerSettings settings();
// As the data-parallel trainer's ranks do: flush denormals on this thread.
void flushDenormals();
std::unique_ptr<model::Model> makeModel();

// Servers of a plan over `servers` servers, started from the model's initial parameters.
struct Cluster {
  FlatLayout layout;
  ShardPlan plan;
  std::vector<std::unique_ptr<ParameterServer>> servers;

  std::vector<float> parameters() const { return assembleParameters(servers, layout); }
};
std::unique_ptr<Cluster> makeCluster(int servers, Consistency consistency);

// One worker's model, connections, data and loop; built and used on the worker's thread.
struct WorkerKit {
  std::unique_ptr<model::Model> model;
  std::vector<std::unique_ptr<ServerConnection>> connections;
  std::unique_ptr<ShardBatches> batches;
  std::unique_ptr<PsWorker> worker;
};

// A worker's connections to every server of the cluster, in server order; empty on failure.
using Connector = std::function<std::vector<std::unique_ptr<ServerConnection>>(WorkerId)>;
Connector inProcConnector(Cluster& cluster);

// Runs body(worker id, its kit) for every worker, each on a thread of its own.
void runWorkers(Cluster& cluster, const std::function<void(WorkerId, WorkerKit&)>& body,
                Connector connect = nullptr);

}  // namespace ringmaster::trainer::ps::test_support
