// TcpStoreServer / TcpStoreClient behaviour beyond the Store contract: start order, giving up,
// server shutdown, hostile input, authentication and limits.

#include "ringmaster/rendezvous/tcp_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/rendezvous/auth.h"
#include "test_secret.h"

namespace ringmaster::rendezvous {
namespace {

using test_support::kSecret;

using namespace std::chrono_literals;
using core::Code;

using test_support::kLong;

std::unique_ptr<TcpStoreServer> startServer(int port = 0) {
  auto server = TcpStoreServer::start("127.0.0.1", port, kSecret);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<TcpStoreClient> connectTo(int port) {
  auto client = TcpStoreClient::connect("127.0.0.1", port, kSecret, 10s);
  EXPECT_TRUE(client.ok()) << client.status().toString();
  return client.ok() ? std::move(client).value() : nullptr;
}

// A port that was free a moment ago: bound by a server that is gone again.
int freePort() {
  auto server = startServer();
  return server ? server->port() : 0;
}

// A plain blocking socket to the server, for speaking broken protocol at it.
int rawConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// True once the server has closed `fd` (after whatever it still sent); false if it is still
// open after `timeout`.
bool closedByServer(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;
  }
}

// Reads one whole frame's body from a blocking socket ("" when the connection ends first).
std::string readFrame(int fd) {
  auto readExact = [fd](char* out, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd, out + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  };
  unsigned char header[4];
  if (!readExact(reinterpret_cast<char*>(header), 4)) return "";
  const size_t len =
      (size_t{header[0]} << 24) | (size_t{header[1]} << 16) | (size_t{header[2]} << 8) | header[3];
  std::string body(len, '\0');
  if (!readExact(body.data(), len)) return "";
  return body;
}

std::string frame(const std::string& body) {
  const uint32_t len = htonl(static_cast<uint32_t>(body.size()));
  std::string out(4, '\0');
  std::memcpy(out.data(), &len, 4);
  return out + body;
}

void sendAll(int fd, const std::string& data) {
  ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
}

// A raw socket that has passed the challenge-response with `secret`.
int rawAuthenticated(int port, const std::string& secret = kSecret) {
  int fd = rawConnect(port);
  const std::string challenge = readFrame(fd);
  EXPECT_EQ(challenge.size(), 1 + auth::kNonceBytes);
  const std::string server_nonce = challenge.substr(1);
  const std::string client_nonce(auth::kNonceBytes, 'c');
  sendAll(fd, frame("\x05" + client_nonce +
                    auth::proof(secret, auth::kStoreProtocol, auth::Role::kClient, server_nonce,
                                client_nonce)));
  const std::string reply = readFrame(fd);
  EXPECT_EQ(reply.substr(0, 1), std::string(1, '\0')) << "authentication refused";
  return fd;
}

std::string setFrame(const std::string& key, const std::string& value) {
  auto str = [](const std::string& v) {
    const uint32_t len = htonl(static_cast<uint32_t>(v.size()));
    std::string out(4, '\0');
    std::memcpy(out.data(), &len, 4);
    return out + v;
  };
  std::string body = "\x01";  // appended: GCC 12 warns falsely (-Wrestrict) on "lit" + string
  body += str(key);
  body += str(value);
  return frame(body);
}

std::unique_ptr<TcpStoreServer> startLimited(const StoreLimits& limits) {
  auto server = TcpStoreServer::start("127.0.0.1", 0, kSecret, limits);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  return server.ok() ? std::move(server).value() : nullptr;
}

TEST(TcpStore, ClientStartedBeforeTheServerConnectsOnceItListens) {
  const int port = freePort();
  ASSERT_NE(port, 0);
  std::unique_ptr<TcpStoreServer> server;
  // The client is already retrying (refused) when the server comes up on that port.
  core::Result<std::unique_ptr<TcpStoreClient>> client = core::internalError("not run");
  std::thread connector(
      [&] { client = TcpStoreClient::connect("127.0.0.1", port, kSecret, kLong); });
  std::thread starter([&] { server = startServer(port); });
  starter.join();
  connector.join();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(client.ok()) << client.status().toString();
  ASSERT_TRUE((*client)->set("k", toBytes("v")).ok());
  auto got = (*client)->get("k", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "v");
}

TEST(TcpStore, ConnectToAPortNobodyListensOnGivesUpWithUnavailableNamingHostAndPort) {
  const int port = freePort();
  ASSERT_NE(port, 0);
  auto client = TcpStoreClient::connect("127.0.0.1", port, kSecret, 300ms);
  ASSERT_FALSE(client.ok());
  const core::Status& st = client.status();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("after"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("refused"), std::string::npos) << st.message();
}

TEST(TcpStore, ConnectToAnUnresolvableHostGivesUpNamingTheHost) {
  auto client = TcpStoreClient::connect("no-such-host.invalid", 29500, kSecret, 300ms);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Code::kUnavailable);
  EXPECT_NE(client.status().message().find("no-such-host.invalid:29500"), std::string::npos)
      << client.status().message();
  EXPECT_NE(client.status().message().find("cannot resolve"), std::string::npos)
      << client.status().message();
}

TEST(TcpStore, StartingOnAPortInUseFailsNamingThePort) {
  auto first = startServer();
  ASSERT_NE(first, nullptr);
  auto second = TcpStoreServer::start("127.0.0.1", first->port(), kSecret);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(std::to_string(first->port())), std::string::npos)
      << second.status().message();
}

TEST(TcpStore, ServerStopWhileAClientWaitsInGetGivesTheClientAnErrorNotAHang) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  ASSERT_NE(client, nullptr);
  core::Result<Bytes> got = core::internalError("not run");
  std::thread reader([&] { got = client->get("never", kLong); });
  ASSERT_TRUE(server->waitForPendingRequestsForTesting(1, kLong));
  server->stop();
  reader.join();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().toString();
  EXPECT_NE(got.status().message().find(client->address()), std::string::npos)
      << got.status().message();
  // The client stays failed rather than hanging on a dead socket.
  EXPECT_EQ(client->set("k", toBytes("v")).code(), Code::kUnavailable);
  server->stop();  // idempotent
}

TEST(TcpStore, MalformedFramesCloseOnlyTheirOwnConnection) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto good = connectTo(server->port());
  ASSERT_NE(good, nullptr);
  ASSERT_TRUE(good->set("before", toBytes("1")).ok());

  const std::vector<std::string> bad_frames = {
      std::string("\xff\xff\xff\xff", 4),                      // length over the 64 MiB cap
      std::string("\x00\x00\x00\x00", 4),                      // empty body
      std::string("\x00\x00\x00\x01\x63", 5),                  // unknown op 99
      std::string("\x00\x00\x00\x05\x01\x00\x00\x00\x64", 9),  // SET whose key runs past the body
      // WAIT claiming 4G keys in a 14-byte body
      std::string("\x00\x00\x00\x0e\x03\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x00", 18),
  };
  for (const std::string& frame : bad_frames) {
    int fd = rawAuthenticated(server->port());
    ASSERT_EQ(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
    EXPECT_TRUE(closedByServer(fd, kLong)) << "frame of " << frame.size() << " bytes";
    ::close(fd);
  }

  ASSERT_TRUE(good->set("after", toBytes("2")).ok());
  auto got = good->get("before", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "1");
  auto fresh = connectTo(server->port());
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(fresh->get("after", kLong).ok());
}

TEST(TcpStore, OneSetReleasesEveryClientWaitingForThatKey) {
  constexpr int kWaiters = 16;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<TcpStoreClient>> clients;
  for (int i = 0; i < kWaiters; ++i) {
    clients.push_back(connectTo(server->port()));
    ASSERT_NE(clients.back(), nullptr);
  }
  std::vector<core::Status> results(kWaiters, core::internalError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] { results[i] = clients[i]->wait({"go"}, kLong); });
  }
  ASSERT_TRUE(server->waitForPendingRequestsForTesting(kWaiters, kLong));
  auto setter = connectTo(server->port());
  ASSERT_NE(setter, nullptr);
  ASSERT_TRUE(setter->set("go", toBytes("1")).ok());
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i)
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].toString();
}

TEST(TcpStore, LargeValuesRoundTrip) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  ASSERT_NE(client, nullptr);
  Bytes big(StoreLimits{}.max_value_bytes);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
  ASSERT_TRUE(client->set("big", big).ok());
  auto got = client->get("big", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_TRUE(*got == big);
}

TEST(TcpStoreAuth, AClientWithTheWrongSecretIsRefusedAndCannotTouchTheKeys) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto owner = connectTo(server->port());
  ASSERT_NE(owner, nullptr);
  ASSERT_TRUE(owner->set("job/attempt-0/heartbeat/0", toBytes("7")).ok());

  testing::internal::CaptureStderr();
  auto stranger =
      TcpStoreClient::connect("127.0.0.1", server->port(), "not-the-secret-of-this-attempt", 2s);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.status().code(), Code::kInvalidArgument) << stranger.status().toString();
  EXPECT_NE(stranger.status().message().find("refused our proof"), std::string::npos)
      << stranger.status().message();
  // One line on the server's side, naming the peer.
  EXPECT_NE(log.find("refused 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong proof of the secret"), std::string::npos) << log;

  auto got = owner->get("job/attempt-0/heartbeat/0", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "7");
}

TEST(TcpStoreAuth, RequestsBeforeAuthenticatingAreAnsweredUnauthenticatedAndClosed) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto owner = connectTo(server->port());
  ASSERT_NE(owner, nullptr);
  ASSERT_TRUE(owner->set("secret-key", toBytes("value")).ok());

  // GET "secret-key" with no wait, and a SET that would switch a heartbeat off.
  const std::string get = frame(std::string("\x02", 1) + std::string(8, '\0') +
                                std::string("\x00\x00\x00\x0a", 4) + "secret-key");
  for (const std::string& request : {get, setFrame("secret-key", "overwritten")}) {
    int fd = rawConnect(server->port());
    ASSERT_EQ(readFrame(fd).size(), 1 + auth::kNonceBytes);  // the challenge
    sendAll(fd, request);
    const std::string reply = readFrame(fd);
    ASSERT_FALSE(reply.empty());
    EXPECT_EQ(reply[0], 3) << "UNAUTHENTICATED";
    EXPECT_EQ(reply.find("value"), std::string::npos);
    EXPECT_TRUE(closedByServer(fd, kLong));
    ::close(fd);
  }
  auto got = owner->get("secret-key", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(toString(*got), "value");
}

TEST(TcpStoreAuth, TheClientRefusesAServerThatDoesNotKnowTheSecret) {
  auto other = TcpStoreServer::start("127.0.0.1", 0, "the secret of an earlier attempt!!");
  ASSERT_TRUE(other.ok()) << other.status().toString();
  auto client = TcpStoreClient::connect("127.0.0.1", (*other)->port(), kSecret, 2s);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Code::kInvalidArgument) << client.status().toString();
}

TEST(TcpStoreAuth, AConnectionThatNeverAuthenticatesIsClosedAtItsDeadline) {
  StoreLimits limits;
  limits.auth_timeout = 200ms;
  auto server = startLimited(limits);
  ASSERT_NE(server, nullptr);
  int fd = rawConnect(server->port());
  EXPECT_TRUE(closedByServer(fd, 10s));
  ::close(fd);
  // Half a frame header is no better than nothing.
  fd = rawConnect(server->port());
  sendAll(fd, std::string("\x00\x00", 2));
  EXPECT_TRUE(closedByServer(fd, 10s));
  ::close(fd);
}

TEST(TcpStoreAuth, ALargeFrameBeforeAuthenticatingIsNotBuffered) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  int fd = rawConnect(server->port());
  // A header announcing 1 MiB: over the pre-authentication frame limit, closed at once.
  sendAll(fd, std::string("\x00\x10\x00\x00", 4) + std::string(1000, 'x'));
  EXPECT_TRUE(closedByServer(fd, kLong));
  ::close(fd);
}

TEST(TcpStoreLimits, AFloodOfLargeSetsLeavesTheStoreWithinItsByteLimit) {
  StoreLimits limits;
  limits.max_value_bytes = 256 << 10;
  limits.max_total_bytes = 1 << 20;
  auto server = startLimited(limits);
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  ASSERT_NE(client, nullptr);
  const Bytes value(limits.max_value_bytes, 'v');
  int accepted = 0;
  int refused = 0;
  for (int i = 0; i < 10; ++i) {
    core::Status st = client->set("flood/" + std::to_string(i), value);
    if (st.ok()) {
      ++accepted;
    } else {
      EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
      EXPECT_NE(st.message().find("over its limit"), std::string::npos) << st.message();
      ++refused;
    }
  }
  EXPECT_EQ(accepted, 3);  // 3 x (256 KiB + key + overhead) fit in 1 MiB, a fourth does not
  EXPECT_EQ(refused, 7);
  EXPECT_LE(server->storedBytesForTesting(), limits.max_total_bytes);
  // Overwriting a key with a smaller value frees room; the connection is still usable.
  ASSERT_TRUE(client->set("flood/0", toBytes("small")).ok());
  EXPECT_TRUE(client->set("flood/3", value).ok());
  EXPECT_LE(server->storedBytesForTesting(), limits.max_total_bytes);
}

TEST(TcpStoreLimits, OversizedKeysValuesAndTooManyKeysGetAnErrorReply) {
  StoreLimits limits;
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 1024;
  limits.max_keys = 3;
  auto server = startLimited(limits);
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->set(std::string(65, 'k'), toBytes("v")).code(), Code::kInvalidArgument);
  EXPECT_EQ(client->get(std::string(65, 'k'), 10ms).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(client->add(std::string(65, 'k'), 1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(client->set("v", Bytes(1025, 'x')).code(), Code::kInvalidArgument);
  EXPECT_TRUE(client->set("a", toBytes("1")).ok());
  EXPECT_TRUE(client->set("b", toBytes("1")).ok());
  EXPECT_TRUE(client->add("c", 1).ok());
  core::Status fourth = client->set("d", toBytes("1"));
  EXPECT_EQ(fourth.code(), Code::kInvalidArgument) << fourth.toString();
  EXPECT_NE(fourth.message().find("3 keys"), std::string::npos) << fourth.message();
  EXPECT_TRUE(client->set("a", toBytes("2")).ok()) << "overwriting an existing key is fine";
}

TEST(TcpStoreLimits, AFrameOverTheServersLimitClosesThatConnectionOnly) {
  StoreLimits limits;
  limits.max_value_bytes = 1024;
  auto server = startLimited(limits);
  ASSERT_NE(server, nullptr);
  auto good = connectTo(server->port());
  ASSERT_NE(good, nullptr);
  int fd = rawAuthenticated(server->port());
  sendAll(fd, setFrame("k", std::string(limits.maxFrameBytes() + 1, 'x')));
  EXPECT_TRUE(closedByServer(fd, kLong));
  ::close(fd);
  EXPECT_TRUE(good->set("k", toBytes("v")).ok());
}

TEST(TcpStoreLimits, ConnectionsOverTheLimitAreClosedAtOnce) {
  StoreLimits limits;
  limits.max_connections = 2;
  auto server = startLimited(limits);
  ASSERT_NE(server, nullptr);
  auto first = connectTo(server->port());
  auto second = connectTo(server->port());
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  int fd = rawConnect(server->port());
  EXPECT_TRUE(closedByServer(fd, kLong));
  ::close(fd);
  EXPECT_TRUE(first->set("k", toBytes("v")).ok());
  second.reset();
  // A slot is free again once a client leaves.
  auto third = TcpStoreClient::connect("127.0.0.1", server->port(), kSecret, 10s);
  EXPECT_TRUE(third.ok()) << third.status().toString();
}

}  // namespace
}  // namespace ringmaster::rendezvous
