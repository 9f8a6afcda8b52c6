// Data-parallel equivalence over Open MPI: started by ctest as `mpirun -np 2`; each rank trains
// batch 64 for 50 steps over the MPI communicator, and rank 0 compares with 1 rank x batch 128.
// Then tensor parallelism over MPI (groups split off the MPI world) against one rank. Started
// without mpirun it skips.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "trainer/comm/factory.h"
#include "trainer/comm/inproc_communicator.h"
#include "trainer/trainer.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

const std::string kData = "/usr/share/datasets/fashion-mnist";

contract::TrainerSettings config(int batch) {
  contract::TrainerSettings c = defaultTrainerSettings();
  c.batch_size = batch;
  c.max_steps = 50;
  c.epochs = 1;
  c.optimizer.learning_rate = 0.05;
  c.optimizer.momentum = 0.9;
  c.first_bucket_cap_mb = 0.25;
  c.bucket_cap_mb = 0.5;
  return c;
}

TEST(MpiEquivalence, TwoMpiRanksOfBatch64MatchOneRankOfBatch128) {
  if (!comm::runningUnderMpirun()) GTEST_SKIP() << "not started under mpirun";
  if (!std::filesystem::exists(kData + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  openblas_set_num_threads(1);
  auto train = data::loadFashionMnist(kData, data::Split::kTrain);
  auto test = data::loadFashionMnist(kData, data::Split::kTest);
  ASSERT_TRUE(train.ok() && test.ok());

  comm::CommConfig cc;
  cc.backend = "mpi";
  cc.rank = std::atoi(std::getenv("OMPI_COMM_WORLD_RANK"));
  cc.world_size = std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE"));
  cc.timeout = std::chrono::seconds(120);
  auto mpi = comm::makeCommunicator(cc);
  ASSERT_TRUE(mpi.ok()) << mpi.status().message();
  ASSERT_EQ((*mpi)->backend(), "mpi");
  ASSERT_EQ((*mpi)->size(), 2);

  TrainerContext ctx;
  ctx.comm = mpi->get();
  ctx.train = &*train;
  ctx.test = &*test;
  Trainer two(config(64), ctx);
  auto summary = two.run();
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->steps, 50);
  std::vector<float> mine = two.parameters();

  // Every rank must hold rank 0's parameters.
  std::vector<float> rank0 = mine;
  ASSERT_TRUE((*mpi)->broadcast(rank0.data(), rank0.size() * sizeof(float), 0).ok());
  EXPECT_EQ(mine, rank0);

  // Tensor parallelism over MPI: both ranks split each layer pair, their tensor group split off
  // the MPI world (makeMpiGroup) as the trainer binary does under mpirun.
  contract::TrainerSettings tp = config(64);
  tp.model.hidden = {32, 24, 16};
  tp.tensor = 2;
  tp.pipeline.micro_batches = 2;
  TrainerContext tp_ctx = ctx;
  tp_ctx.make_group = [&](const std::string& name, int rank, int size) {
    return comm::makeMpiGroup(**mpi, name, rank, size);
  };
  Trainer split(tp, tp_ctx);
  auto split_summary = split.run();
  ASSERT_TRUE(split_summary.ok()) << split_summary.status().message();

  if ((*mpi)->rank() != 0) return;
  auto single = comm::makeInProcCommunicators(1);
  {
    // What one rank trains with the layers whole.
    contract::TrainerSettings whole = tp;
    whole.tensor = 1;
    TrainerContext whole_ctx = ctx;
    whole_ctx.comm = single[0].get();
    whole_ctx.make_group = nullptr;
    Trainer one(whole, whole_ctx);
    auto one_summary = one.run();
    ASSERT_TRUE(one_summary.ok()) << one_summary.status().message();
    ASSERT_TRUE(split_summary->test_accuracy && one_summary->test_accuracy);
    EXPECT_NEAR(*split_summary->test_accuracy, *one_summary->test_accuracy, 1.0 / 300 + 1e-9);
    ASSERT_TRUE(split_summary->final_train_loss && one_summary->final_train_loss);
    EXPECT_NEAR(*split_summary->final_train_loss, *one_summary->final_train_loss, 1e-4);
  }
  TrainerContext ref_ctx = ctx;
  ref_ctx.comm = single[0].get();
  Trainer one(config(128), ref_ctx);
  ASSERT_TRUE(one.run().ok());
  std::vector<float> ref = one.parameters();
  ASSERT_EQ(ref.size(), mine.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(mine[i]) - ref[i]) * (double(mine[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  EXPECT_LE(std::sqrt(diff / norm), 1e-5);
}

}  // namespace
}  // namespace ringmaster::trainer
