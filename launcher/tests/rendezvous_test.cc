// The launcher's rendezvous: joinGang over the in-memory store (pods as threads), and
// AttemptStore over real TCP.

#include "launcher/rendezvous.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

namespace ringmaster::launcher {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

NodeInfo node(int i, int local = 2) {
  return NodeInfo{i, "j-worker-" + std::to_string(i), "127.1.0." + std::to_string(i + 1), i * local,
                  local};
}

TEST(NodeInfo, RoundTripsThroughItsText) {
  auto decoded = decodeNodeInfo(encodeNodeInfo(node(3)));
  ASSERT_TRUE(decoded.ok()) << decoded.status().toString();
  EXPECT_EQ(*decoded, node(3));
  EXPECT_FALSE(decodeNodeInfo("node_rank=1 host=x").ok());
}

TEST(JoinGang, ThreePodsInAnyOrderAllSeeEveryPod) {
  auto base = rendezvous::makeInMemoryStore();
  rendezvous::PrefixStore store(base.get(), "j/attempt-0");
  std::vector<std::optional<core::Result<std::vector<NodeInfo>>>> got(3);
  std::vector<std::thread> pods;
  for (int i : {2, 1, 0}) {  // pod 0 last
    pods.emplace_back([&, i] { got[i] = joinGang(store, node(i), 3, 60s); });
  }
  for (auto& t : pods) t.join();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(got[i]->ok()) << got[i]->status().toString();
    EXPECT_EQ(**got[i], (std::vector<NodeInfo>{node(0), node(1), node(2)}));
    EXPECT_TRUE(store.wait({startedKey(i)}, 0s).ok()) << "pod " << i << " marked started";
  }
}

// A store that still holds a whole earlier attempt's registrations (every pod
// joined attempt 0) does not let attempt 1 through its barrier.
TEST(JoinGang, StaleKeysFromAnEarlierAttemptNeverPassTheBarrier) {
  auto base = rendezvous::makeInMemoryStore();
  rendezvous::PrefixStore attempt0(base.get(), "j/attempt-0");
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(attempt0.set(nodeKey(i), rendezvous::toBytes(encodeNodeInfo(node(i)))).ok());
  }
  ASSERT_TRUE(attempt0.set(kStoreHostKey, rendezvous::toBytes("pod 0")).ok());
  rendezvous::PrefixStore attempt1(base.get(), "j/attempt-1");
  auto got = joinGang(attempt1, node(1), 2, 300ms);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), core::Code::kTimeout);
  EXPECT_THAT(got.status().message(), HasSubstr("pod(s) 0 did not join"));
}

TEST(JoinGang, PodsThatDisagreeOnTheWorldShapeAreRejected) {
  auto store = rendezvous::makeInMemoryStore();
  ASSERT_TRUE(store->set(nodeKey(0), rendezvous::toBytes(encodeNodeInfo(node(0, 4)))).ok());
  auto got = joinGang(*store, node(1, 2), 2, 60s);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("does not fit a world of 2 pods x 2 processes"));
}

// An elastic parameter-server job's empty worker slot (pod 1 of 3 here): the others' barrier
// passes without it, and pod 0's end does not wait for it; a pod that comes later to fill it
// joins through the same barrier.
TEST(JoinGang, EmptySlotsAreNotWaitedFor) {
  auto base = rendezvous::makeInMemoryStore();
  rendezvous::PrefixStore store(base.get(), "j/attempt-0");
  std::vector<std::optional<core::Result<std::vector<NodeInfo>>>> got(3);
  std::vector<std::thread> pods;
  for (int i : {2, 0}) {
    pods.emplace_back([&, i] { got[i] = joinGang(store, node(i), 3, 60s, nullptr, {1}); });
  }
  for (auto& t : pods) t.join();
  for (int i : {0, 2}) {
    ASSERT_TRUE(got[i]->ok()) << got[i]->status().toString();
    EXPECT_EQ(**got[i], (std::vector<NodeInfo>{node(0), node(2)}));
  }
  auto late = joinGang(store, node(1), 3, 60s);  // made after the job scaled up: no empty slot
  ASSERT_TRUE(late.ok()) << late.status().toString();
  EXPECT_EQ(late->size(), 3u);
  // Pod 0's end waits for the pods that joined, not for a slot that never had one.
  rendezvous::PrefixStore other(base.get(), "j/attempt-1");
  for (int i : {0, 2}) {
    ASSERT_TRUE(other.set(nodeKey(i), rendezvous::toBytes(encodeNodeInfo(node(i)))).ok());
    ASSERT_TRUE(other.set(startedKey(i), rendezvous::toBytes("1")).ok());
  }
  finishGang(other, 2, 3, 60s, 60s);
  finishGang(other, 0, 3, 600s, 600s);  // returns at once; a wait for pod 1 fails the test
  EXPECT_TRUE(other.wait({exitedKey(0)}, 0s).ok());
}

TEST(JoinGang, StopRequestEndsTheWait) {
  auto store = rendezvous::makeInMemoryStore();
  core::StopSource stop;
  stop.requestStop("received Terminated");
  auto got = joinGang(*store, node(1), 2, 600s, &stop);
  EXPECT_EQ(got.status().code(), core::Code::kCancelled);
}

TEST(FinishGang, PodZeroKeepsTheStoreUntilEveryPodStartedAndExited) {
  auto store = rendezvous::makeInMemoryStore();
  for (int i = 0; i < 2; ++i) {  // both joined (joinGang)
    ASSERT_TRUE(store->set(nodeKey(i), rendezvous::toBytes(encodeNodeInfo(node(i)))).ok());
  }
  ASSERT_TRUE(store->set(startedKey(0), rendezvous::toBytes("1")).ok());
  std::atomic<bool> finished{false};
  std::thread pod0([&] {
    finishGang(*store, 0, 2, 60s, 60s);
    finished = true;
  });
  // Pod 0 has recorded its own exit and now waits for pod 1.
  ASSERT_TRUE(store->wait({exitedKey(0)}, 60s).ok());
  EXPECT_FALSE(finished);
  ASSERT_TRUE(store->set(startedKey(1), rendezvous::toBytes("1")).ok());
  finishGang(*store, 1, 2, 60s, 60s);  // pod 1 does not wait for anybody
  pod0.join();
  EXPECT_TRUE(finished);
}

TEST(FinishGang, StopRequestEndsPodZerosLinger) {
  auto store = rendezvous::makeInMemoryStore();
  core::StopSource stop;
  stop.requestStop("received Terminated");
  finishGang(*store, 0, 2, 600s, 600s, &stop);  // returns at once; a hang fails the test
  EXPECT_TRUE(store->wait({exitedKey(0)}, 0s).ok());
}

constexpr char kSecret[] = "a-secret-of-this-attempt-0123456789";

contract::PodEnvironment envFor(int node_rank, int port, int64_t attempt,
                                const std::string& secret = kSecret) {
  auto env = contract::parsePodEnvironment(
      std::map<std::string, std::string>{{"NODE_RANK", std::to_string(node_rank)},
                                         {"NNODES", "2"},
                                         {"MASTER_ADDR", "127.0.0.1"},
                                         // The launcher's store: never the program's port.
                                         {"RINGMASTER_STORE_PORT", std::to_string(port)},
                                         {"MASTER_PORT", std::to_string(port == 1 ? 2 : 1)},
                                         {"RINGMASTER_JOB", "j"},
                                         {"RINGMASTER_ATTEMPT", std::to_string(attempt)},
                                         {"POD_IP", "127.0.0.1"},
                                         {"RINGMASTER_STORE_SECRET", secret}});
  EXPECT_TRUE(env.ok()) << env.status().toString();
  return *env;
}

TEST(AttemptStore, PodOneWaitsForPodZeroToHostTheStore) {
  // Pick a free port by hosting and stopping.
  auto probe = rendezvous::TcpStoreServer::start("127.0.0.1", 0, kSecret);
  ASSERT_TRUE(probe.ok());
  const int port = (*probe)->port();
  probe->reset();

  std::optional<core::Result<std::unique_ptr<AttemptStore>>> pod1;
  std::thread t([&] { pod1 = AttemptStore::open(envFor(1, port, 5), 60s); });
  auto pod0 = AttemptStore::open(envFor(0, port, 5), 60s);
  t.join();
  ASSERT_TRUE(pod0.ok()) << pod0.status().toString();
  ASSERT_TRUE(pod1->ok()) << pod1->status().toString();
  // Both views are scoped to attempt 5 of job j on one store.
  ASSERT_TRUE((**pod1)->store().set("x", rendezvous::toBytes("1")).ok());
  EXPECT_TRUE((*pod0)->store().get("x", 1s).ok());
}

TEST(AttemptStore, StoreOfAnotherAttemptIsNotTrusted) {
  // A store that answers on MASTER_PORT but was set up by attempt 0's pod 0.
  auto old_store = rendezvous::TcpStoreServer::start("127.0.0.1", 0, kSecret);
  ASSERT_TRUE(old_store.ok());
  auto client = rendezvous::TcpStoreClient::connect("127.0.0.1", (*old_store)->port(), kSecret, 5s);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)
                  ->set(std::string("j/attempt-0/") + kStoreHostKey, rendezvous::toBytes("pod 0"))
                  .ok());
  auto pod1 = AttemptStore::open(envFor(1, (*old_store)->port(), 1), 300ms);
  ASSERT_FALSE(pod1.ok());
  EXPECT_EQ(pod1.status().code(), core::Code::kTimeout);
  EXPECT_THAT(pod1.status().message(), HasSubstr("not hosted by j/attempt-1's pod 0"));
}

TEST(AttemptStore, AStoreWithAnotherSecretIsRefused) {
  // Attempt 0's pod 0, still terminating, knows attempt 0's secret only.
  auto old_store =
      rendezvous::TcpStoreServer::start("127.0.0.1", 0, "the secret of attempt 0 .......");
  ASSERT_TRUE(old_store.ok());
  auto pod1 = AttemptStore::open(envFor(1, (*old_store)->port(), 1), 300ms);
  ASSERT_FALSE(pod1.ok());
  EXPECT_EQ(pod1.status().code(), core::Code::kTimeout);
  EXPECT_THAT(pod1.status().message(), HasSubstr("refused our proof of the secret"));
}

}  // namespace
}  // namespace ringmaster::launcher
