#include "local/https/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "local/https/auth.h"
#include "local/https/files.h"
#include "local/https/kubeconfig.h"
#include "local/https/pki.h"
#include "local/https/tests/test_client.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;
using testing::TestClient;
using testing::TestResponse;
using namespace std::chrono_literals;

constexpr auto kWait = 20s;  // a deadline for failures, never a pause

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("RINGMASTER_LOG_LEVEL") != nullptr) core::log::initFromEnv();  // access log
    std::string templ = (fs::temp_directory_path() / "rm-https-server-XXXXXX").string();
    dir_ = ::mkdtemp(templ.data());
    auto token = loadOrCreateToken(dir_ / "token");
    ASSERT_TRUE(token.ok());
    token_ = *token;
    startServer(ServerOptions{}.max_connections);
  }

  void startServer(size_t max_connections, std::vector<std::string> also_listen_on = {}) {
    if (server_) server_->stop();
    auto pki = loadOrCreatePki(dir_ / "pki");
    ASSERT_TRUE(pki.ok()) << pki.status().toString();
    ca_pem_ = pki->ca_cert_pem;
    ServerOptions options;
    options.cert_pem = pki->server_cert_pem;
    options.key_pem = pki->server_key_pem;
    options.bearer_token = token_;
    options.limits.max_body_bytes = 1024 * 1024;
    options.max_connections = max_connections;
    options.also_listen_on = std::move(also_listen_on);
    auto server =
        Server::start(options, [this](const Request& r, ResponseWriter& w) { handle(r, w); });
    ASSERT_TRUE(server.ok()) << server.status().toString();
    server_ = std::move(*server);
  }

  void TearDown() override {
    if (server_) server_->stop();
    fs::remove_all(dir_);
  }

  void handle(const Request& request, ResponseWriter& writer) {
    if (request.path == "/healthz") {
      (void)writer.send(200, "text/plain; charset=utf-8", "ok");
    } else if (request.path == "/hello") {
      (void)writer.send(200, "text/plain", "hello " + request.user);
    } else if (request.path == "/echo") {
      (void)writer.send(200, "text/plain", request.method + ":" + request.body);
    } else if (request.path == "/stream") {
      // Each chunk waits for the client's acknowledgement of the previous one: the test only
      // passes if every chunk reaches the client while the stream is still open.
      Headers headers;
      headers.add("Content-Type", "application/json");
      if (!writer.startStream(200, headers).ok()) return;
      for (int i = 0; i < 3; ++i) {
        if (!writer.writeChunk("event " + std::to_string(i) + "\n").ok()) return;
        std::unique_lock lock(mu_);
        if (!cv_.wait(lock, writer.closedToken(), [&] { return acked_ > i; })) return;
      }
      (void)writer.endStream();
    } else if (request.path == "/wait-close") {
      if (!writer.startStream(200, {}).ok() || !writer.writeChunk("first\n").ok()) return;
      std::unique_lock lock(mu_);
      cv_.wait(lock, writer.closedToken(), [] { return false; });
      saw_close_ = true;
      cv_.notify_all();
    } else if (request.path == "/throw") {
      throw std::runtime_error("boom");
    } else if (request.path == "/silent") {
      // no response at all
    } else {
      (void)writer.send(404, "text/plain; charset=utf-8", "404 page not found\n");
    }
  }

  std::unique_ptr<TestClient> connect() {
    auto client = TestClient::connect(server_->port(), ca_pem_);
    EXPECT_TRUE(client.ok()) << client.status().toString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  TestResponse roundTrip(TestClient& client, const std::string& raw) {
    EXPECT_TRUE(client.send(raw).ok());
    auto response = client.readResponse();
    EXPECT_TRUE(response.ok()) << response.status().toString();
    return response.ok() ? *response : TestResponse{};
  }

  std::string post(const std::string& path, const std::string& headers, const std::string& body) {
    return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token_ +
           "\r\n" + headers + "\r\n" + body;
  }

  fs::path dir_;
  std::string ca_pem_;
  std::string token_;
  std::unique_ptr<Server> server_;

  std::mutex mu_;
  std::condition_variable_any cv_;
  int acked_ = 0;           // guarded by mu_
  bool saw_close_ = false;  // guarded by mu_
};

TEST_F(ServerTest, ServesAGetOverVerifiedTlsWithTheToken) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->alpn(), "http/1.1");
  TestResponse response = roundTrip(*client, TestClient::get("/hello", token_));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "hello ringmaster-local-admin");
  EXPECT_EQ(response.headers.get("Content-Type"), "text/plain");
  EXPECT_NE(server_->url().find("https://127.0.0.1:"), std::string::npos);
}

// Whether a TCP connection to ip:port is accepted.
bool accepts(const char* ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip, &addr.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

TEST_F(ServerTest, AlsoListensOnTheExtraAddressesAtTheSamePort) {
  // 127.0.0.2 stands in for the pod gateway; 10.255.255.254 is configured nowhere (IP_FREEBIND
  // binds it anyway); 999.1.1.1 is no address and is left out.
  startServer(ServerOptions{}.max_connections, {"127.0.0.2", "10.255.255.254", "999.1.1.1"});
  EXPECT_TRUE(accepts("127.0.0.1", server_->port()));
  EXPECT_TRUE(accepts("127.0.0.2", server_->port()));
  EXPECT_FALSE(accepts("127.0.0.3", server_->port()));
}

TEST_F(ServerTest, WrongTokenGets401StatusAndTheConnectionStaysUsable) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse response = roundTrip(*client, TestClient::get("/hello", "not-a-valid-token"));
  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(response.headers.get("Content-Type"), "application/json");
  EXPECT_EQ(response.body, unauthorizedBody());
  EXPECT_EQ(roundTrip(*client, TestClient::get("/hello", token_)).status, 200);
}

TEST_F(ServerTest, NoCredentialsIsAnonymousForbiddenExceptOnPublicPaths) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse response =
      roundTrip(*client, TestClient::get("/api/v1/namespaces/default/pods", ""));
  EXPECT_EQ(response.status, 403);
  EXPECT_NE(response.body.find("\"reason\":\"Forbidden\""), std::string::npos) << response.body;
  EXPECT_NE(response.body.find("User \\\"system:anonymous\\\" cannot list resource \\\"pods\\\""),
            std::string::npos)
      << response.body;
  TestResponse health = roundTrip(*client, TestClient::get("/healthz", ""));
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
}

TEST_F(ServerTest, StreamDeliversEachChunkBeforeTheNextIsSent) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(TestClient::get("/stream", token_)).ok());
  auto head = client->readHead();
  ASSERT_TRUE(head.ok()) << head.status().toString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers.get("Transfer-Encoding"), "chunked");
  for (int i = 0; i < 3; ++i) {
    auto chunk = client->readChunk();
    ASSERT_TRUE(chunk.ok()) << "chunk " << i << ": " << chunk.status().toString();
    EXPECT_EQ(*chunk, "event " + std::to_string(i) + "\n");
    std::lock_guard lock(mu_);
    acked_ = i + 1;
    cv_.notify_all();
  }
  auto last = client->readChunk();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, "");
  // The stream ended cleanly, so the connection serves the next request.
  EXPECT_EQ(roundTrip(*client, TestClient::get("/hello", token_)).status, 200);
}

TEST_F(ServerTest, HandlerSeesTheClientDisconnectDuringAStream) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(TestClient::get("/wait-close", token_)).ok());
  ASSERT_TRUE(client->readHead().ok());
  auto first = client->readChunk();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "first\n");
  client->closeAbruptly();
  std::unique_lock lock(mu_);
  EXPECT_TRUE(cv_.wait_for(lock, kWait, [&] { return saw_close_; }));
}

// A full connection table gives up the connection idle longest, not the newcomer: idle or
// abandoned connections (502 of them locked kubectl out) cannot keep a client away, and a
// connection serving a request (a watch) is never the one closed.
TEST_F(ServerTest, AFullTableClosesTheLongestIdleConnectionForANewcomer) {
  startServer(4);
  auto streaming = connect();
  ASSERT_NE(streaming, nullptr);
  ASSERT_TRUE(streaming->send(TestClient::get("/wait-close", token_)).ok());
  ASSERT_TRUE(streaming->readHead().ok());
  auto first = streaming->readChunk();
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(*first, "first\n");
  // Each idle connection serves one request before the next opens: the server then has them
  // idle in this order (a connection's idle time starts again after its handshake, which the
  // server finishes on its own thread, in whatever order a busy machine runs those).
  std::vector<std::unique_ptr<TestClient>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(connect());
    ASSERT_NE(idle.back(), nullptr);
    ASSERT_EQ(roundTrip(*idle.back(), TestClient::get("/hello", token_)).status, 200);
  }
  // Four open, the limit: the newcomer is served...
  auto newcomer = connect();
  ASSERT_NE(newcomer, nullptr);
  EXPECT_EQ(roundTrip(*newcomer, TestClient::get("/hello", token_)).status, 200);
  // ...because the first idle connection was closed, while the others and the stream stay.
  EXPECT_TRUE(idle[0]->peerClosed());
  EXPECT_EQ(roundTrip(*idle[2], TestClient::get("/hello", token_)).status, 200);
  std::lock_guard lock(mu_);
  EXPECT_FALSE(saw_close_) << "the busy stream was closed";
}

TEST_F(ServerTest, StopDuringAnOpenStreamWakesTheHandlerAndReturns) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(TestClient::get("/wait-close", token_)).ok());
  ASSERT_TRUE(client->readHead().ok());
  ASSERT_TRUE(client->readChunk().ok());
  auto stopped = std::async(std::launch::async, [&] { server_->stop(); });
  ASSERT_EQ(stopped.wait_for(kWait), std::future_status::ready);
  {
    std::lock_guard lock(mu_);
    EXPECT_TRUE(saw_close_);
  }
  EXPECT_TRUE(client->peerClosed());
}

TEST_F(ServerTest, MalformedRequestGets400AndCloseWhileOthersAreServed) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse response = roundTrip(*client, "GARBAGE\r\n\r\n");
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.headers.get("Connection"), "close");
  EXPECT_TRUE(client->peerClosed());
  auto other = connect();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(roundTrip(*other, TestClient::get("/hello", token_)).status, 200);
}

TEST_F(ServerTest, KeepsTheConnectionAliveAcrossRequests) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse first = roundTrip(*client, TestClient::get("/hello", token_));
  TestResponse second = roundTrip(*client, post("/echo", "Content-Length: 3\r\n", "abc"));
  EXPECT_EQ(first.status, 200);
  EXPECT_FALSE(first.headers.has("Connection"));
  EXPECT_EQ(second.body, "POST:abc");
}

TEST_F(ServerTest, ReadsChunkedRequestBodies) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse response = roundTrip(
      *client, post("/echo", "Transfer-Encoding: chunked\r\n", "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "POST:abcde");
}

TEST_F(ServerTest, AnswersExpectContinueBeforeReadingTheBody) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(
      client->send(post("/echo", "Content-Length: 5\r\nExpect: 100-continue\r\n", "")).ok());
  auto interim = client->readHead();
  ASSERT_TRUE(interim.ok());
  EXPECT_EQ(interim->status, 100);
  TestResponse response = roundTrip(*client, "hello");
  EXPECT_EQ(response.body, "POST:hello");
}

TEST_F(ServerTest, TooLargeBodyGets413AndClose) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse response =
      roundTrip(*client, post("/echo", "Content-Length: " + std::to_string(2 << 20) + "\r\n", ""));
  EXPECT_EQ(response.status, 413);
  // A Status body, as kube-apiserver sends, so kubectl can say what happened.
  EXPECT_NE(response.body.find("\"reason\":\"RequestEntityTooLarge\""), std::string::npos)
      << response.body;
  EXPECT_NE(response.body.find("\"message\":\"Request entity too large: limit is "),
            std::string::npos)
      << response.body;
  EXPECT_TRUE(client->peerClosed());
}

// A client that sends the whole oversized body before reading (as kubectl does) gets the 413,
// not a reset: the server reads and drops the body before it closes.
TEST_F(ServerTest, TooLargeBodySentWholeStillGets413NotAReset) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  const size_t size = 4 << 20;
  core::Status sent = client->send(
      post("/echo", "Content-Length: " + std::to_string(size) + "\r\n", std::string(size, 'x')));
  ASSERT_TRUE(sent.ok()) << sent.message();
  auto head = client->readHead();
  ASSERT_TRUE(head.ok()) << head.status().message();
  EXPECT_EQ(head->status, 413);
}

TEST_F(ServerTest, HandlerThatThrowsOrStaysSilentGets500) {
  auto client = connect();
  ASSERT_NE(client, nullptr);
  TestResponse thrown = roundTrip(*client, TestClient::get("/throw", token_));
  EXPECT_EQ(thrown.status, 500);
  EXPECT_NE(thrown.body.find("\"reason\":\"InternalError\""), std::string::npos);
  EXPECT_NE(thrown.body.find("boom"), std::string::npos);
  EXPECT_EQ(roundTrip(*client, TestClient::get("/silent", token_)).status, 500);
}

TEST_F(ServerTest, PlainHttpOnTheTlsPortIsTurnedAwayWithoutHarm) {
  auto reply = testing::plainExchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(reply.ok()) << reply.status().toString();
  EXPECT_NE(reply->find("400 Bad Request"), std::string::npos) << *reply;
  EXPECT_NE(reply->find("Client sent an HTTP request to an HTTPS server."), std::string::npos);
  auto client = connect();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(roundTrip(*client, TestClient::get("/hello", token_)).status, 200);
}

TEST_F(ServerTest, ClientThatDoesNotTrustTheCaFailsTheHandshake) {
  auto other = loadOrCreatePki(dir_ / "other-pki");
  ASSERT_TRUE(other.ok());
  auto client = TestClient::connect(server_->port(), other->ca_cert_pem);
  EXPECT_FALSE(client.ok());
}

// --- real kubectl (skipped where it is not installed) -------------------------------------

std::string findKubectl() {
  for (const char* path : {"/usr/bin/kubectl", "/usr/local/bin/kubectl"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

struct KubectlRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class KubectlTest : public ServerTest {
 protected:
  void SetUp() override {
    kubectl_ = findKubectl();
    if (kubectl_.empty()) GTEST_SKIP() << "kubectl is not installed";
    ServerTest::SetUp();
  }

  fs::path kubeconfig(const std::string& name, const std::string& ca_pem,
                      const std::string& token) {
    fs::path path = dir_ / name;
    EXPECT_TRUE(writeKubeconfig(path, {server_->url(), ca_pem, token}).ok());
    return path;
  }

  KubectlRun run(const fs::path& config, const std::string& args) {
    fs::path out = dir_ / "kubectl.out", err = dir_ / "kubectl.err";
    std::string command = "env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy " +
                          kubectl_ + " --kubeconfig '" + config.string() + "' --cache-dir '" +
                          (dir_ / "cache").string() + "' --request-timeout=30s " + args + " >'" +
                          out.string() + "' 2>'" + err.string() + "'";
    int rc = std::system(command.c_str());
    KubectlRun result;
    result.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    result.out = readFile(out).ok() ? *readFile(out) : "";
    result.err = readFile(err).ok() ? *readFile(err) : "";
    return result;
  }

  std::string kubectl_;
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST_F(KubectlTest, GetRawTrustsTheGeneratedCaAndSendsTheToken) {
  fs::path config = kubeconfig("kubeconfig", ca_pem_, token_);
  KubectlRun health = run(config, "get --raw /healthz");
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_EQ(trimmed(health.out), "ok");
  KubectlRun hello = run(config, "get --raw /hello");
  EXPECT_EQ(hello.exit_code, 0) << hello.err;
  EXPECT_EQ(trimmed(hello.out), "hello ringmaster-local-admin");
}

TEST_F(KubectlTest, WrongTokenFailsWithUnauthorized) {
  fs::path config = kubeconfig("wrong-token", ca_pem_, std::string(64, '0'));
  KubectlRun result = run(config, "get --raw /healthz");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("Unauthorized"), std::string::npos) << result.err;
}

TEST_F(KubectlTest, AnotherCaIsRejected) {
  auto other = loadOrCreatePki(dir_ / "other-pki");
  ASSERT_TRUE(other.ok());
  fs::path config = kubeconfig("other-ca", other->ca_cert_pem, token_);
  KubectlRun result = run(config, "get --raw /healthz");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("certificate"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace ringmaster::local
