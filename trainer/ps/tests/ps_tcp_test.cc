// The TCP transport of the parameter servers on a hand-made four-float server (plain SGD at
// learning rate 1, so expected values are exact): the handshake (right secret served, wrong
// secret and anything before HELLO refused as unauthenticated), requests and the server's errors
// through the connection, a dropped or departed worker no longer holding sync back, a dropped
// worker rejoining, stop() while
// a pull waits, and the client's unreachable and silent-server failures. Deadlines are generous
// and nothing asserts how fast anything ran.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <vector>

#include "trainer/ps/parameter_server.h"
#include "trainer/ps/ps_tcp_connection.h"
#include "trainer/ps/ps_tcp_server.h"
#include "trainer/ps/ps_wire.h"

namespace ringmaster::trainer::ps {
namespace {

using Floats = std::vector<float>;
using std::chrono::milliseconds;

const std::string kSecret = "0123456789abcdef0123456789abcdef";
const Floats kInitial = {1, 2, 3, 4};
const Floats kGrad0 = {2, 4, 6, 8};
const Floats kGrad1 = {4, 0, -2, 2};
const Floats kAfterBoth = {-2, 0, 1, -1};     // kInitial - mean(kGrad0, kGrad1)
const Floats kAfterGrad0 = {-1, -2, -3, -4};  // kInitial - kGrad0

struct Served {
  std::unique_ptr<ParameterServer> server;
  std::unique_ptr<PsTcpServer> tcp;
};

Served serve(Consistency consistency = Consistency::sync(), int workers = 2) {
  ServerOptions o;
  o.consistency = consistency;
  o.optimizer.learning_rate = 1;
  o.optimizer.momentum = 0;
  o.wait_timeout = std::chrono::seconds(60);
  Served s;
  auto server = ParameterServer::create(0, {Piece{0, 0, 4, 0}}, kInitial, workers, o);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  if (!server.ok()) return s;
  s.server = std::move(*server);
  auto tcp = PsTcpServer::start(s.server.get(), "127.0.0.1", 0, kSecret);
  EXPECT_TRUE(tcp.ok()) << tcp.status().toString();
  if (tcp.ok()) s.tcp = std::move(*tcp);
  return s;
}

std::unique_ptr<PsTcpConnection> connectAs(const Served& s, WorkerId worker,
                                           const std::string& secret = kSecret) {
  auto c = PsTcpConnection::connect("127.0.0.1", s.tcp->port(), secret, worker,
                                    {.connect_deadline = std::chrono::seconds(30)});
  EXPECT_TRUE(c.ok()) << c.status().toString();
  return c.ok() ? std::move(*c) : nullptr;
}

Floats pulled(PsTcpConnection& c, int64_t step) {
  Floats out(4);
  const core::Status st = c.pull(c.worker(), step, out);
  EXPECT_TRUE(st.ok()) << st.toString();
  return out;
}

void pushed(PsTcpConnection& c, int64_t step, const Floats& grads) {
  const core::Status st = c.push(c.worker(), step, grads);
  EXPECT_TRUE(st.ok()) << st.toString();
}

// A plain blocking socket to the server, for speaking the protocol by hand.
int rawConnect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

wire::Deadline soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(30); }

// Reads one message off a raw socket.
wire::Message readMessage(int fd) {
  core::Result<std::string> body = wire::readFrame(fd, 1 << 20, soon());
  EXPECT_TRUE(body.ok()) << body.status().toString();
  if (!body.ok()) return wire::Error{};
  core::Result<wire::Message> m = wire::parse(*body);
  EXPECT_TRUE(m.ok()) << m.status().toString();
  return m.ok() ? *m : wire::Message(wire::Error{});
}

// After a refusal the server closes: the next read sees the end of the stream.
void expectClosed(int fd) {
  core::Result<std::string> more = wire::readFrame(fd, 1 << 20, soon());
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), core::Code::kUnavailable) << more.status().toString();
}

TEST(PsTcpAuth, RightSecretIsServed) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  auto w1 = connectAs(s, 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_EQ(pulled(*w0, 0), kInitial);
  EXPECT_EQ(pulled(*w1, 0), kInitial);
  pushed(*w0, 0, kGrad0);
  pushed(*w1, 0, kGrad1);
  EXPECT_EQ(pulled(*w0, 1), kAfterBoth);
  EXPECT_EQ(pulled(*w1, 1), kAfterBoth);
  EXPECT_TRUE(w0->leave().ok());
  EXPECT_TRUE(w1->leave().ok());
  const ServerCounters counters = s.server->counters();
  EXPECT_EQ(counters.pulls, 4u);
  EXPECT_EQ(counters.pushes, 2u);
  EXPECT_EQ(counters.updates, 1u);
}

TEST(PsTcpAuth, WrongSecretIsRefusedAsUnauthenticated) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto refused = PsTcpConnection::connect("127.0.0.1", s.tcp->port(), kSecret + "x", 0,
                                          {.connect_deadline = std::chrono::seconds(30)});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), core::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("unauthenticated"), std::string::npos)
      << refused.status().toString();
  EXPECT_EQ(s.server->counters().pulls, 0u);
  // The worker was not taken as connected: the right secret still gets in.
  EXPECT_TRUE(connectAs(s, 0));
}

TEST(PsTcpAuth, AWrongProofByHandGetsUnauthenticatedAndClosed) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  const int fd = rawConnect(s.tcp->port());
  const wire::Message challenge = readMessage(fd);
  ASSERT_TRUE(std::holds_alternative<wire::Challenge>(challenge));
  const std::string nonce(wire::kNonceBytes, 'n');
  const wire::Hello hello{wire::kVersion, 0, nonce,
                          wire::proof("not the secret", wire::Role::kClient,
                                      std::get<wire::Challenge>(challenge).nonce, nonce, 0)};
  ASSERT_TRUE(wire::writeAll(fd, wire::encode(hello), soon()).ok());
  const wire::Message reply = readMessage(fd);
  ASSERT_TRUE(std::holds_alternative<wire::Error>(reply));
  EXPECT_EQ(std::get<wire::Error>(reply).code, wire::ErrorCode::kUnauthenticated);
  expectClosed(fd);
  ::close(fd);
}

TEST(PsTcpAuth, NothingIsServedBeforeHello) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  const int fd = rawConnect(s.tcp->port());
  ASSERT_TRUE(std::holds_alternative<wire::Challenge>(readMessage(fd)));
  ASSERT_TRUE(wire::writeAll(fd, wire::encode(wire::Pull{0}), soon()).ok());
  const wire::Message reply = readMessage(fd);
  ASSERT_TRUE(std::holds_alternative<wire::Error>(reply));
  EXPECT_EQ(std::get<wire::Error>(reply).code, wire::ErrorCode::kUnauthenticated);
  expectClosed(fd);
  ::close(fd);
  EXPECT_EQ(s.server->counters().pulls, 0u);
}

TEST(PsTcpAuth, AnOversizedFrameBeforeHelloIsCut) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  const int fd = rawConnect(s.tcp->port());
  ASSERT_TRUE(std::holds_alternative<wire::Challenge>(readMessage(fd)));
  // Claims 1 MiB: more than a handshake frame may be; the server does not buffer it.
  ASSERT_TRUE(wire::writeAll(fd, std::string("\x00\x00\x10\x00", 4), soon()).ok());
  expectClosed(fd);
  ::close(fd);
}

TEST(PsTcpConnection, ServerErrorsKeepTheirCodeAndTheConnection) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  ASSERT_TRUE(w0);
  Floats out(4);
  EXPECT_EQ(w0->pull(0, 5, out).code(), core::Code::kInvalidArgument);  // not its clock
  Floats short_grads(3);
  EXPECT_EQ(w0->push(0, 0, short_grads).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(w0->pull(1, 0, out).code(), core::Code::kInvalidArgument);  // another worker's
  EXPECT_EQ(pulled(*w0, 0), kInitial);                                  // still usable
  // A second connection for a connected worker is refused.
  auto twin = PsTcpConnection::connect("127.0.0.1", s.tcp->port(), kSecret, 0,
                                       {.connect_deadline = std::chrono::seconds(30)});
  ASSERT_FALSE(twin.ok());
  EXPECT_EQ(twin.status().code(), core::Code::kAlreadyExists) << twin.status().toString();
}

TEST(PsTcpMembership, ADroppedWorkerDoesNotHoldSyncBack) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  auto w1 = connectAs(s, 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_EQ(pulled(*w0, 0), kInitial);
  EXPECT_EQ(pulled(*w1, 0), kInitial);
  pushed(*w0, 0, kGrad0);
  auto next = std::async(std::launch::async, [&] { return pulled(*w0, 1); });
  w1->drop();  // as a crash would, between its pull and its push
  EXPECT_EQ(next.get(), kAfterGrad0);
  Floats out(4);
  EXPECT_EQ(w1->pull(1, 1, out).code(), core::Code::kUnavailable);
}

// A worker that dropped connects again: WELCOME says it is gone and where the others are; until
// it JOINs its pulls are refused, after it it trains with them again, and every push's reply
// says how many pushes the server took.
TEST(PsTcpMembership, ADroppedWorkerRejoinsAtTheOthersStep) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  auto w1 = connectAs(s, 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_EQ(w1->standing(), (WorkerStanding{true, 0}));
  w1->drop();
  // Worker 0 alone: steps 0 and 1 go on without worker 1 (its first pull of step 1 waits until
  // the server has read the closed socket and dropped worker 1).
  for (int64_t step = 0; step < 2; ++step) {
    pulled(*w0, step);
    pushed(*w0, step, kGrad0);
  }
  EXPECT_EQ(w0->serverPushes(), 2u);
  ASSERT_EQ(s.server->liveWorkers(), 1u);
  auto again = connectAs(s, 1);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->standing(), (WorkerStanding{false, 2}));
  Floats out(4);
  EXPECT_EQ(again->pull(1, 2, out).code(), core::Code::kNotFound);
  ASSERT_TRUE(again->join(2).ok());
  EXPECT_EQ(again->standing(), (WorkerStanding{true, 2}));
  EXPECT_EQ(again->join(2).code(), core::Code::kAlreadyExists);
  // Step 2 with both: sync waits for the rejoined worker's push again.
  pulled(*w0, 2);
  pulled(*again, 2);
  pushed(*w0, 2, kGrad0);
  pushed(*again, 2, kGrad1);
  EXPECT_EQ(again->serverPushes(), 4u);
  EXPECT_EQ(s.server->counters().updates, 3u);
}

TEST(PsTcpMembership, ALeavingWorkerIsRemoved) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  auto w1 = connectAs(s, 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_EQ(pulled(*w0, 0), kInitial);
  pushed(*w0, 0, kGrad0);
  EXPECT_TRUE(w1->leave().ok());
  EXPECT_EQ(pulled(*w0, 1), kAfterGrad0);
  // Removed for good: a new connection as worker 1 gets in but is not a live worker.
  auto again = connectAs(s, 1);
  ASSERT_TRUE(again);
  Floats out(4);
  EXPECT_EQ(again->pull(1, 1, out).code(), core::Code::kNotFound);
}

TEST(PsTcpServer, StopWakesAWaitingPullAndClosesConnections) {
  Served s = serve();
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  auto w1 = connectAs(s, 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_EQ(pulled(*w0, 0), kInitial);
  pushed(*w0, 0, kGrad0);
  auto waiting = std::async(std::launch::async, [&] {
    Floats out(4);
    return w0->pull(0, 1, out);  // waits for worker 1's push
  });
  s.tcp->stop();
  const core::Status st = waiting.get();
  EXPECT_FALSE(st.ok());
  Floats out(4);
  EXPECT_FALSE(w1->pull(1, 0, out).ok());
  s.tcp->stop();  // idempotent
}

TEST(PsTcpConnection, LogsTheRoundTripOfASmallRequest) {
  Served s = serve(Consistency::async());  // nothing waits for the other worker
  ASSERT_TRUE(s.tcp);
  auto w0 = connectAs(s, 0);
  ASSERT_TRUE(w0);
  constexpr int kRounds = 500;
  Floats out(4);
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < kRounds; ++k) {
    ASSERT_TRUE(w0->pull(0, k, out).ok());
    ASSERT_TRUE(w0->push(0, k, kGrad0).ok());
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("loopback TCP, 16-byte pieces: %.1f us per request and reply (mean of %d)\n",
              us / (2 * kRounds), 2 * kRounds);
  EXPECT_TRUE(w0->leave().ok());
}

TEST(PsTcpConnection, UnreachableServerIsUnavailable) {
  // A port that was just free: bind, read it, close.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  auto c = PsTcpConnection::connect("127.0.0.1", ntohs(addr.sin_port), kSecret, 0,
                                    {.connect_deadline = milliseconds(300)});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::Code::kUnavailable) << c.status().toString();
}

TEST(PsTcpConnection, ASilentServerTimesOut) {
  // Accepts (the kernel does, from the backlog) but never says a word.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto c = PsTcpConnection::connect(
      "127.0.0.1", ntohs(addr.sin_port), kSecret, 0,
      {.connect_deadline = std::chrono::seconds(30), .op_timeout = milliseconds(200)});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::Code::kTimeout) << c.status().toString();
  ::close(fd);
}

}  // namespace
}  // namespace ringmaster::trainer::ps
