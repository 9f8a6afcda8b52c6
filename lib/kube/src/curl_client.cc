// The libcurl transport.
// - A request runs on the caller's thread, on an easy handle borrowed from a pool: the handle
//   keeps its connection (and TLS session) for the next request, and no other thread is woken to
//   carry the exchange, which is what made a thread-pool client spend most of its CPU switching.
// - Each watch has a thread of its own driving one easy handle through a multi handle, so that
//   cancel() wakes it at once (curl_multi_wakeup) and the connection closes then.
// - TLS trusts the cluster CA only: each new connection's SSL_CTX gets the store parsed from the
//   kubeconfig in place of the system one, and TLS failures are turned into sentences.

#include "curl_client.h"

#include <curl/curl.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ringmaster/core/backoff.h"
#include "ringmaster/core/log.h"
#include "ringmaster/http/curl_support.h"

namespace ringmaster::kube::internal {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The kubeconfig's certificates, parsed once; every new connection takes references to them.
class TlsMaterial {
 public:
  TlsMaterial() = default;
  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;
  ~TlsMaterial() {
    if (ca_ != nullptr) X509_STORE_free(ca_);
    if (cert_ != nullptr) X509_free(cert_);
    for (X509* c : chain_) X509_free(c);
    if (key_ != nullptr) EVP_PKEY_free(key_);
  }

  static core::Result<std::shared_ptr<TlsMaterial>> parse(const KubeConfig& config) {
    auto tls = std::make_shared<TlsMaterial>();
    if (!config.ca_pem.empty()) {
      std::vector<X509*> certs = readCertificates(config.ca_pem);
      if (certs.empty()) {
        return core::invalidArgument(config.source +
                                     ": cluster CA: no PEM certificate in the certificate "
                                     "authority data");
      }
      tls->ca_ = X509_STORE_new();
      for (X509* c : certs) {
        X509_STORE_add_cert(tls->ca_, c);
        X509_free(c);
      }
    }
    if (!config.client_cert_pem.empty()) {
      std::vector<X509*> certs = readCertificates(config.client_cert_pem);
      if (certs.empty()) {
        return core::invalidArgument(config.source +
                                     ": client certificate: no PEM certificate in it");
      }
      tls->cert_ = certs.front();
      tls->chain_.assign(certs.begin() + 1, certs.end());
      BIO* bio = BIO_new_mem_buf(config.client_key_pem.data(),
                                 static_cast<int>(config.client_key_pem.size()));
      tls->key_ =
          bio == nullptr ? nullptr : PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      if (tls->key_ == nullptr) {
        return core::invalidArgument(config.source + ": client key: no PEM private key in it");
      }
      if (X509_check_private_key(tls->cert_, tls->key_) != 1) {
        return core::invalidArgument(config.source +
                                     ": client key: it does not match the client certificate");
      }
    }
    return tls;
  }

  bool hasCa() const { return ca_ != nullptr; }

  // For CURLOPT_SSL_CTX_FUNCTION: runs for each new connection, before its handshake.
  static CURLcode apply(CURL*, void* ssl_ctx, void* self) {
    const auto* tls = static_cast<const TlsMaterial*>(self);
    SSL_CTX* ctx = static_cast<SSL_CTX*>(ssl_ctx);
    if (tls->ca_ != nullptr) {
      X509_STORE_up_ref(tls->ca_);
      SSL_CTX_set_cert_store(ctx, tls->ca_);  // frees whatever store the context had
    }
    if (tls->cert_ != nullptr) {
      if (SSL_CTX_use_certificate(ctx, tls->cert_) != 1) return CURLE_SSL_CERTPROBLEM;
      for (X509* c : tls->chain_) {
        if (SSL_CTX_add1_chain_cert(ctx, c) != 1) return CURLE_SSL_CERTPROBLEM;
      }
      if (SSL_CTX_use_PrivateKey(ctx, tls->key_) != 1) return CURLE_SSL_CERTPROBLEM;
    }
    return CURLE_OK;
  }

 private:
  static std::vector<X509*> readCertificates(const std::string& pem) {
    std::vector<X509*> out;
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    if (bio == nullptr) return out;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.push_back(cert);
    BIO_free(bio);
    return out;
  }

  X509_STORE* ca_ = nullptr;
  X509* cert_ = nullptr;
  std::vector<X509*> chain_;  // intermediates after the leaf
  EVP_PKEY* key_ = nullptr;
};

// What every transfer needs from the client. Watch threads keep a copy of their own, so that
// nothing they read belongs to the client.
struct Endpoint {
  std::string server;  // "https://host:port", no trailing '/'
  std::string source;  // the kubeconfig, for messages
  std::string user_agent;
  std::shared_ptr<TlsMaterial> tls;
};

// A failed transfer in words; TLS failures name the cluster CA the server was checked against.
core::Status transferError(CURL* curl, CURLcode code, const char* detail, const Endpoint& endpoint,
                           const std::string& what) {
  const std::string cause = http::curlFailure(curl, code, detail);
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
      return core::unavailable("TLS handshake with " + endpoint.server + " failed (" + cause +
                               "): the server certificate is not signed by the cluster CA from " +
                               endpoint.source +
                               ", has expired, or does not name this host (TLS verification is "
                               "never skipped)");
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
      return core::unavailable("TLS handshake with " + endpoint.server + " failed (" + cause +
                               "): the connection was cut during the handshake, or the server "
                               "refused the client certificate from " +
                               endpoint.source);
    case CURLE_OPERATION_TIMEDOUT:
      return core::timeoutError(what + ": " + cause);
    case CURLE_URL_MALFORMAT:
      return core::invalidArgument(what + ": " + cause);
    default:
      return core::unavailable(endpoint.server + ": " + what + ": " + cause);
  }
}

std::string verbLine(const ApiRequest& request) {
  return std::string(verbName(request.verb)) + " " + request.path;
}

// Response headers, gathered by CURLOPT_HEADERFUNCTION. Each status line starts a new set (a
// "100 Continue" comes before the real answer); the blank line ends one.
struct HeaderSink {
  HeaderList headers;
  CURL* curl = nullptr;
  std::function<void(long)> on_complete;  // the final answer's headers are in (code >= 200)

  static size_t write(char* data, size_t size, size_t count, void* self) {
    auto* sink = static_cast<HeaderSink*>(self);
    const size_t n = size * count;
    std::string_view line(data, n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.starts_with("HTTP/")) {
      sink->headers.clear();
    } else if (line.empty()) {
      long code = 0;
      curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &code);
      if (code >= 200 && sink->on_complete) sink->on_complete(code);
    } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
        value.remove_prefix(1);
      }
      sink->headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    }
    return n;
  }
};

size_t appendBody(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

using SlistPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

// The request's URL, headers and body on `curl` (freshly reset), plus what every transfer sets.
core::Result<SlistPtr> prepareTransfer(CURL* curl, const Endpoint& endpoint,
                                       const KubeConfig& config, const ApiRequest& request) {
  std::string url = endpoint.server + request.path;
  char sep = '?';
  for (const auto& [key, value] : request.query) {
    char* k = curl_easy_escape(curl, key.data(), static_cast<int>(key.size()));
    char* v = curl_easy_escape(curl, value.data(), static_cast<int>(value.size()));
    if (k == nullptr || v == nullptr) {
      curl_free(k);
      curl_free(v);
      return core::internalError("out of memory encoding the query");
    }
    url += sep;
    url += k;
    url += '=';
    url += v;
    curl_free(k);
    curl_free(v);
    sep = '&';
  }
  if (curl_easy_setopt(curl, CURLOPT_URL, url.c_str()) != CURLE_OK) {
    return core::invalidArgument("invalid request URL " + url);
  }
  RM_ASSIGN_OR_RETURN(std::string token, config.bearerToken());
  SlistPtr headers(nullptr, curl_slist_free_all);
  auto add = [&](const std::string& header) {
    if (curl_slist* more = curl_slist_append(headers.get(), header.c_str())) {
      headers.release();
      headers.reset(more);
    }
  };
  add("Accept: application/json");
  add("Expect:");  // no 100-continue round trip before large bodies
  if (!token.empty()) add("Authorization: Bearer " + token);
  const bool has_body = !request.body.empty() || request.verb == Verb::kPost ||
                        request.verb == Verb::kPut || request.verb == Verb::kPatch;
  if (has_body) {
    add("Content-Type: " +
        (request.content_type.empty() ? std::string(kJsonContentType) : request.content_type));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  }
  if (request.verb != Verb::kGet && request.verb != Verb::kPost) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string(verbName(request.verb)).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_USERAGENT, endpoint.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM from resolver timeouts in threads
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (endpoint.tls->hasCa()) {
    // The cluster CA replaces the system store in the SSL_CTX callback: do not load the
    // system bundle for every new connection only to discard it.
    curl_easy_setopt(curl, CURLOPT_CAINFO, nullptr);
    curl_easy_setopt(curl, CURLOPT_CAPATH, nullptr);
  }
  curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, &TlsMaterial::apply);
  curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, endpoint.tls.get());
  return headers;
}

// Easy handles kept between requests, each with its open connection.
class HandlePool {
 public:
  HandlePool() = default;
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;
  ~HandlePool() {
    for (CURL* c : idle_) curl_easy_cleanup(c);
  }
  CURL* take() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        CURL* c = idle_.back();
        idle_.pop_back();
        return c;
      }
    }
    return curl_easy_init();
  }
  void give(CURL* c) {
    std::lock_guard lock(mu_);
    idle_.push_back(c);
  }

 private:
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

// Watch state shared by the WatchStream and its transfer thread. Every sink call happens under
// mu_, so once cancel() has taken the lock no call follows.
class WatchState {
 public:
  explicit WatchState(WatchSink& sink) : sink_(sink) {}
  WatchState(const WatchState&) = delete;
  WatchState& operator=(const WatchState&) = delete;
  ~WatchState() {
    if (multi_ != nullptr) curl_multi_cleanup(multi_);
  }

  void feed(const char* data, size_t n) {
    std::lock_guard lock(mu_);
    if (cancelled_) return;
    buffer_.append(data, n);
    if (accepted_) deliverLines();
  }
  // The server answered 2xx: lines flow to the sink from now on.
  void accept() {
    std::lock_guard lock(mu_);
    accepted_ = true;
    if (cancelled_) return;
    deliverLines();
    if (finished_) closeSink();
  }
  void finish(core::Status status) {
    {
      std::lock_guard lock(mu_);
      finished_ = true;
      close_status_ = std::move(status);
      if (accepted_ && !cancelled_) {
        deliverLines();
        closeSink();
      }
    }
    cv_.notify_all();
  }
  void cancel() {
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
    }
    cancel_requested_.store(true);
    curl_multi_wakeup(multi_);  // thread-safe; the multi handle lives as long as this state
  }
  bool cancelRequested() const { return cancel_requested_.load(); }
  // For a refused watch: the error body once complete, or nullopt at the deadline.
  std::optional<std::string> waitBody(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return finished_; })) return std::nullopt;
    return buffer_;
  }
  CURLM* multi() { return multi_; }

 private:
  void deliverLines() {
    size_t start = 0;
    for (size_t nl; (nl = buffer_.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(buffer_.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty()) sink_.onLine(line);
    }
    buffer_.erase(0, start);
  }
  void closeSink() {
    if (close_status_.ok() && !buffer_.empty()) sink_.onLine(buffer_);  // unterminated last line
    buffer_.clear();
    if (!closed_) sink_.onClose(close_status_);
    closed_ = true;
  }

  WatchSink& sink_;
  CURLM* multi_ = curl_multi_init();
  std::atomic<bool> cancel_requested_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string buffer_;
  bool accepted_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
  bool closed_ = false;
  core::Status close_status_;
};

// One watch transfer, run on its own thread until the stream ends, breaks, falls silent for
// longer than `silence`, or is cancelled.
class WatchTransfer {
 public:
  WatchTransfer(std::shared_ptr<WatchState> state, Endpoint endpoint, std::string what,
                milliseconds silence)
      : state_(std::move(state)),
        endpoint_(std::move(endpoint)),
        what_(std::move(what)),
        silence_(silence) {}

  // Sets up the transfer; the promise learns the answer's code (or why none came).
  core::Status prepare(const KubeConfig& config, const ApiRequest& request,
                       milliseconds head_timeout) {
    curl_ = curl_easy_init();
    if (curl_ == nullptr || state_->multi() == nullptr) {
      return core::internalError(what_ + ": cannot create a libcurl handle");
    }
    core::Result<SlistPtr> headers = prepareTransfer(curl_, endpoint_, config, request);
    if (!headers.ok()) return headers.status();
    request_headers_ = std::move(*headers);
    header_sink_.curl = curl_;
    header_sink_.on_complete = [this](long code) {
      if (!head_sent_) {
        head_sent_ = true;
        head_.set_value(code);
      }
    };
    curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, &HeaderSink::write);
    curl_easy_setopt(curl_, CURLOPT_HEADERDATA, &header_sink_);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &WatchTransfer::onBody);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, detail_);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(head_timeout.count()));
    curl_multi_add_handle(state_->multi(), curl_);
    return core::Status::Ok();
  }

  std::future<core::Result<long>> head() { return head_.get_future(); }

  void run() {
    last_data_ = Clock::now();
    core::Status end = core::cancelled("watch cancelled");
    while (!state_->cancelRequested()) {
      int running = 0;
      if (CURLMcode mc = curl_multi_perform(state_->multi(), &running); mc != CURLM_OK) {
        end = core::internalError(what_ + ": " + curl_multi_strerror(mc));
        break;
      }
      if (running == 0) {
        int left = 0;
        CURLcode result = CURLE_OK;
        while (CURLMsg* msg = curl_multi_info_read(state_->multi(), &left)) {
          if (msg->msg == CURLMSG_DONE) result = msg->data.result;
        }
        end = result == CURLE_OK ? core::Status::Ok()
                                 : transferError(curl_, result, detail_, endpoint_, what_);
        break;
      }
      const auto quiet = Clock::now() - last_data_;
      if (quiet >= silence_) {
        end = core::timeoutError(what_ + ": nothing received for " +
                                 std::to_string(silence_.count()) + " ms");
        break;
      }
      const auto wait = std::min<milliseconds>(
          std::chrono::duration_cast<milliseconds>(silence_ - quiet) + milliseconds(1),
          milliseconds(1000));
      curl_multi_poll(state_->multi(), nullptr, 0, static_cast<int>(wait.count()), nullptr);
    }
    if (!head_sent_) {
      head_sent_ = true;
      head_.set_value(end.ok() ? core::unavailable(what_ + ": the server closed the connection "
                                                           "without an answer")
                               : end);
    }
    // Removing the handle closes its connection: the server sees the watcher go away now.
    curl_multi_remove_handle(state_->multi(), curl_);
    curl_easy_cleanup(curl_);
    curl_ = nullptr;
    state_->finish(std::move(end));
  }

 private:
  static size_t onBody(char* data, size_t size, size_t count, void* self) {
    auto* transfer = static_cast<WatchTransfer*>(self);
    transfer->last_data_ = Clock::now();
    transfer->state_->feed(data, size * count);
    return size * count;
  }

  std::shared_ptr<WatchState> state_;
  Endpoint endpoint_;
  std::string what_;
  milliseconds silence_;
  CURL* curl_ = nullptr;
  SlistPtr request_headers_{nullptr, curl_slist_free_all};
  HeaderSink header_sink_;
  char detail_[CURL_ERROR_SIZE] = {};
  std::promise<core::Result<long>> head_;
  bool head_sent_ = false;
  Clock::time_point last_data_;
};

class CurlWatchStream : public WatchStream {
 public:
  CurlWatchStream(std::shared_ptr<WatchState> state, std::thread thread)
      : state_(std::move(state)), thread_(std::move(thread)) {}
  ~CurlWatchStream() override {
    cancel();
    // A sink that drops its own stream runs on the transfer thread: that thread ends by itself.
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else if (thread_.joinable()) {
      thread_.join();
    }
  }
  void cancel() override { state_->cancel(); }

 private:
  std::shared_ptr<WatchState> state_;
  std::thread thread_;
};

class CurlClient : public ApiClient {
 public:
  CurlClient(KubeConfig config, ClientOptions options, Endpoint endpoint)
      : config_(std::move(config)), options_(std::move(options)), endpoint_(std::move(endpoint)) {}

  const std::string& defaultNamespace() const override { return config_.namespace_name; }

  core::Result<ApiResponse> request(const ApiRequest& request) override {
    const Clock::time_point deadline = Clock::now() + request.timeout;
    core::Backoff backoff({options_.initial_backoff, options_.max_backoff, 0.5});
    for (int attempt = 1;; ++attempt) {
      core::Result<ApiResponse> response = sendOnce(request, deadline);
      if (!response.ok()) return response;
      const int code = response->status_code;
      const bool retryable = code == 429 || code >= 500;
      if (!retryable || attempt >= options_.max_attempts) return response;
      milliseconds wait = backoff.next();
      if (const std::string* retry_after = response->header("Retry-After")) {
        try {
          wait = std::max<milliseconds>(wait, std::chrono::seconds(std::stoi(*retry_after)));
        } catch (const std::exception&) {  // an HTTP date: keep the backoff
        }
      }
      if (Clock::now() + wait >= deadline) return response;  // no time left for another try
      RM_LOG(DEBUG, KUBE) << verbLine(request) << ": HTTP " << code << ", retry " << attempt
                          << " in " << wait.count() << " ms";
      std::this_thread::sleep_for(wait);
    }
  }

  ApiResult<std::unique_ptr<WatchStream>> watch(const ApiRequest& request,
                                                WatchSink& sink) override {
    const std::string what = "watch " + request.path;
    auto state = std::make_shared<WatchState>(sink);
    const milliseconds head_timeout =
        std::min<milliseconds>(request.timeout, std::chrono::minutes(1));
    auto transfer = std::make_shared<WatchTransfer>(state, endpoint_, what, request.timeout);
    if (core::Status s = transfer->prepare(config_, request, head_timeout); !s.ok()) {
      return ApiError::fromStatus(s.withContext(what));
    }
    std::future<core::Result<long>> head = transfer->head();
    std::thread thread([transfer] { transfer->run(); });
    auto stream = std::make_unique<CurlWatchStream>(state, std::move(thread));

    const Clock::time_point head_deadline = Clock::now() + head_timeout;
    if (head.wait_until(head_deadline) != std::future_status::ready) {
      return ApiError::fromStatus(core::timeoutError(what + ": no response headers"));
    }
    core::Result<long> code = head.get();
    if (!code.ok()) return ApiError::fromStatus(code.status());
    if (*code < 200 || *code > 299) {
      ApiResponse refused;
      refused.status_code = static_cast<int>(*code);
      if (std::optional<std::string> body = state->waitBody(head_deadline)) {
        refused.body = std::move(*body);
      }
      return ApiError::fromResponse(what, refused);
    }
    state->accept();
    return std::unique_ptr<WatchStream>(std::move(stream));
  }

 private:
  core::Result<ApiResponse> sendOnce(const ApiRequest& request, Clock::time_point deadline) {
    const std::string what = verbLine(request);
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left <= milliseconds(0)) return core::timeoutError(what + ": deadline passed");
    CURL* curl = pool_.take();
    if (curl == nullptr) return core::internalError(what + ": cannot create a libcurl handle");
    struct GiveBack {
      HandlePool& pool;
      CURL* curl;
      ~GiveBack() { pool.give(curl); }
    } give_back{pool_, curl};
    curl_easy_reset(curl);  // keeps the connection, the DNS cache and the TLS session
    RM_ASSIGN_OR_RETURN(SlistPtr headers, prepareTransfer(curl, endpoint_, config_, request));
    ApiResponse response;
    HeaderSink header_sink;
    header_sink.curl = curl;
    char detail[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &HeaderSink::write);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &header_sink);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &appendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
    const CURLcode result = curl_easy_perform(curl);
    if (result == CURLE_OPERATION_TIMEDOUT) {
      return core::timeoutError(what + ": no answer within " +
                                std::to_string(request.timeout.count()) + " ms");
    }
    if (result != CURLE_OK) return transferError(curl, result, detail, endpoint_, what);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    response.status_code = static_cast<int>(code);
    response.headers = std::move(header_sink.headers);
    return response;
  }

  KubeConfig config_;
  ClientOptions options_;
  Endpoint endpoint_;
  HandlePool pool_;
};

}  // namespace

core::Result<std::unique_ptr<ApiClient>> makeCurlClient(const KubeConfig& config,
                                                        const ClientOptions& options) {
  http::initCurl();
  if (config.server.rfind("https://", 0) != 0) {
    return core::invalidArgument(config.source + ": server \"" + config.server +
                                 "\" is not an https:// URL");
  }
  if (!config.tls_server_name.empty()) {
    return core::invalidArgument(config.source +
                                 ": tls-server-name is not supported by this client");
  }
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(curl_url(), curl_url_cleanup);
  if (!url || curl_url_set(url.get(), CURLUPART_URL, config.server.c_str(), 0) != CURLUE_OK) {
    return core::invalidArgument(config.source + ": server \"" + config.server + "\" is not a URL");
  }
  RM_ASSIGN_OR_RETURN(std::shared_ptr<TlsMaterial> tls, TlsMaterial::parse(config));
  Endpoint endpoint;
  endpoint.server = config.server;
  while (!endpoint.server.empty() && endpoint.server.back() == '/') endpoint.server.pop_back();
  endpoint.source = config.source;
  endpoint.user_agent = options.user_agent;
  endpoint.tls = std::move(tls);
  return std::unique_ptr<ApiClient>(new CurlClient(config, options, std::move(endpoint)));
}

}  // namespace ringmaster::kube::internal

namespace ringmaster::kube {

core::Result<std::unique_ptr<ApiClient>> makeApiClient(const KubeConfig& config,
                                                       const ClientOptions& options) {
  return internal::makeCurlClient(config, options);
}

}  // namespace ringmaster::kube
