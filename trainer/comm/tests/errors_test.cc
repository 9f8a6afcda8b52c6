// How the backends fail: peers that never join or stop taking part, mismatched calls.
// Timeouts are small; nothing here sleeps. One test forks a rank that exits.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/shm_communicator.h"
#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm {
namespace {

using ::testing::HasSubstr;
using testing::runRanks;

constexpr std::chrono::milliseconds kShort{300};

TEST(CommErrorsTest, GlooSetupTimesOutNamingThePeerThatNeverJoins) {
  auto store = rendezvous::makeInMemoryStore();
  // World of 3, rank 2 never starts.
  auto results = testing::tryMakeCommunicators("gloo", 3, store.get(), kShort, {0, 1});
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(results[r].ok());
    EXPECT_EQ(results[r].status().code(), core::Code::kTimeout) << results[r].status().message();
    EXPECT_THAT(results[r].status().message(), HasSubstr("rank " + std::to_string(r) + ": gloo"));
    EXPECT_THAT(results[r].status().message(), HasSubstr("rank(s) 2 did not join"));
  }
}

TEST(CommErrorsTest, TcpSetupTimesOutNamingThePeerThatNeverJoins) {
  auto store = rendezvous::makeInMemoryStore();
  auto results = testing::tryMakeCommunicators("tcp", 3, store.get(), kShort, {0, 1});
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(results[r].ok());
    EXPECT_EQ(results[r].status().code(), core::Code::kTimeout) << results[r].status().message();
    EXPECT_THAT(results[r].status().message(), HasSubstr("rank " + std::to_string(r) + ": tcp"));
    EXPECT_THAT(results[r].status().message(), HasSubstr("rank(s) 2 did not join"));
  }
}

// Strangers at rank 0's address during setup, one silent and one with a wrong hello, come before
// rank 1 and hold up nobody: the mesh forms at once, and works.
TEST(CommErrorsTest, TcpSetupDropsStrangersWithoutWaitingForThem) {
  using std::chrono::seconds;
  auto store = rendezvous::makeInMemoryStore();
  std::vector<core::Result<std::unique_ptr<Communicator>>> rank0;
  std::thread first(
      [&] { rank0 = testing::tryMakeCommunicators("tcp", 2, store.get(), seconds(30), {0}); });
  auto addr = store->get("tcp/addr/0", seconds(10));
  ASSERT_TRUE(addr.ok()) << addr.status().message();
  const std::string text = rendezvous::toString(*addr);
  const size_t colon = text.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(text.substr(colon + 1))));
  ASSERT_EQ(::inet_pton(AF_INET, text.substr(0, colon).c_str(), &sa.sin_addr), 1);
  std::vector<int> strangers;
  for (int i = 0; i < 2; ++i) {
    strangers.push_back(::socket(AF_INET, SOCK_STREAM, 0));
    ASSERT_EQ(::connect(strangers.back(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  }
  const std::string garbage(48, 'x');
  ASSERT_EQ(::send(strangers[1], garbage.data(), garbage.size(), 0), 48);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 0 has taken both

  const auto start = std::chrono::steady_clock::now();
  auto rank1 = testing::tryMakeCommunicators("tcp", 2, store.get(), seconds(30), {1});
  first.join();
  const auto took = std::chrono::steady_clock::now() - start;
  for (int fd : strangers) ::close(fd);
  ASSERT_TRUE(rank0[0].ok()) << rank0[0].status().message();
  ASSERT_TRUE(rank1[0].ok()) << rank1[0].status().message();
  EXPECT_LT(took, seconds(3));
  float v[2] = {1, 2};
  Communicator* comms[2] = {rank0[0]->get(), rank1[0]->get()};
  runRanks(2, [&](int r) { EXPECT_TRUE(comms[r]->allreduceSum(&v[r], 1, {}).ok()); });
  EXPECT_EQ(v[0], 3.0f);
  EXPECT_EQ(v[1], 3.0f);
}

TEST(CommErrorsTest, ShmSetupTimesOutNamingThePeerThatNeverReports) {
  auto store = rendezvous::makeInMemoryStore();
  auto results = testing::tryMakeCommunicators("shm", 2, store.get(), kShort, {0});
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().code(), core::Code::kTimeout) << results[0].status().message();
  EXPECT_THAT(results[0].status().message(), HasSubstr("rank(s) 1 did not report"));
}

TEST(CommErrorsTest, ShmSetupWithoutRankZeroSaysSo) {
  auto store = rendezvous::makeInMemoryStore();
  auto results = testing::tryMakeCommunicators("shm", 2, store.get(), kShort, {1});
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().code(), core::Code::kTimeout) << results[0].status().message();
  EXPECT_THAT(results[0].status().message(), HasSubstr("rank 0 did not publish the segment"));
}

// A peer that joined but never calls the collective. The group is made with a long timeout (a
// loaded machine may take more than kShort to set it up); the call's own is short.
void expectAllreduceTimesOutNamingCall(const std::string& backend) {
  auto comms = testing::makeCommunicators(backend, 2, std::chrono::seconds(60));
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> data(1000, 1.0f);
  core::Status s =
      comms[0]->allreduceSum(data.data(), data.size(), {.timeout = kShort, .tag = "bucket 7"});
  EXPECT_EQ(s.code(), core::Code::kTimeout) << s.message();
  EXPECT_THAT(s.message(), HasSubstr("rank 0: allreduceSum 'bucket 7' (4000 bytes)"));
  // The communicator is unusable afterwards, and says why.
  core::Status again = comms[0]->allreduceSum(data.data(), data.size(), {});
  EXPECT_FALSE(again.ok());
  EXPECT_THAT(again.message(), HasSubstr("bucket 7"));
}

TEST(CommErrorsTest, GlooAllreduceTimesOutNamingRankTagAndBytes) {
  expectAllreduceTimesOutNamingCall("gloo");
}

TEST(CommErrorsTest, TcpAllreduceTimesOutNamingRankTagAndBytes) {
  expectAllreduceTimesOutNamingCall("tcp");
}

// A rank that gives up closes its connections: a peer arriving later with a long timeout fails
// at once, naming the rank that is gone, in the small (doubling) and the large (ring) algorithm.
TEST(CommErrorsTest, TcpFailureAbortsThePeersAtOnce) {
  for (size_t count : {size_t{1}, size_t{1} << 20}) {
    auto comms = testing::makeCommunicators("tcp", 2, std::chrono::seconds(60));
    ASSERT_EQ(comms.size(), 2u);
    std::vector<float> w(count, 1.0f);
    float nothing = 0;
    core::Status first =
        comms[0]->recv(&nothing, sizeof(nothing), 1, {.timeout = kShort, .tag = "t"});
    ASSERT_EQ(first.code(), core::Code::kTimeout) << first.message();
    const auto start = std::chrono::steady_clock::now();
    core::Status late = comms[1]->allreduceSum(w.data(), count, {});
    EXPECT_EQ(late.code(), core::Code::kUnavailable) << late.message();
    EXPECT_THAT(late.message(), HasSubstr("(the rank is gone)"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
}

TEST(CommErrorsTest, ShmAllreduceTimesOutNamingRankTagAndBytes) {
  expectAllreduceTimesOutNamingCall("shm");
}

TEST(CommErrorsTest, InProcAllreduceTimesOutNamingTheMissingRank) {
  auto comms = testing::makeCommunicators("inproc", 3, kShort);
  ASSERT_EQ(comms.size(), 3u);
  std::vector<core::Status> status(2);
  float v[4] = {1, 2, 3, 4};
  float w[4] = {1, 2, 3, 4};
  float* bufs[2] = {v, w};
  runRanks(2, [&](int r) {
    status[r] = comms[r]->allreduceSum(bufs[r], 4, {.timeout = kShort, .tag = "t"});
  });
  // One of the two times out naming rank 2; the other sees the group broken.
  bool named = false;
  for (const core::Status& s : status) {
    EXPECT_FALSE(s.ok());
    named = named || (s.code() == core::Code::kTimeout &&
                      s.message().find("waiting for rank(s) 2") != std::string::npos);
  }
  EXPECT_TRUE(named) << status[0].message() << " | " << status[1].message();
}

TEST(CommErrorsTest, ShmTimeoutAbortsTheGroupForThePeers) {
  auto comms = testing::makeCommunicators("shm", 2, std::chrono::seconds(60));
  ASSERT_EQ(comms.size(), 2u);
  float v = 1.0f;
  core::Status first = comms[0]->allreduceSum(&v, 1, {.timeout = kShort, .tag = ""});
  ASSERT_EQ(first.code(), core::Code::kTimeout) << first.message();
  // Rank 1 arrives late, with a long timeout: it must not wait it out.
  float w = 1.0f;
  core::Status late = comms[1]->allreduceSum(&w, 1, {});
  EXPECT_EQ(late.code(), core::Code::kUnavailable) << late.message();
  EXPECT_THAT(late.message(), HasSubstr("rank 0 failed and aborted the group"));
}

// A rank whose process dies (SIGKILL, a crash, a pod torn down) never posts nor sends: the
// others must not wait out their timeout. Rank 1 runs in a child process that exits after
// setup; this returns rank 0's communicator (with point-to-point rings) and the child's pid.
std::unique_ptr<ShmCommunicator> shmWithAPeerThatExited(pid_t* child_pid) {
  ShmConfig config;
  config.size = 2;
  config.timeout = std::chrono::seconds(10);
  config.ring_bytes = defaultShmRingBytes(2);
  int port_pipe[2];
  EXPECT_EQ(pipe(port_pipe), 0);
  const pid_t child = fork();  // before any store thread exists in this process
  EXPECT_GE(child, 0);
  if (child == 0) {
    close(port_pipe[1]);
    int port = 0;
    if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) _exit(2);
    auto store =
        rendezvous::TcpStoreClient::connect("127.0.0.1", port, "", std::chrono::seconds(10));
    if (!store.ok()) _exit(3);
    config.rank = 1;
    config.store = store->get();
    _exit(ShmCommunicator::create(config).ok() ? 0 : 4);  // exits without any call
  }
  close(port_pipe[0]);
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", 0, "");
  EXPECT_TRUE(server.ok()) << server.status().toString();
  if (!server.ok()) return nullptr;
  const int port = (*server)->port();
  EXPECT_EQ(write(port_pipe[1], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  close(port_pipe[1]);
  auto store = rendezvous::TcpStoreClient::connect("127.0.0.1", port, "", std::chrono::seconds(10));
  EXPECT_TRUE(store.ok()) << store.status().toString();
  if (!store.ok()) return nullptr;
  config.rank = 0;
  config.store = store->get();
  auto comm = ShmCommunicator::create(config);
  EXPECT_TRUE(comm.ok()) << comm.status().toString();
  int wstatus = 0;
  EXPECT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "child status " << wstatus;
  *child_pid = child;
  return comm.ok() ? std::move(comm).value() : nullptr;
}

TEST(CommErrorsTest, ShmWaitFailsNamingAPeerProcessThatExited) {
  pid_t child = 0;
  auto comm = shmWithAPeerThatExited(&child);
  ASSERT_NE(comm, nullptr);
  std::vector<float> data(1024, 1.0f);
  // A long timeout: failing by timeout would say "timed out", not name the exited process.
  core::Status st = comm->allreduceSum(data.data(), data.size(),
                                       {.timeout = std::chrono::seconds(30), .tag = "grads"});
  EXPECT_EQ(st.code(), core::Code::kUnavailable) << st.message();
  EXPECT_THAT(st.message(),
              HasSubstr("rank 1 (pid " + std::to_string(child) + ") exited before it could"));
}

TEST(CommErrorsTest, ShmReceiveFailsNamingAPeerProcessThatExited) {
  pid_t child = 0;
  auto comm = shmWithAPeerThatExited(&child);
  ASSERT_NE(comm, nullptr);
  std::vector<float> data(1024);
  core::Status st = comm->recv(data.data(), data.size() * sizeof(float), 1,
                               {.timeout = std::chrono::seconds(30), .tag = "activations"});
  EXPECT_EQ(st.code(), core::Code::kUnavailable) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("rank 0: receive from rank 1 'activations' (4096 bytes) "
                                      "over shm: rank 1 (pid " +
                                      std::to_string(child) + ") exited before it sent"));
}

void expectMismatchedSizesRejected(const std::string& backend) {
  auto comms = testing::makeCommunicators(backend, 2, std::chrono::seconds(60));
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> a(10, 1.0f);
  std::vector<float> b(12, 1.0f);
  std::vector<core::Status> status(2);
  runRanks(2, [&](int r) {
    status[r] = r == 0 ? comms[0]->allreduceSum(a.data(), a.size(), {})
                       : comms[1]->allreduceSum(b.data(), b.size(), {});
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(status[r].ok()) << backend << " rank " << r;
  }
  // At least one rank names the other's size.
  const std::string both = status[0].message() + " | " + status[1].message();
  EXPECT_THAT(both, ::testing::AnyOf(HasSubstr("48 bytes"), HasSubstr("40 bytes"))) << both;
  EXPECT_TRUE(status[0].code() == core::Code::kInvalidArgument ||
              status[1].code() == core::Code::kInvalidArgument)
      << both;
}

TEST(CommErrorsTest, InProcRejectsMismatchedSizesOnEveryRank) {
  expectMismatchedSizesRejected("inproc");
}

TEST(CommErrorsTest, ShmRejectsMismatchedSizesOnEveryRank) { expectMismatchedSizesRejected("shm"); }

TEST(CommErrorsTest, ShmRejectsMismatchedCallsAcrossRanks) {
  auto comms = testing::makeCommunicators("shm", 2, std::chrono::seconds(60));
  ASSERT_EQ(comms.size(), 2u);
  std::vector<core::Status> status(2);
  float v[4] = {0, 0, 0, 0};
  char bytes[16] = {};
  runRanks(2, [&](int r) {
    status[r] = r == 0 ? comms[0]->allreduceSum(v, 4, {}) : comms[1]->broadcast(bytes, 16, 0);
  });
  const std::string both = status[0].message() + " | " + status[1].message();
  EXPECT_FALSE(status[0].ok());
  EXPECT_FALSE(status[1].ok());
  EXPECT_THAT(both, HasSubstr("rank 1 called broadcast")) << both;
}

}  // namespace
}  // namespace ringmaster::trainer::comm
