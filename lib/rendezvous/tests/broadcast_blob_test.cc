// broadcastBlob() with ranks as threads over the in-memory store.

#include "ringmaster/rendezvous/broadcast_blob.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ringmaster::rendezvous {
namespace {

using namespace std::chrono_literals;

TEST(BroadcastBlob, EveryRankGetsTheRootsOpaqueBytes) {
  auto store = makeInMemoryStore();
  Bytes id(128);  // an ncclUniqueId's size, with zero bytes inside
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i * 7);
  std::vector<core::Result<Bytes>> got(4, core::internalError("not run"));
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      got[r] = broadcastBlob(*store, "nccl/unique-id", r, 2, r == 2 ? id : Bytes{}, 60s);
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(got[r].ok()) << got[r].status().toString();
    EXPECT_EQ(*got[r], id) << "rank " << r;
  }
}

TEST(BroadcastBlob, MissingRootTimesOutNamingTheKey) {
  auto store = makeInMemoryStore();
  auto got = broadcastBlob(*store, "nccl/unique-id", 1, 0, {}, 50ms);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), core::Code::kTimeout);
  EXPECT_NE(got.status().message().find("nccl/unique-id"), std::string::npos)
      << got.status().message();
}

TEST(BroadcastBlob, RootWithNothingToPublishIsRejected) {
  auto store = makeInMemoryStore();
  auto got = broadcastBlob(*store, "k", 0, 0, {}, 50ms);
  EXPECT_EQ(got.status().code(), core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::rendezvous
