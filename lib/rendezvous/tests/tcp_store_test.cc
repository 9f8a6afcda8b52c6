// TcpStoreServer / TcpStoreClient behaviour beyond the Store contract: start order, giving up,
// server shutdown, hostile input.

#include "ringmaster/rendezvous/tcp_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::rendezvous {
namespace {

using namespace std::chrono_literals;
using core::Code;

constexpr auto kLong = 60s;

std::unique_ptr<TcpStoreServer> startServer(int port = 0) {
  auto server = TcpStoreServer::start("127.0.0.1", port);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<TcpStoreClient> connectTo(int port) {
  auto client = TcpStoreClient::connect("127.0.0.1", port, 10s);
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

// True once the server has closed `fd`; false if it is still open after `timeout`.
bool closedByServer(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char c;
  ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

TEST(TcpStore, ClientStartedBeforeTheServerConnectsOnceItListens) {
  const int port = freePort();
  ASSERT_NE(port, 0);
  std::unique_ptr<TcpStoreServer> server;
  // The client is already retrying (refused) when the server comes up on that port.
  core::Result<std::unique_ptr<TcpStoreClient>> client = core::internalError("not run");
  std::thread connector([&] { client = TcpStoreClient::connect("127.0.0.1", port, kLong); });
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
  auto client = TcpStoreClient::connect("127.0.0.1", port, 300ms);
  ASSERT_FALSE(client.ok());
  const core::Status& st = client.status();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("after"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("refused"), std::string::npos) << st.message();
}

TEST(TcpStore, ConnectToAnUnresolvableHostGivesUpNamingTheHost) {
  auto client = TcpStoreClient::connect("no-such-host.invalid", 29500, 300ms);
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
  auto second = TcpStoreServer::start("127.0.0.1", first->port());
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
    int fd = rawConnect(server->port());
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
  Bytes big(8 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
  ASSERT_TRUE(client->set("big", big).ok());
  auto got = client->get("big", kLong);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_TRUE(*got == big);
}

}  // namespace
}  // namespace ringmaster::rendezvous
