// Watch and client robustness against the real stack with injected faults: lib/kube's
// libcurl transport and Reflector talk TLS to the embedded API server through
//   - a TCP proxy that drops every connection mid-stream, or freezes them (the watch falls
//     behind the server's bounded history, so its next watch meets 410 Gone), and
//   - a front HTTPS server that answers a seeded share of requests with 429 (Retry-After) or
//     500 before handing the rest to the API server.
// A writer meanwhile creates, updates and deletes ConfigMaps on a clean connection. When the
// faults stop, the reflector's cache must converge to exactly what the server lists.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "local/apiserver/api_server.h"
#include "local/https/pki.h"
#include "local/https/server.h"
#include "process.h"
#include "ringmaster/kube/client_factory.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/kubeconfig.h"
#include "ringmaster/kube/reflector.h"
#include "ringmaster/kube/resource_client.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
using kube::ConfigMap;

const kube::ResourceType kConfigMaps{"", "v1", "configmaps", true};

// Forwards TCP connections to 127.0.0.1:target. dropAll() closes every open connection (both
// sides see a reset mid-stream); while frozen no byte moves toward the client.
class FlakyProxy {
 public:
  explicit FlakyProxy(int target_port) : target_port_(target_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 64) != 0) {
      ADD_FAILURE() << "proxy: cannot listen";
      return;
    }
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::jthread([this](std::stop_token stop) { acceptLoop(stop); });
  }
  ~FlakyProxy() {
    acceptor_.request_stop();
    acceptor_.join();
    dropAll();
    std::vector<std::jthread> pumps;
    {
      std::lock_guard lock(mu_);
      pumps.swap(pumps_);  // joined below, outside the lock each pump takes on its way out
    }
    for (auto& t : pumps) t.request_stop();
    pumps.clear();
    ::close(listener_);
  }

  int port() const { return port_; }
  void setFrozen(bool frozen) { frozen_ = frozen; }
  // Closes every connection open now; returns how many there were.
  int dropAll() {
    std::lock_guard lock(mu_);
    int n = 0;
    for (auto& [client, server] : open_) {
      ::shutdown(client, SHUT_RDWR);
      ::shutdown(server, SHUT_RDWR);
      ++n;
    }
    drops_ += n;
    return n;
  }
  int drops() const { return drops_; }

 private:
  void acceptLoop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(target_port_));
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      std::lock_guard lock(mu_);
      open_.emplace(client, server);
      pumps_.emplace_back([this, client, server](std::stop_token s) { pump(s, client, server); });
    }
  }

  void pump(std::stop_token stop, int client, int server) {
    char buf[16384];
    while (!stop.stop_requested()) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, frozen_ ? short(0) : short(POLLIN), 0}};
      if (::poll(p, 2, 50) < 0) break;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (p[i].revents == 0) continue;
        ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
        if (n <= 0) {
          done = true;
          break;
        }
        int to = i == 0 ? server : client;
        for (ssize_t off = 0; off < n;) {
          ssize_t w = ::send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) {
            done = true;
            break;
          }
          off += w;
        }
      }
      if (done) break;
    }
    std::lock_guard lock(mu_);
    open_.erase(client);
    ::close(client);
    ::close(server);
  }

  int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> frozen_{false};
  std::atomic<int> drops_{0};
  std::mutex mu_;
  std::map<int, int> open_;  // client fd -> server fd
  std::vector<std::jthread> pumps_;
  std::jthread acceptor_;
};

struct FaultCounts {
  std::atomic<int> too_many{0}, server_errors{0}, passed{0};
};

class WatchFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    local::ApiServerOptions options;
    options.data_dir = dir_.path();
    options.store.history_length = 40;  // small, so a frozen watch falls out of it
    auto server = local::ApiServer::start(options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    api_ = std::move(server).value();

    auto pki = local::loadOrCreatePki(dir_.path());
    ASSERT_TRUE(pki.ok()) << pki.status().message();
    auto token = local::loadOrCreateToken(std::filesystem::path(dir_.path()) / "token");
    ASSERT_TRUE(token.ok()) << token.status().message();
    local::ServerOptions front_options;
    front_options.cert_pem = pki->server_cert_pem;
    front_options.key_pem = pki->server_key_pem;
    front_options.bearer_token = *token;
    auto front = local::Server::start(
        front_options, [this](const local::Request& request, local::ResponseWriter& writer) {
          injectOrPass(request, writer);
        });
    ASSERT_TRUE(front.ok()) << front.status().message();
    front_ = std::move(front).value();
    proxy_ = std::make_unique<FlakyProxy>(front_->port());

    auto config = kube::loadKubeConfigFile(api_->kubeconfigPath());
    ASSERT_TRUE(config.ok()) << config.status().message();
    kube::KubeConfig clean = *config;
    kube::KubeConfig faulty = *config;
    faulty.server = "https://127.0.0.1:" + std::to_string(proxy_->port());
    kube::ClientOptions retrying;
    retrying.max_attempts = 10;
    retrying.initial_backoff = 10ms;
    retrying.max_backoff = 200ms;
    auto faulty_client = kube::makeApiClient(faulty, retrying);
    ASSERT_TRUE(faulty_client.ok()) << faulty_client.status().message();
    faulty_client_ = std::move(faulty_client).value();
    auto clean_client = kube::makeApiClient(clean);
    ASSERT_TRUE(clean_client.ok()) << clean_client.status().message();
    clean_client_ = std::move(clean_client).value();
  }

  void TearDown() override {
    proxy_.reset();
    if (front_) front_->stop();
    if (api_) (void)api_->stop();
  }

  // While faults are on, one request in five is answered 429 (Retry-After: 1) and another one
  // in five 500; the rest go to the API server.
  void injectOrPass(const local::Request& request, local::ResponseWriter& writer) {
    const int n = ++requests_;
    const int roll = faults_on_ ? n % 5 : -1;
    if (roll == 1) {
      ++counts_.too_many;
      local::Headers headers;
      headers.set("Content-Type", "application/json");
      headers.set("Retry-After", "1");
      (void)writer.send(429, std::move(headers),
                        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                        R"("message":"injected: too many requests","reason":"TooManyRequests",)"
                        R"("code":429})");
      return;
    }
    if (roll == 3) {
      ++counts_.server_errors;
      (void)writer.send(500, "application/json",
                        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                        R"("message":"injected: internal error","reason":"InternalError",)"
                        R"("code":500})");
      return;
    }
    ++counts_.passed;
    if (request.raw_query.find("watch=") != std::string::npos) ++watches_started_;
    api_->handle(request, writer);
  }

  // Server truth: name -> data["v"].
  std::map<std::string, std::string> serverState() {
    kube::ResourceClient<ConfigMap> client(*clean_client_, kConfigMaps, "default");
    auto list = client.list();
    EXPECT_TRUE(list.ok()) << list.status().message();
    std::map<std::string, std::string> out;
    if (list.ok())
      for (const auto& cm : list->items)
        out[cm.metadata.name] = cm.data.count("v") ? cm.data.at("v") : "";
    return out;
  }

  static std::map<std::string, std::string> cacheState(const kube::Store<ConfigMap>& store) {
    std::map<std::string, std::string> out;
    for (const auto& cm : store.list())
      out[cm->metadata.name] = cm->data.count("v") ? cm->data.at("v") : "";
    return out;
  }

  // One random create / update / delete among 12 names, on the clean connection.
  void writeOnce(std::mt19937& rng, int serial) {
    kube::ResourceClient<ConfigMap> client(*clean_client_, kConfigMaps, "default");
    const std::string name = "cm-" + std::to_string(rng() % 12);
    auto current = client.get(name);
    if (!current.ok()) {
      ConfigMap cm;
      cm.metadata.name = name;
      cm.metadata.namespace_name = "default";
      cm.data["v"] = std::to_string(serial);
      auto created = client.create(cm);
      EXPECT_TRUE(created.ok()) << created.status().message();
    } else if (rng() % 4 == 0) {
      auto removed = client.remove(name);
      EXPECT_TRUE(removed.ok()) << removed.status().message();
    } else {
      ConfigMap cm = *current;
      cm.data["v"] = std::to_string(serial);
      auto updated = client.update(cm);
      EXPECT_TRUE(updated.ok()) << updated.status().message();
    }
  }

  testutil::TempDir dir_;
  std::unique_ptr<local::ApiServer> api_;
  std::unique_ptr<local::Server> front_;
  std::unique_ptr<FlakyProxy> proxy_;
  std::unique_ptr<kube::ApiClient> faulty_client_, clean_client_;
  std::atomic<bool> faults_on_{true};
  std::atomic<int> requests_{0};
  std::atomic<int> watches_started_{0};
  FaultCounts counts_;
};

TEST_F(WatchFaultTest, ReflectorConvergesThroughDropsExpiredVersionsAndErrorAnswers) {
  std::atomic<int> relists{0};
  kube::Reflector<ConfigMap>::Handler notify;
  notify.relisted = [&](std::vector<ConfigMap>, std::vector<kube::RawObject>) { ++relists; };
  kube::Reflector<ConfigMap>::Options options;
  options.poll = 100ms;
  options.initial_backoff = 20ms;
  options.max_backoff = 300ms;
  options.seed = 7;
  // Waits until the reflector has a watch established after the last cut (so the next cut lands
  // mid-stream, not mid-handshake).
  int watches_seen = 0;
  auto waitForWatch = [&] {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (watches_started_.load() <= watches_seen && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(5ms);
    watches_seen = watches_started_.load();
    return std::chrono::steady_clock::now() < deadline;
  };
  kube::Reflector<ConfigMap> reflector(
      kube::ResourceClient<ConfigMap>(*faulty_client_, kConfigMaps, "default", 10s), options,
      notify);
  auto cache = reflector.store();
  std::jthread runner([&](std::stop_token stop) { reflector.run(stop); });

  std::mt19937 rng(42);
  int serial = 0;
  // Phase 1: writes while connections drop every few writes and 20% of answers are errors.
  for (int i = 0; i < 150; ++i) {
    writeOnce(rng, ++serial);
    if (i % 15 == 7) {
      ASSERT_TRUE(waitForWatch()) << "the reflector never watched again";
      proxy_->dropAll();
    }
  }
  // Phase 2: the watch is frozen while more than the kept history is written, then cut: its
  // next watch from the old resourceVersion is answered 410 Gone and it must relist.
  const int relists_before_freeze = relists.load();
  ASSERT_TRUE(waitForWatch());
  proxy_->setFrozen(true);
  for (int i = 0; i < 100; ++i) writeOnce(rng, ++serial);
  proxy_->dropAll();
  proxy_->setFrozen(false);
  for (int i = 0; i < 30; ++i) writeOnce(rng, ++serial);

  // Faults off: the cache must converge to the server's state.
  faults_on_ = false;
  const std::map<std::string, std::string> truth = serverState();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (cacheState(*cache) != truth && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  runner.request_stop();
  runner.join();

  EXPECT_EQ(cacheState(*cache), truth);
  EXPECT_FALSE(truth.empty());
  // The faults really happened (a test that injected nothing would prove nothing).
  EXPECT_GE(proxy_->drops(), 10);
  EXPECT_GT(counts_.too_many.load(), 0);
  EXPECT_GT(counts_.server_errors.load(), 0)
      << requests_.load() << " requests, " << counts_.passed.load() << " passed";
  EXPECT_GT(relists.load(), relists_before_freeze) << "no relist after the expired watch";
}

}  // namespace
}  // namespace ringmaster
