#include "ringmaster/kube/leader_election.h"

#include <gtest/gtest.h>

#include "fake_api_client.h"
#include "fake_clock.h"

namespace ringmaster::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeApiClient;
using testing::FakeClock;
using testing::jsonResponse;
using testing::statusResponse;

const std::string kLeasePath = "/apis/coordination.k8s.io/v1/namespaces/default/leases/op";
const std::string kCollection = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

std::string leaseJson(const std::string& holder, const std::string& rv, int transitions = 0,
                      const std::string& renew_time = "2026-11-22T01:59:00.000000Z") {
  return nlohmann::json{
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", "op"}, {"namespace", "default"}, {"resourceVersion", rv}}},
      {"spec",
       {{"holderIdentity", holder},
        {"leaseDurationSeconds", 15},
        {"acquireTime", "2026-11-22T01:59:00.000000Z"},
        {"renewTime", renew_time},
        {"leaseTransitions", transitions}}}}
      .dump();
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElector::Options options() {
    LeaderElector::Options o;
    o.lease_name = "op";
    o.namespace_name = "default";
    o.identity = "me_1";
    return o;
  }
  std::unique_ptr<LeaderElector> elector() {
    LeaderElector::Callbacks c;
    c.on_started_leading = [this] { log_.push_back("started"); };
    c.on_stopped_leading = [this] { log_.push_back("stopped"); };
    c.on_new_leader = [this](const std::string& who) { log_.push_back("leader " + who); };
    return std::make_unique<LeaderElector>(api_, clock_, options(), c);
  }
  Lease sentLease(size_t i) {
    auto lease = decodeText<Lease>(api_.calls().at(i).body);
    EXPECT_TRUE(lease.ok()) << lease.status().toString();
    return lease.ok() ? *lease : Lease{};
  }

  FakeApiClient api_;
  FakeClock clock_;
  std::vector<std::string> log_;
};

TEST_F(LeaderElectionTest, CreatesTheLeaseWhenMissing) {
  api_.expect(Verb::kGet, kLeasePath, statusResponse(404, "NotFound", "leases \"op\" not found"));
  api_.expect(Verb::kPost, kCollection, jsonResponse(201, leaseJson("me_1", "1")));
  auto e = elector();
  EXPECT_EQ(e->step(), milliseconds(2000));
  EXPECT_TRUE(e->isLeader());
  Lease sent = sentLease(1);
  EXPECT_EQ(sent.spec.holder_identity, "me_1");
  EXPECT_EQ(sent.spec.lease_transitions, 0);
  EXPECT_EQ(sent.spec.lease_duration_seconds, 15);
  EXPECT_EQ(sent.spec.renew_time->toString(), "2026-11-22T02:00:00.000000Z");  // MicroTime
  EXPECT_EQ(sent.spec.acquire_time, sent.spec.renew_time);
  EXPECT_EQ(log_, (std::vector<std::string>{"leader me_1", "started"}));
}

TEST_F(LeaderElectionTest, WaitsOutAnotherHoldersLeaseOnItsOwnClockThenTakesOver) {
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, leaseJson("other_2", "7", 3)));
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, leaseJson("other_2", "7", 3)));
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, leaseJson("other_2", "7", 3)));
  api_.expect(Verb::kPut, kLeasePath, jsonResponse(200, leaseJson("me_1", "8", 4)));
  auto e = elector();
  e->step();
  EXPECT_FALSE(e->isLeader());
  EXPECT_EQ(e->leader(), "other_2");
  clock_.advance(seconds(14));
  e->step();
  EXPECT_FALSE(e->isLeader());  // unchanged for 14 s < 15 s
  clock_.advance(seconds(2));
  e->step();
  EXPECT_TRUE(e->isLeader());
  Lease sent = sentLease(3);
  EXPECT_EQ(sent.metadata.resource_version, "7");  // optimistic concurrency
  EXPECT_EQ(sent.spec.holder_identity, "me_1");
  EXPECT_EQ(sent.spec.lease_transitions, 4);
  EXPECT_EQ(sent.spec.acquire_time, sent.spec.renew_time);
}

TEST_F(LeaderElectionTest, ARenewedLeaseIsNotExpired) {
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, leaseJson("other_2", "7")));
  const std::string renewed = leaseJson("other_2", "9", 0, "2026-11-22T02:00:10.000000Z");
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, renewed));
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, renewed));
  auto e = elector();
  e->step();
  clock_.advance(seconds(10));
  e->step();  // the holder renewed: observed anew
  clock_.advance(seconds(10));
  e->step();  // 20 s since the first sight, 10 s since the renewal
  EXPECT_FALSE(e->isLeader());
  EXPECT_EQ(api_.remaining(), 0u);
}

TEST_F(LeaderElectionTest, LosingTheRaceWithConflictIsNotLeadership) {
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, leaseJson("", "7")));
  api_.expect(Verb::kPut, kLeasePath,
              statusResponse(409, "Conflict", "the object has been modified"));
  auto e = elector();
  e->step();
  EXPECT_FALSE(e->isLeader());
}

TEST_F(LeaderElectionTest, RenewsKeepingAcquireTimeAndLosesLeadershipPastTheRenewDeadline) {
  api_.expect(Verb::kGet, kLeasePath, statusResponse(404, "NotFound", "not found"));
  api_.expect(Verb::kPost, kCollection, jsonResponse(201, leaseJson("me_1", "1")));
  api_.expect(Verb::kGet, kLeasePath, jsonResponse(200, leaseJson("me_1", "1")));
  api_.expect(Verb::kPut, kLeasePath, jsonResponse(200, leaseJson("me_1", "2")));
  for (int i = 0; i < 5; ++i) {
    api_.expect(Verb::kGet, kLeasePath, statusResponse(500, "InternalError", "etcd down"));
  }
  auto e = elector();
  e->step();
  clock_.advance(seconds(2));
  e->step();  // renew
  Lease renew = sentLease(3);
  EXPECT_EQ(renew.spec.acquire_time->toString(), "2026-11-22T01:59:00.000000Z");
  EXPECT_EQ(renew.spec.renew_time->toString(), "2026-11-22T02:00:02.000000Z");
  EXPECT_EQ(renew.spec.lease_transitions, 0);
  for (int i = 0; i < 4; ++i) {
    clock_.advance(seconds(2));
    e->step();
    EXPECT_TRUE(e->isLeader()) << "failed renewals within the 10 s deadline, attempt " << i;
  }
  clock_.advance(seconds(2));
  e->step();  // 10 s since the last renewal
  EXPECT_FALSE(e->isLeader());
  EXPECT_EQ(log_.back(), "stopped");
}

TEST_F(LeaderElectionTest, ReleaseClearsTheHolder) {
  api_.expect(Verb::kGet, kLeasePath, statusResponse(404, "NotFound", "not found"));
  api_.expect(Verb::kPost, kCollection, jsonResponse(201, leaseJson("me_1", "1")));
  api_.expect(Verb::kPut, kLeasePath, jsonResponse(200, leaseJson("", "2")));
  auto e = elector();
  e->step();
  ASSERT_TRUE(e->release().ok());
  EXPECT_FALSE(e->isLeader());
  Lease sent = sentLease(2);
  EXPECT_EQ(sent.spec.holder_identity, "");
  EXPECT_EQ(sent.spec.lease_duration_seconds, 1);
  EXPECT_EQ(sent.metadata.resource_version, "1");
  EXPECT_TRUE(e->release().ok());  // not leader: nothing to do
  EXPECT_EQ(api_.remaining(), 0u);
}

}  // namespace
}  // namespace ringmaster::kube
