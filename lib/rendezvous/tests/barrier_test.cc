// barrier() with ranks as threads, over the in-memory store and over TCP.

#include "ringmaster/rendezvous/barrier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "ringmaster/rendezvous/tcp_store.h"
#include "test_secret.h"

namespace ringmaster::rendezvous {
namespace {

using test_support::kSecret;

using namespace std::chrono_literals;
using core::Code;

// Runs barrier(name) on `ranks` of a world of `world_size`, each rank a thread.
std::vector<core::Status> runRanks(const std::vector<Store*>& stores, const std::string& name,
                                   int world_size, std::chrono::milliseconds timeout) {
  std::vector<core::Status> results(stores.size(), core::internalError("not run"));
  std::vector<std::thread> threads;
  for (size_t r = 0; r < stores.size(); ++r) {
    threads.emplace_back([&, r] {
      results[r] = barrier(*stores[r], name, static_cast<int>(r), world_size, timeout);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(Barrier, FourRanksAsThreadsAllPass) {
  auto store = makeInMemoryStore();
  auto results = runRanks({store.get(), store.get(), store.get(), store.get()}, "start", 4, 60s);
  for (const auto& st : results) EXPECT_TRUE(st.ok()) << st.toString();
}

TEST(Barrier, FourRanksOverTcpAllPass) {
  auto server = TcpStoreServer::start("127.0.0.1", 0, kSecret);
  ASSERT_TRUE(server.ok()) << server.status().toString();
  std::vector<std::unique_ptr<TcpStoreClient>> clients;
  std::vector<Store*> stores;
  for (int r = 0; r < 4; ++r) {
    auto c = TcpStoreClient::connect("127.0.0.1", (*server)->port(), kSecret, 10s);
    ASSERT_TRUE(c.ok()) << c.status().toString();
    clients.push_back(std::move(c).value());
    stores.push_back(clients.back().get());
  }
  auto results = runRanks(stores, "start", 4, 60s);
  for (const auto& st : results) EXPECT_TRUE(st.ok()) << st.toString();
}

TEST(Barrier, WithOneRankMissingEveryArrivedRankTimesOutSayingHowManyArrived) {
  auto store = makeInMemoryStore();
  auto results = runRanks({store.get(), store.get(), store.get()}, "start", 4, 100ms);
  for (const auto& st : results) {
    EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
    EXPECT_NE(st.message().find("3 of 4"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("barrier 'start'"), std::string::npos) << st.message();
  }
}

TEST(Barrier, ARankOutsideTheWorldIsInvalidArgument) {
  auto store = makeInMemoryStore();
  EXPECT_EQ(barrier(*store, "b", 4, 4, 1s).code(), Code::kInvalidArgument);
  EXPECT_EQ(barrier(*store, "b", -1, 4, 1s).code(), Code::kInvalidArgument);
  EXPECT_EQ(barrier(*store, "b", 0, 0, 1s).code(), Code::kInvalidArgument);
}

TEST(Barrier, ReusingANameAfterItPassedIsInvalidArgument) {
  auto store = makeInMemoryStore();
  ASSERT_TRUE(barrier(*store, "once", 0, 1, 1s).ok());
  core::Status st = barrier(*store, "once", 0, 1, 1s);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
  EXPECT_NE(st.message().find("reused"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ringmaster::rendezvous
