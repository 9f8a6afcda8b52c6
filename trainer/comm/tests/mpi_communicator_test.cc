// The MPI backend, run as `mpirun -np 2 comm_mpi_test` (ctest does that). Started any other way,
// every test skips: MPI needs its launcher to have peers.

#include "trainer/comm/mpi_communicator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "trainer/comm/factory.h"

namespace ringmaster::trainer::comm {
namespace {

class MpiCommunicatorTest : public ::testing::Test {
 protected:
  // One communicator for the whole binary: MPI can be initialized only once per process.
  static void SetUpTestSuite() {
    if (!runningUnderMpirun()) return;
    auto created = MpiCommunicator::create();
    if (created.ok()) {
      comm_ = std::move(created).value().release();
    } else {
      create_error_ = new std::string(created.status().message());
    }
  }
  static void TearDownTestSuite() {
    delete comm_;  // finalizes MPI
    comm_ = nullptr;
  }
  void SetUp() override {
    if (!runningUnderMpirun()) {
      GTEST_SKIP() << "not started by mpirun; run: mpirun -np 2 comm_mpi_test";
    }
    ASSERT_NE(comm_, nullptr) << (create_error_ ? *create_error_ : "");
  }

  static inline MpiCommunicator* comm_ = nullptr;
  static inline std::string* create_error_ = nullptr;
};

TEST_F(MpiCommunicatorTest, SumsEveryElementAcrossRanks) {
  const int n = comm_->size();
  ASSERT_GE(n, 2) << "run with -np 2 or more";
  for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, (size_t{1} << 20) + 3}) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) {
      data[i] = static_cast<float>((comm_->rank() + 1) * static_cast<int>(i % 251 + 1));
    }
    core::Status s = comm_->allreduceSum(data.data(), count, {.timeout = {}, .tag = "t"});
    ASSERT_TRUE(s.ok()) << s.message();
    const int rank_sum = n * (n + 1) / 2;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != static_cast<float>(rank_sum * static_cast<int>(i % 251 + 1))) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << count << " floats on rank " << comm_->rank();
  }
}

TEST_F(MpiCommunicatorTest, BroadcastCopiesTheRootBytes) {
  std::vector<char> data(10000, static_cast<char>(comm_->rank()));
  const int root = comm_->size() - 1;
  ASSERT_TRUE(comm_->broadcast(data.data(), data.size(), root).ok());
  EXPECT_EQ(data, std::vector<char>(10000, static_cast<char>(root)));
  EXPECT_TRUE(comm_->barrier().ok());
}

TEST_F(MpiCommunicatorTest, PointToPointMessagesArriveInOrderAndWhole) {
  ASSERT_EQ(comm_->size(), 2) << "run with -np 2";
  const std::vector<size_t> sizes = {0, 4, (size_t{3} << 20) + 5};
  if (comm_->rank() == 0) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<char> out(sizes[i], static_cast<char>('a' + i));
      core::Status s = comm_->send(out.data(), out.size(), 1, {});
      ASSERT_TRUE(s.ok()) << s.toString();
    }
    char reply = 0;
    ASSERT_TRUE(comm_->recv(&reply, 1, 1, {}).ok());
    EXPECT_EQ(reply, 'z');
  } else {
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<char> in(sizes[i], 0);
      core::Status s = comm_->recv(in.data(), in.size(), 0, {});
      ASSERT_TRUE(s.ok()) << s.toString();
      EXPECT_EQ(in, std::vector<char>(sizes[i], static_cast<char>('a' + i))) << "message " << i;
    }
    const char reply = 'z';
    ASSERT_TRUE(comm_->send(&reply, 1, 0, {}).ok());
  }
}

// Both ranks send 16 MiB (past any eager limit, so MPI_Send would wait for the receiver) before
// receiving: started sends let them.
TEST_F(MpiCommunicatorTest, StartedSendsLetTwoRanksSendToEachOtherAtOnce) {
  ASSERT_EQ(comm_->size(), 2) << "run with -np 2";
  const int peer = 1 - comm_->rank();
  std::vector<char> out(size_t{16} << 20, static_cast<char>('a' + comm_->rank()));
  std::vector<char> in(out.size(), 0);
  auto pending = comm_->startSend(out.data(), out.size(), peer, {});
  ASSERT_TRUE(pending.ok()) << pending.status().toString();
  core::Status s = comm_->recv(in.data(), in.size(), peer, {});
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_TRUE((*pending)->wait().ok());
  EXPECT_EQ(in, std::vector<char>(in.size(), static_cast<char>('a' + peer)));
}

TEST_F(MpiCommunicatorTest, PointToPointChecksThePeerAndTheSize) {
  ASSERT_EQ(comm_->size(), 2) << "run with -np 2";
  char x[8] = {};
  EXPECT_EQ(comm_->send(x, 1, comm_->rank(), {}).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(comm_->recv(x, 1, 2, {}).code(), core::Code::kInvalidArgument);
  if (comm_->rank() == 0) {
    ASSERT_TRUE(comm_->send(x, 4, 1, {}).ok());
  } else {
    core::Status s = comm_->recv(x, 8, 0, {});
    EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
    EXPECT_NE(s.message().find("rank 0 sent 4 bytes"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(comm_->barrier().ok());
}

// Groups as the pipeline trainer makes them under mpirun: every rank asks for its own, in the
// same order (here one group of everybody, then one group per rank), and each sums only among
// its members.
TEST_F(MpiCommunicatorTest, GroupsSplitOffTheWorldSumAmongTheirMembers) {
  const int n = comm_->size();
  const int r = comm_->rank();
  auto all = makeMpiGroup(*comm_, "all", r, n);
  ASSERT_TRUE(all.ok()) << all.status().message();
  auto alone = makeMpiGroup(*comm_, "alone-" + std::to_string(r), 0, 1);
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_EQ((*all)->size(), n);
  EXPECT_EQ((*all)->rank(), r);
  EXPECT_EQ((*alone)->size(), 1);
  float everyone = static_cast<float>(r + 1);
  ASSERT_TRUE((*all)->allreduceSum(&everyone, 1, {}).ok());
  EXPECT_EQ(everyone, static_cast<float>(n * (n + 1) / 2));
  float mine = static_cast<float>(r + 1);
  ASSERT_TRUE((*alone)->allreduceSum(&mine, 1, {}).ok());
  EXPECT_EQ(mine, static_cast<float>(r + 1)) << "a group of one sums nothing from the others";

  // A rank that expects another place in a group than MPI gives it is told so.
  auto wrong = makeMpiGroup(*comm_, "wrong", r, n + 1);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("communicator group wrong"), std::string::npos)
      << wrong.status().message();
}

TEST_F(MpiCommunicatorTest, FactoryAutoPicksMpiUnderMpirun) {
  CommConfig config;  // rank and world size left at their defaults: MPI knows them
  auto made = makeCommunicator(config);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ((*made)->backend(), "mpi");
  EXPECT_EQ((*made)->rank(), comm_->rank());
  float v = 1.0f;
  ASSERT_TRUE((*made)->allreduceSum(&v, 1, {}).ok());
  EXPECT_EQ(v, static_cast<float>(comm_->size()));
}

TEST_F(MpiCommunicatorTest, FactoryRejectsAWorldSizeThatDisagreesWithMpirun) {
  CommConfig config;
  config.backend = "mpi";
  config.world_size = comm_->size() + 1;
  config.rank = 0;
  auto made = makeCommunicator(config);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), core::Code::kInvalidArgument) << made.status().message();
}

}  // namespace
}  // namespace ringmaster::trainer::comm
