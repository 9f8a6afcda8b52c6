// The model of NCCL's point-to-point rules (nccl_model.h) that pipeline tests run GPU stages'
// messages on: it must hang where NCCL hangs, or a passing pipeline test would prove nothing.

#include "trainer/comm/tests/nccl_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm::testing {
namespace {

using namespace std::chrono_literals;

TEST(NcclModel, TwoRanksThatEachSendBeforeTheyReceiveHang) {
  auto comms = makeNcclModelCommunicators(2, 300ms);
  std::vector<core::Status> results(2);
  runRanks(2, [&](int r) {
    DeviceCollectives* d = comms[r]->deviceCollectives();
    float mine = static_cast<float>(r), theirs = -1;
    results[r] = d->sendRecvAsync(&mine, sizeof mine, 1 - r, nullptr, 0, -1, nullptr);
    if (results[r].ok()) {
      results[r] = d->sendRecvAsync(nullptr, 0, -1, &theirs, sizeof theirs, 1 - r, nullptr);
    }
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), core::Code::kTimeout) << results[r].toString();
    EXPECT_NE(results[r].message().find("send to rank " + std::to_string(1 - r) + " never matched"),
              std::string::npos)
        << results[r].message();
  }
}

TEST(NcclModel, ASendAndAReceiveInOneGroupCrossWithoutWaiting) {
  auto comms = makeNcclModelCommunicators(2, 5s);
  std::vector<float> got(2, -1);
  runRanks(2, [&](int r) {
    float mine = 10.0f + r;
    ASSERT_TRUE(
        comms[r]
            ->deviceCollectives()
            ->sendRecvAsync(&mine, sizeof mine, 1 - r, &got[r], sizeof got[r], 1 - r, nullptr)
            .ok());
  });
  EXPECT_EQ(got[0], 11.0f);
  EXPECT_EQ(got[1], 10.0f);
}

TEST(NcclModel, MessagesBetweenTwoRanksArriveInOrderAndMustFitTheirReceive) {
  auto comms = makeNcclModelCommunicators(2, 5s);
  std::vector<int> got;
  core::Status mismatch;
  runRanks(2, [&](int r) {
    DeviceCollectives* d = comms[r]->deviceCollectives();
    if (r == 0) {
      for (int i : {1, 2, 3})
        ASSERT_TRUE(d->sendRecvAsync(&i, sizeof i, 1, nullptr, 0, -1, nullptr).ok());
      double wide = 4;
      mismatch = d->sendRecvAsync(&wide, sizeof wide, 1, nullptr, 0, -1, nullptr);
    } else {
      for (int k = 0; k < 3; ++k) {
        int v = 0;
        ASSERT_TRUE(d->sendRecvAsync(nullptr, 0, -1, &v, sizeof v, 0, nullptr).ok());
        got.push_back(v);
      }
      int narrow = 0;
      (void)d->sendRecvAsync(nullptr, 0, -1, &narrow, sizeof narrow, 0, nullptr);
    }
  });
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(mismatch.code(), core::Code::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("sent 8 bytes to rank 1, which received 4"), std::string::npos)
      << mismatch.message();
}

TEST(NcclModel, RefusesPeersOutsideTheWorld) {
  auto comms = makeNcclModelCommunicators(2, 1s);
  float v = 0;
  core::Status s =
      comms[0]->deviceCollectives()->sendRecvAsync(&v, sizeof v, 0, nullptr, 0, -1, nullptr);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
  s = comms[0]->deviceCollectives()->sendRecvAsync(nullptr, 0, -1, &v, sizeof v, 2, nullptr);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::trainer::comm::testing
