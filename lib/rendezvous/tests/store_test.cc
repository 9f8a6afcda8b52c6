// The Store contract, run against both implementations: the in-memory store and a TcpStoreClient
// talking to a TcpStoreServer on localhost.

#include "ringmaster/rendezvous/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/rendezvous/tcp_store.h"
#include "test_secret.h"

namespace ringmaster::rendezvous {
namespace {

using test_support::kSecret;

using namespace std::chrono_literals;
using core::Code;

using test_support::kLong;
constexpr auto kShort = 50ms;  // for waits that must time out

enum class Kind { kMemory, kTcp };

class StoreContract : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kMemory) {
      memory_ = makeInMemoryStore();
    } else {
      auto server = TcpStoreServer::start("127.0.0.1", 0, kSecret);
      ASSERT_TRUE(server.ok()) << server.status().toString();
      server_ = std::move(server).value();
    }
  }

  // `n` handles to the same store, one per thread (the TCP store gets one client each).
  std::vector<Store*> clients(int n) {
    std::vector<Store*> out;
    for (int i = 0; i < n; ++i) {
      if (memory_) {
        out.push_back(memory_.get());
        continue;
      }
      auto client = TcpStoreClient::connect("127.0.0.1", server_->port(), kSecret, 10s);
      EXPECT_TRUE(client.ok()) << client.status().toString();
      if (!client.ok()) return {};
      tcp_clients_.push_back(std::move(client).value());
      out.push_back(tcp_clients_.back().get());
    }
    return out;
  }
  Store& store() {
    if (!main_) main_ = clients(1).at(0);
    return *main_;
  }
  // With the TCP store, blocks until the server holds `n` get/wait requests, so that a test
  // exercises the wake-up path rather than a key that was already there.
  void awaitHeldRequests(size_t n) {
    if (server_) {
      ASSERT_TRUE(server_->waitForPendingRequestsForTesting(n, kLong));
    }
  }

  std::unique_ptr<Store> memory_;
  std::unique_ptr<TcpStoreServer> server_;
  std::vector<std::unique_ptr<TcpStoreClient>> tcp_clients_;
  Store* main_ = nullptr;
};

TEST_P(StoreContract, GetReturnsWhatSetStoredAndSetOverwrites) {
  ASSERT_TRUE(store().set("k", toBytes("first")).ok());
  auto got = store().get("k", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "first");

  ASSERT_TRUE(store().set("k", toBytes("second")).ok());
  got = store().get("k", 0ms);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "second");
}

TEST_P(StoreContract, ValuesAreOpaqueBytesIncludingNulAndEmpty) {
  const Bytes binary = {'\0', '\xff', 'a', '\0', '\x80'};
  ASSERT_TRUE(store().set("binary", binary).ok());
  ASSERT_TRUE(store().set("empty", Bytes{}).ok());
  auto got = store().get("binary", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(*got, binary);
  got = store().get("empty", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_TRUE(got->empty());
}

TEST_P(StoreContract, GetBlocksUntilAnotherThreadSetsTheKey) {
  auto handles = clients(2);
  ASSERT_EQ(handles.size(), 2u);
  core::Result<Bytes> got = core::internalError("not run");
  std::thread reader([&] { got = handles[1]->get("late", kLong); });
  awaitHeldRequests(1);
  ASSERT_TRUE(handles[0]->set("late", toBytes("here")).ok());
  reader.join();
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "here");
}

TEST_P(StoreContract, WaitReturnsOnceEveryKeyExists) {
  auto handles = clients(2);
  ASSERT_EQ(handles.size(), 2u);
  ASSERT_TRUE(handles[0]->set("a", toBytes("1")).ok());
  core::Status waited = core::internalError("not run");
  std::thread waiter([&] { waited = handles[1]->wait({"a", "b"}, kLong); });
  awaitHeldRequests(1);
  ASSERT_TRUE(handles[0]->set("b", toBytes("2")).ok());
  waiter.join();
  EXPECT_TRUE(waited.ok()) << waited.toString();
}

TEST_P(StoreContract, WaitTimesOutNamingOnlyTheMissingKeys) {
  ASSERT_TRUE(store().set("present-key", toBytes("x")).ok());
  core::Status st = store().wait({"present-key", "missing-key"}, kShort);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
  EXPECT_NE(st.message().find("missing-key"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("present-key"), std::string::npos) << st.message();
}

TEST_P(StoreContract, GetOfAKeyNeverSetTimesOutNamingIt) {
  auto got = store().get("never-set", kShort);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kTimeout);
  EXPECT_NE(got.status().message().find("never-set"), std::string::npos) << got.status().message();
  // The store stays usable after a timeout.
  ASSERT_TRUE(store().set("never-set", toBytes("now")).ok());
  EXPECT_TRUE(store().get("never-set", kLong).ok());
}

TEST_P(StoreContract, AddCountsFromZeroAndGetReadsTheCounterAsDecimalText) {
  auto v = store().add("counter", 5);
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, 5);
  v = store().add("counter", -2);
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, 3);
  auto text = store().get("counter", kLong);
  ASSERT_TRUE(text.ok()) << text.status().toString();
  EXPECT_EQ(toString(*text), "3");
}

TEST_P(StoreContract, AddOnANonIntegerValueIsInvalidArgumentAndTheStoreStaysUsable) {
  ASSERT_TRUE(store().set("word", toBytes("abc")).ok());
  auto v = store().add("word", 1);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Code::kInvalidArgument);
  EXPECT_NE(v.status().message().find("word"), std::string::npos) << v.status().message();
  auto again = store().add("number", 1);
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(*again, 1);
}

TEST_P(StoreContract, ConcurrentAddsFromManyClientsCountExactly) {
  constexpr int kThreads = 8;
  constexpr int kAddsEach = 200;
  auto handles = clients(kThreads);
  ASSERT_EQ(handles.size(), static_cast<size_t>(kThreads));
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAddsEach; ++i) {
        auto v = handles[t]->add("hits", 1);
        seen[t].push_back(v.ok() ? *v : -1);
      }
    });
  }
  for (auto& th : threads) th.join();
  // Atomic means every intermediate value was handed out exactly once.
  std::vector<int64_t> all;
  for (auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(kThreads * kAddsEach);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(all, expected);
}

TEST_P(StoreContract, KeyOfAnEarlierAttemptNeverSatisfiesAWaitOfTheNextAttempt) {
  PrefixStore attempt0(&store(), "job/0");
  PrefixStore attempt1(&store(), "job/1");
  ASSERT_TRUE(attempt0.set("ready", toBytes("stale")).ok());

  core::Status st = attempt1.wait({"ready"}, kShort);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
  EXPECT_NE(st.message().find("job/1/ready"), std::string::npos) << st.message();
  EXPECT_EQ(attempt1.get("ready", kShort).status().code(), Code::kTimeout);

  auto own = attempt0.get("ready", kLong);
  ASSERT_TRUE(own.ok()) << own.status().toString();
  EXPECT_EQ(toString(*own), "stale");
  EXPECT_TRUE(store().get("job/0/ready", kLong).ok());
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract, ::testing::Values(Kind::kMemory, Kind::kTcp),
                         [](const auto& info) {
                           return info.param == Kind::kMemory ? "InMemory" : "Tcp";
                         });

}  // namespace
}  // namespace ringmaster::rendezvous
