// The libcurl ApiClient against a scripted HTTPS server (local/https): TLS with the local CA,
// bearer token, retries on 429/5xx, deadlines, and watch streams that end, break or get
// cancelled. Waits use condition variables with generous deadlines; nothing sleeps.

#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>

#include "local/https/pki.h"
#include "local/https/server.h"
#include "ringmaster/kube/client_factory.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/resource_client.h"
#include "ringmaster/kube/watch_event.h"

namespace ringmaster::kube {
namespace {

namespace fs = std::filesystem;
using local::Request;
using local::ResponseWriter;

const ResourceType kConfigMaps{"", "v1", "configmaps", true};
constexpr auto kWait = std::chrono::seconds(20);

std::string statusJson(int code, const std::string& reason, const std::string& message) {
  return encodeText(ApiStatus::failure(code, reason, message));
}

// Collects watch lines; tests wait for a count or for the close.
class RecordingSink : public WatchSink {
 public:
  void onLine(std::string_view line) override {
    std::lock_guard lock(mu_);
    lines_.emplace_back(line);
    cv_.notify_all();
  }
  void onClose(const core::Status& status) override {
    std::lock_guard lock(mu_);
    ++closes_;
    close_ = status;
    cv_.notify_all();
  }
  bool waitLines(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return lines_.size() >= n; });
  }
  bool waitClose() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return closes_ > 0; });
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  core::Status closeStatus() {
    std::lock_guard lock(mu_);
    return close_;
  }
  int closes() {
    std::lock_guard lock(mu_);
    return closes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  int closes_ = 0;
  core::Status close_;
};

class CurlClientTest : public ::testing::Test {
 public:
  using Script = std::function<void(const Request&, ResponseWriter&)>;

 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "rm-kube-client-XXXXXX").string();
    dir_ = ::mkdtemp(templ.data());
    auto pki = local::loadOrCreatePki(dir_ / "pki");
    ASSERT_TRUE(pki.ok()) << pki.status().toString();
    ca_pem_ = pki->ca_cert_pem;
    local::ServerOptions options;
    options.cert_pem = pki->server_cert_pem;
    options.key_pem = pki->server_key_pem;
    options.bearer_token = kToken;
    auto server = local::Server::start(
        options, [this](const Request& r, ResponseWriter& w) { handle(r, w); });
    ASSERT_TRUE(server.ok()) << server.status().toString();
    server_ = std::move(*server);
    config_.server = server_->url();
    config_.ca_pem = ca_pem_;
    config_.token = kToken;
    config_.source = "test kubeconfig";
  }

  void TearDown() override {
    if (server_) server_->stop();
    fs::remove_all(dir_);
  }

  // Each request takes the next scripted answer.
  void script(Script s) {
    std::lock_guard lock(mu_);
    scripts_.push_back(std::move(s));
  }

  std::unique_ptr<ApiClient> client(ClientOptions options = {}) {
    options.initial_backoff = std::chrono::milliseconds(1);
    auto c = makeApiClient(config_, options);
    EXPECT_TRUE(c.ok()) << c.status().toString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::vector<Request> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

  static constexpr const char* kToken = "test-token-0123456789";
  fs::path dir_;
  std::string ca_pem_;
  std::unique_ptr<local::Server> server_;
  KubeConfig config_;

 private:
  void handle(const Request& request, ResponseWriter& writer) {
    Script s;
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      if (!scripts_.empty()) {
        s = std::move(scripts_.front());
        scripts_.pop_front();
      }
    }
    if (!s) {
      (void)writer.send(500, "text/plain", "no script left");
      return;
    }
    s(request, writer);
  }

  std::mutex mu_;
  std::deque<Script> scripts_;
  std::vector<Request> requests_;
};

CurlClientTest::Script jsonAnswer(int code, std::string body, local::Headers extra = {}) {
  return [code, body, extra](const Request&, ResponseWriter& w) {
    local::Headers headers = extra;
    headers.set("Content-Type", "application/json");
    (void)w.send(code, headers, body);
  };
}

TEST_F(CurlClientTest, GetSendsTokenAndQueryAndDecodes) {
  script(jsonAnswer(200, R"({"metadata":{"name":"cfg","resourceVersion":"5"},"data":{"a":"b"}})"));
  auto api = client();
  ResourceClient<ConfigMap> configmaps(*api, kConfigMaps, "default");
  ApiResult<ConfigMap> cm = configmaps.get("cfg");
  ASSERT_TRUE(cm.ok()) << cm.status().toString();
  EXPECT_EQ(cm->data.at("a"), "b");
  ASSERT_EQ(requests().size(), 1u);
  EXPECT_EQ(requests()[0].path, "/api/v1/namespaces/default/configmaps/cfg");
  EXPECT_EQ(requests()[0].user, "ringmaster-local-admin");  // the bearer token was accepted

  script(jsonAnswer(200, R"({"metadata":{"resourceVersion":"9"},"items":[]})"));
  ListOptions options;
  options.label_selector = "app in (a,b)";
  ASSERT_TRUE(configmaps.list(options).ok());
  const Request listed = requests().at(1);
  const std::string* selector = listed.queryParam("labelSelector");
  ASSERT_NE(selector, nullptr);
  EXPECT_EQ(*selector, "app in (a,b)");
}

// Pooled handles keep their connection: sequential requests arrive on one, and a handle that
// sent a body forgets it (and its method) before the next request.
TEST_F(CurlClientTest, SequentialRequestsReuseOneConnectionAndForgetTheLastOnesMethod) {
  for (int i = 0; i < 5; ++i) script(jsonAnswer(200, R"({"metadata":{"name":"cfg"}})"));
  auto api = client();
  ApiRequest put;
  put.verb = Verb::kPut;
  put.path = "/api/v1/namespaces/default/configmaps/cfg";
  put.body = R"({"metadata":{"name":"cfg"}})";
  ApiRequest patch = put;
  patch.verb = Verb::kPatch;
  patch.body = R"({"data":{"a":"b"}})";
  patch.content_type = std::string(kMergePatchContentType);
  ApiRequest remove = put;
  remove.verb = Verb::kDelete;
  remove.body = R"({"propagationPolicy":"Background"})";
  ApiRequest get;
  get.path = put.path;
  for (const ApiRequest* r : {&put, &get, &patch, &remove, &get}) {
    core::Result<ApiResponse> response = api->request(*r);
    ASSERT_TRUE(response.ok()) << response.status().toString();
    EXPECT_EQ(response->status_code, 200);
    ASSERT_NE(response->header("content-type"), nullptr);
    EXPECT_EQ(*response->header("content-type"), "application/json");
  }
  const std::vector<Request> seen = requests();
  ASSERT_EQ(seen.size(), 5u);
  const std::vector<std::string> methods = {"PUT", "GET", "PATCH", "DELETE", "GET"};
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].method, methods[i]) << "request " << i;
    EXPECT_EQ(seen[i].remote_address, seen[0].remote_address) << "request " << i;
  }
  EXPECT_EQ(seen[0].body, put.body);
  EXPECT_EQ(seen[1].body, "");
  EXPECT_EQ(seen[2].body, patch.body);
  EXPECT_EQ(seen[2].headers.get("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(seen[3].body, remove.body);
  EXPECT_EQ(seen[4].body, "");
  EXPECT_FALSE(seen[4].headers.has("Content-Type"));
}

TEST_F(CurlClientTest, NotFoundAndConflictKeepTheServersStatus) {
  script(jsonAnswer(404, statusJson(404, "NotFound", "configmaps \"x\" not found")));
  script(jsonAnswer(409, statusJson(409, "Conflict", "the object has been modified")));
  auto api = client();
  ResourceClient<ConfigMap> configmaps(*api, kConfigMaps, "default");
  ApiResult<ConfigMap> missing = configmaps.get("x");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().isNotFound());
  EXPECT_EQ(missing.error().apiStatus().message, "configmaps \"x\" not found");
  ConfigMap cm;
  cm.metadata.name = "x";
  ApiResult<ConfigMap> stale = configmaps.update(cm);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(stale.error().isConflict());
  EXPECT_EQ(requests()[1].method, "PUT");
  EXPECT_EQ(requests()[1].headers.get("Content-Type"), "application/json");
}

TEST_F(CurlClientTest, RetriesTooManyRequestsAfterRetryAfter) {
  local::Headers retry;
  retry.set("Retry-After", "1");
  script(jsonAnswer(429, statusJson(429, "TooManyRequests", "slow down"), retry));
  script(jsonAnswer(200, R"({"metadata":{"name":"cfg"}})"));
  auto api = client();
  ResourceClient<ConfigMap> configmaps(*api, kConfigMaps, "default");
  ApiResult<ConfigMap> cm = configmaps.get("cfg");
  ASSERT_TRUE(cm.ok()) << cm.status().toString();
  EXPECT_EQ(requests().size(), 2u);
}

TEST_F(CurlClientTest, RetriesServerErrorsThenSucceeds) {
  script(jsonAnswer(500, statusJson(500, "InternalError", "etcd hiccup")));
  script(jsonAnswer(503, statusJson(503, "ServiceUnavailable", "starting")));
  script(jsonAnswer(200, R"({"metadata":{"name":"cfg"}})"));
  auto api = client();
  ApiResult<ConfigMap> cm = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").get("cfg");
  ASSERT_TRUE(cm.ok()) << cm.status().toString();
  EXPECT_EQ(requests().size(), 3u);
}

TEST_F(CurlClientTest, GivesUpAfterBoundedAttempts) {
  for (int i = 0; i < 3; ++i) script(jsonAnswer(500, statusJson(500, "InternalError", "down")));
  ClientOptions options;
  options.max_attempts = 3;
  auto api = client(options);
  ApiResult<ConfigMap> cm = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").get("cfg");
  ASSERT_FALSE(cm.ok());
  EXPECT_TRUE(cm.error().isServerError());
  EXPECT_EQ(requests().size(), 3u);
}

TEST_F(CurlClientTest, HonoursTheDeadline) {
  script([](const Request&, ResponseWriter& w) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, w.closedToken(), [] { return false; });  // never answers
  });
  auto api = client();
  ApiRequest request;
  request.path = "/api/v1/namespaces/default/configmaps/slow";
  request.timeout = std::chrono::milliseconds(300);
  core::Result<ApiResponse> response = api->request(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), core::Code::kTimeout) << response.status().toString();
}

TEST_F(CurlClientTest, RereadsTheTokenFileOnEveryRequest) {
  config_.token.clear();
  config_.token_file = (dir_ / "token").string();
  std::ofstream(config_.token_file) << kToken << "\n";
  script(jsonAnswer(200, R"({"metadata":{"name":"cfg"}})"));
  auto api = client();
  ResourceClient<ConfigMap> configmaps(*api, kConfigMaps, "default");
  ASSERT_TRUE(configmaps.get("cfg").ok());
  std::ofstream(config_.token_file) << "rotated-but-wrong\n";
  ApiResult<ConfigMap> denied = configmaps.get("cfg");  // the server's auth answers 401
  ASSERT_FALSE(denied.ok());
  EXPECT_TRUE(denied.error().isUnauthorized()) << denied.status().toString();
}

TEST_F(CurlClientTest, TrustsOnlyTheClusterCa) {
  auto other = local::loadOrCreatePki(dir_ / "other-pki");
  ASSERT_TRUE(other.ok());
  config_.ca_pem = other->ca_cert_pem;
  auto api = client();
  ApiResult<ConfigMap> cm = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").get("cfg");
  ASSERT_FALSE(cm.ok());
  EXPECT_TRUE(cm.error().isTransport());
  EXPECT_NE(cm.status().message().find("TLS handshake"), std::string::npos)
      << cm.status().message();
  EXPECT_NE(cm.status().message().find("test kubeconfig"), std::string::npos);
  EXPECT_TRUE(requests().empty());
}

TEST_F(CurlClientTest, RejectsConfigWithUnparsableCa) {
  config_.ca_pem = "not a certificate";
  auto api = makeApiClient(config_);
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("cluster CA"), std::string::npos);
}

// A chunked watch: lines split across chunks arrive whole, in order; a clean end closes ok.
TEST_F(CurlClientTest, WatchDeliversLinesAcrossChunks) {
  script([](const Request& r, ResponseWriter& w) {
    EXPECT_EQ(r.queryParam("watch") ? *r.queryParam("watch") : "", "true");
    local::Headers headers;
    headers.set("Content-Type", "application/json");
    if (!w.startStream(200, headers).ok()) return;
    (void)w.writeChunk(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                       "\n{\"type\":");
    (void)w.writeChunk(R"("MODIFIED","object":{"metadata":{"name":"a"}}})"
                       "\n");
    (void)w.endStream();
  });
  auto api = client();
  RecordingSink sink;
  WatchOptions options;
  options.timeout_seconds = 5;
  auto stream = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").watch(options, sink);
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  ASSERT_TRUE(sink.waitClose());
  EXPECT_TRUE(sink.closeStatus().ok()) << sink.closeStatus().toString();
  ASSERT_EQ(sink.lines().size(), 2u);
  auto first = decodeText<WatchEvent<ConfigMap>>(sink.lines()[0]);
  auto second = decodeText<WatchEvent<ConfigMap>>(sink.lines()[1]);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->type, WatchEventType::kAdded);
  EXPECT_EQ(second->type, WatchEventType::kModified);
}

TEST_F(CurlClientTest, WatchRefusedWithGoneIsAnApiError) {
  script(jsonAnswer(410, statusJson(410, "Expired", "too old resource version: 1 (50)")));
  auto api = client();
  RecordingSink sink;
  auto stream = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").watch({}, sink);
  ASSERT_FALSE(stream.ok());
  EXPECT_TRUE(stream.error().isGone());
  EXPECT_EQ(stream.error().reason(), "Expired");
  EXPECT_TRUE(sink.lines().empty());
  EXPECT_EQ(sink.closes(), 0);
}

TEST_F(CurlClientTest, DroppedConnectionMidStreamClosesWithAnError) {
  script([](const Request&, ResponseWriter& w) {
    if (!w.startStream(200, {}).ok()) return;
    (void)w.writeChunk("{\"type\":\"ADDED\",\"object\":{}}\n{\"partial\":");
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, w.closedToken(), [] { return false; });
  });
  auto api = client();
  RecordingSink sink;
  auto stream = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").watch({}, sink);
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  ASSERT_TRUE(sink.waitLines(1));
  server_->stop();  // the connection breaks without the final chunk
  ASSERT_TRUE(sink.waitClose());
  EXPECT_FALSE(sink.closeStatus().ok());
  EXPECT_EQ(sink.lines().size(), 1u);  // the partial line is not delivered
}

// A watch whose server falls silent for longer than the request's timeout ends with a timeout.
TEST_F(CurlClientTest, ASilentWatchClosesWithATimeout) {
  script([](const Request&, ResponseWriter& w) {
    if (!w.startStream(200, {}).ok()) return;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, w.closedToken(), [] { return false; });  // headers, then nothing
  });
  auto api = client();
  RecordingSink sink;
  ApiRequest request;
  request.path = "/api/v1/namespaces/default/configmaps";
  request.query = {{"watch", "true"}};
  request.timeout = std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  auto stream = api->watch(request, sink);
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  ASSERT_TRUE(sink.waitClose());
  EXPECT_EQ(sink.closeStatus().code(), core::Code::kTimeout) << sink.closeStatus().toString();
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(300));
  EXPECT_TRUE(sink.lines().empty());
}

TEST_F(CurlClientTest, CancelledWatchCallsTheSinkNoMore) {
  std::mutex mu;
  std::condition_variable cv;
  bool handler_done = false;
  script([&](const Request&, ResponseWriter& w) {
    if (w.startStream(200, {}).ok()) {
      (void)w.writeChunk("{\"type\":\"ADDED\",\"object\":{}}\n");
      std::mutex m;
      std::condition_variable_any wait;
      std::unique_lock lock(m);
      wait.wait(lock, w.closedToken(), [] { return false; });  // until the client goes away
    }
    std::lock_guard lock(mu);
    handler_done = true;
    cv.notify_all();
  });
  auto api = client();
  RecordingSink sink;
  auto stream = ResourceClient<ConfigMap>(*api, kConfigMaps, "default").watch({}, sink);
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  ASSERT_TRUE(sink.waitLines(1));
  (*stream)->cancel();
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kWait, [&] { return handler_done; }))
        << "the server never saw the client go away";
  }
  EXPECT_EQ(sink.closes(), 0);
  EXPECT_EQ(sink.lines().size(), 1u);
}

}  // namespace
}  // namespace ringmaster::kube
