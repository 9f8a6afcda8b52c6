// Point-to-point messages on the backends whose ranks run as threads here (mpi has its own
// test, under mpirun): order and contents between a pair, a line of stages, the peer checks and
// a receive that nothing answers. Backends without them say so by name.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm {
namespace {

using testing::makeCommunicators;
using testing::runRanks;

class PointToPointTest : public ::testing::TestWithParam<std::string> {};

std::vector<float> message(size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST_P(PointToPointTest, MessagesBetweenTwoRanksArriveInOrderAndWhole) {
  auto comms = makeCommunicators(GetParam(), 2);
  ASSERT_EQ(comms.size(), 2u);
  const std::vector<size_t> sizes = {1, 1000, 300000, 7};  // 4 B .. 1.2 MB
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    if (r == 0) {
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<float> out = message(sizes[i], static_cast<float>(i * 10));
        ASSERT_TRUE(c.send(out.data(), out.size() * sizeof(float), 1, {}).ok());
      }
      std::vector<float> reply(3);
      core::Status s = c.recv(reply.data(), reply.size() * sizeof(float), 1, {});
      ASSERT_TRUE(s.ok()) << s.toString();
      EXPECT_EQ(reply, message(3, -1));
    } else {
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<float> in(sizes[i]);
        core::Status s = c.recv(in.data(), in.size() * sizeof(float), 0, {});
        ASSERT_TRUE(s.ok()) << s.toString();
        EXPECT_EQ(in, message(sizes[i], static_cast<float>(i * 10))) << "message " << i;
      }
      std::vector<float> reply = message(3, -1);
      ASSERT_TRUE(c.send(reply.data(), reply.size() * sizeof(float), 0, {}).ok());
    }
  });
}

// Stages in a line pass a value forward and a gradient back, as a pipeline does.
TEST_P(PointToPointTest, FourStagesPassActivationsForwardAndGradientsBack) {
  constexpr int kStages = 4;
  auto comms = makeCommunicators(GetParam(), kStages);
  ASSERT_EQ(comms.size(), static_cast<size_t>(kStages));
  std::vector<float> final_grad(kStages, 0);
  runRanks(kStages, [&](int r) {
    Communicator& c = *comms[r];
    float activation = 1;
    if (r > 0) {
      ASSERT_TRUE(c.recv(&activation, sizeof activation, r - 1, {}).ok());
    }
    activation *= 2;
    if (r + 1 < kStages) {
      ASSERT_TRUE(c.send(&activation, sizeof activation, r + 1, {}).ok());
    }
    float grad = activation;  // the last stage's "loss gradient"
    if (r + 1 < kStages) {
      ASSERT_TRUE(c.recv(&grad, sizeof grad, r + 1, {}).ok());
    }
    grad += 1;
    if (r > 0) {
      ASSERT_TRUE(c.send(&grad, sizeof grad, r - 1, {}).ok());
    }
    final_grad[r] = grad;
  });
  // Forward: 2, 4, 8, 16; backward from 16: 17, 18, 19, 20.
  EXPECT_EQ(final_grad, (std::vector<float>{20, 19, 18, 17}));
}

// Both neighbours send first and receive second, as the stages of a 1F1B schedule do: with
// sends that wait for the receiver this pair would wait forever.
TEST_P(PointToPointTest, StartedSendsLetTwoRanksSendToEachOtherAtOnce) {
  auto comms = makeCommunicators(GetParam(), 2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<std::vector<float>> got(2);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    const int peer = 1 - r;
    std::vector<float> out = message(200000, static_cast<float>(r * 1000));  // 800 KB
    auto pending = c.startSend(out.data(), out.size() * sizeof(float), peer, {});
    ASSERT_TRUE(pending.ok()) << pending.status().toString();
    got[r].resize(out.size());
    core::Status s = c.recv(got[r].data(), got[r].size() * sizeof(float), peer, {});
    ASSERT_TRUE(s.ok()) << s.toString();
    s = (*pending)->wait();
    ASSERT_TRUE(s.ok()) << s.toString();
    EXPECT_TRUE((*pending)->wait().ok()) << "a second wait returns the same result";
  });
  EXPECT_EQ(got[0], message(200000, 1000));
  EXPECT_EQ(got[1], message(200000, 0));
}

TEST_P(PointToPointTest, APeerOutsideTheWorldOrItselfIsRejected) {
  auto comms = makeCommunicators(GetParam(), 2);
  ASSERT_EQ(comms.size(), 2u);
  float x = 0;
  for (int peer : {-1, 0, 2}) {
    core::Status s = comms[0]->send(&x, sizeof x, peer, {});
    EXPECT_EQ(s.code(), core::Code::kInvalidArgument) << peer;
    EXPECT_NE(s.message().find("is not another rank"), std::string::npos) << s.message();
    EXPECT_EQ(comms[0]->recv(&x, sizeof x, peer, {}).code(), core::Code::kInvalidArgument);
    EXPECT_EQ(comms[0]->startSend(&x, sizeof x, peer, {}).status().code(),
              core::Code::kInvalidArgument);
  }
}

TEST_P(PointToPointTest, AReceiveNothingAnswersTimesOutNamingThePeerAndTag) {
  auto comms = makeCommunicators(GetParam(), 2);
  ASSERT_EQ(comms.size(), 2u);
  float x = 0;
  PointToPointOptions options;
  options.timeout = std::chrono::milliseconds(200);
  options.tag = "activations of micro-batch 3";
  core::Status s = comms[1]->recv(&x, sizeof x, 0, options);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 1: receive from rank 0 'activations of micro-batch 3'"),
            std::string::npos)
      << s.message();
}

INSTANTIATE_TEST_SUITE_P(Backends, PointToPointTest,
                         ::testing::Values("inproc", "gloo", "tcp", "shm", "shm-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(PointToPoint, InProcRejectsAMessageOfAnotherSize) {
  auto comms = makeCommunicators("inproc", 2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> sent(4, 1.0f), got(3);
  ASSERT_TRUE(comms[0]->send(sent.data(), sent.size() * sizeof(float), 1, {}).ok());
  core::Status s = comms[1]->recv(got.data(), got.size() * sizeof(float), 0, {});
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("rank 0 sent 16 bytes"), std::string::npos) << s.message();
}

TEST(PointToPoint, ShmRejectsAMessageOfAnotherSizeAndBreaks) {
  auto comms = makeCommunicators("shm", 2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> sent(4, 1.0f), got(3);
  ASSERT_TRUE(comms[0]->send(sent.data(), sent.size() * sizeof(float), 1, {}).ok());
  PointToPointOptions options;
  options.tag = "gradients of micro-batch 1";
  core::Status s = comms[1]->recv(got.data(), got.size() * sizeof(float), 0, options);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("rank 1: receive from rank 0 'gradients of micro-batch 1' (12 "
                             "bytes): rank 0 sent 16 bytes"),
            std::string::npos)
      << s.message();
  // Both sides are broken now (the abort flag): neither waits out a timeout.
  EXPECT_EQ(comms[1]->recv(got.data(), sizeof(float), 0, {}).code(), core::Code::kUnavailable);
  EXPECT_EQ(comms[0]->barrier().code(), core::Code::kUnavailable);
}

// A message many times the ring's size goes through in pieces while the receiver copies out,
// and a started send that did not fit is finished by the sender's next call (here a receive).
TEST(PointToPoint, ShmMessagesLargerThanTheRingAreStreamed) {
  auto comms = makeCommunicators("shm-tiny", 2);  // 4 KiB rings
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> got(100003);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    if (r == 0) {
      std::vector<float> out = message(got.size(), 5);
      auto pending = c.startSend(out.data(), out.size() * sizeof(float), 1, {});
      ASSERT_TRUE(pending.ok()) << pending.status().toString();
      float ack = 0;
      core::Status s = c.recv(&ack, sizeof ack, 1, {});
      ASSERT_TRUE(s.ok()) << s.toString();
      EXPECT_EQ(ack, 1.0f);
      EXPECT_TRUE((*pending)->wait().ok());
    } else {
      core::Status s = c.recv(got.data(), got.size() * sizeof(float), 0, {});
      ASSERT_TRUE(s.ok()) << s.toString();
      float ack = 1;
      ASSERT_TRUE(c.send(&ack, sizeof ack, 0, {}).ok());
    }
  });
  EXPECT_EQ(got, message(got.size(), 5));
}

// A collective while a started send is still queued: the receiver finishes its receive only
// once the sender, already inside the allreduce, moves the rest of the message on.
TEST(PointToPoint, ShmCollectivesMoveQueuedSendsOn) {
  auto comms = makeCommunicators("shm-tiny", 2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> got(20000), sums(2);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    std::vector<float> out = message(got.size(), 7);
    std::unique_ptr<PendingSend> pending;
    if (r == 0) {
      auto started = c.startSend(out.data(), out.size() * sizeof(float), 1, {});
      ASSERT_TRUE(started.ok()) << started.status().toString();
      pending = std::move(started).value();
    } else {
      core::Status s = c.recv(got.data(), got.size() * sizeof(float), 0, {});
      ASSERT_TRUE(s.ok()) << s.toString();
    }
    float x = static_cast<float>(r + 1);
    core::Status s = c.allreduceSum(&x, 1, {});
    ASSERT_TRUE(s.ok()) << s.toString();
    sums[r] = x;
    if (pending) {
      EXPECT_TRUE(pending->wait().ok());
    }
  });
  EXPECT_EQ(got, message(got.size(), 7));
  EXPECT_EQ(sums, (std::vector<float>{3, 3}));
}

TEST(PointToPoint, AStartedSendNobodyTakesTimesOutNamingThePeer) {
  auto comms = makeCommunicators("shm-tiny", 2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> out(5000);  // 20 KB through a 4 KiB ring
  PointToPointOptions options;
  options.timeout = std::chrono::milliseconds(200);
  options.tag = "activations of micro-batch 0";
  auto pending = comms[0]->startSend(out.data(), out.size() * sizeof(float), 1, options);
  ASSERT_TRUE(pending.ok()) << pending.status().toString();
  core::Status s = (*pending)->wait();
  EXPECT_EQ(s.code(), core::Code::kTimeout);
  EXPECT_NE(s.message().find("rank 0: send to rank 1 'activations of micro-batch 0' (20000 "
                             "bytes) over shm: timed out after"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("waiting for rank 1 to make room (4088 of 20000 bytes handed over)"),
            std::string::npos)
      << s.message();
}

TEST(PointToPoint, ABackendWithoutMessagesSaysSoByName) {
  auto store = rendezvous::makeInMemoryStore();
  auto comms = testing::tryMakeCommunicators("shm-no-rings", 2, store.get(),
                                             std::chrono::seconds(10), {0, 1});
  ASSERT_EQ(comms.size(), 2u);
  ASSERT_TRUE(comms[0].ok()) << comms[0].status().toString();
  float x = 0;
  core::Status s = (*comms[0])->send(&x, sizeof x, 1, {});
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("made without point-to-point rings"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ringmaster::trainer::comm
