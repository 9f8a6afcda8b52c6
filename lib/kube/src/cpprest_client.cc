// The cpprestsdk transport (lessons measured on Debian's 2.10.18):
// (1) each watch has its own http_client whose timeout (it counts silence) exceeds the watch's
//     timeoutSeconds; (2) watch bodies go through a per-chunk callback streambuf; (3) each
//     call has its own cancellation_token_source; (4) no code here ever waits inside a pplx
//     continuation: continuations only hand results to std::promise / the WatchSink, and the
//     caller's own thread waits with a deadline; (5) TLS trusts the cluster CA only (the
//     SSL-context callback replaces the store that cpprestsdk filled with the system CAs), and
//     TLS failures are turned into sentences.
// Exceptions are this library's way of failing: every one is caught in this file.

#include "cpprest_client.h"

#include <cpprest/astreambuf.h>
#include <cpprest/http_client.h>
#include <cpprest/streams.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "ringmaster/core/backoff.h"
#include "ringmaster/core/log.h"

namespace ringmaster::kube::internal {
namespace {

using web::http::http_exception;
using web::http::http_request;
using web::http::http_response;
using web::http::client::http_client;
using web::http::client::http_client_config;
using Clock = std::chrono::steady_clock;

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// The CA certificates in `pem`, or an error when there is none.
core::Result<X509_STORE*> makeCaStore(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return core::internalError("BIO_new_mem_buf failed");
  X509_STORE* store = X509_STORE_new();
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
    ++count;
  }
  BIO_free(bio);
  if (count == 0) {
    X509_STORE_free(store);
    return core::invalidArgument("no PEM certificate in the certificate authority data");
  }
  return store;
}

struct TlsSettings {
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
};

// Runs on cpprestsdk's thread for each new TLS connection; must not throw. The inputs were
// checked by makeCpprestClient, so failures here are not expected.
void configureTls(const TlsSettings& tls, boost::asio::ssl::context& ctx) {
  if (!tls.ca_pem.empty()) {
    core::Result<X509_STORE*> store = makeCaStore(tls.ca_pem);
    if (store.ok()) SSL_CTX_set_cert_store(ctx.native_handle(), *store);  // frees the system CAs
  }
  if (!tls.client_cert_pem.empty()) {
    boost::system::error_code ec;
    ctx.use_certificate_chain(boost::asio::buffer(tls.client_cert_pem), ec);
    ctx.use_private_key(boost::asio::buffer(tls.client_key_pem), boost::asio::ssl::context::pem,
                        ec);
  }
}

core::Status checkTls(const TlsSettings& tls, const std::string& source) {
  if (!tls.ca_pem.empty()) {
    core::Result<X509_STORE*> store = makeCaStore(tls.ca_pem);
    if (!store.ok()) return store.status().withContext(source + ": cluster CA");
    X509_STORE_free(*store);
  }
  if (!tls.client_cert_pem.empty()) {
    boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
    boost::system::error_code ec;
    ctx.use_certificate_chain(boost::asio::buffer(tls.client_cert_pem), ec);
    if (ec) return core::invalidArgument(source + ": client certificate: " + ec.message());
    ctx.use_private_key(boost::asio::buffer(tls.client_key_pem), boost::asio::ssl::context::pem,
                        ec);
    if (ec) return core::invalidArgument(source + ": client key: " + ec.message());
  }
  return core::Status::Ok();
}

// An exception from cpprestsdk, in words.
core::Status translateError(const std::exception& e, const std::string& server,
                            const std::string& source) {
  std::string what = e.what();
  if (dynamic_cast<const pplx::task_canceled*>(&e) != nullptr) {
    return core::cancelled("request cancelled");
  }
  const bool tls = contains(what, "handshake") || contains(what, "SSL") || contains(what, "ssl") ||
                   contains(what, "certificate");
  if (tls) {
    // cpprestsdk reports every handshake failure alike, so name both likely causes.
    return core::unavailable("TLS handshake with " + server + " failed (" + what +
                             "): either the connection was cut during the handshake, or the "
                             "server certificate is not signed by the cluster CA from " +
                             source +
                             ", has expired, or does not name this host (TLS verification is "
                             "never skipped)");
  }
  if (contains(what, "timed out") || contains(what, "timeout")) {
    return core::timeoutError(server + ": " + what);
  }
  return core::unavailable(server + ": " + what);
}

std::string requestUri(const ApiRequest& request) {
  std::string uri = request.path;
  char sep = '?';
  for (const auto& [key, value] : request.query) {
    uri += sep;
    uri += web::uri::encode_data_string(key) + "=" + web::uri::encode_data_string(value);
    sep = '&';
  }
  return uri;
}

web::http::method methodOf(Verb verb) {
  switch (verb) {
    case Verb::kGet:
      return web::http::methods::GET;
    case Verb::kPost:
      return web::http::methods::POST;
    case Verb::kPut:
      return web::http::methods::PUT;
    case Verb::kPatch:
      return web::http::methods::PATCH;
    case Verb::kDelete:
      return web::http::methods::DEL;
  }
  return web::http::methods::GET;
}

HeaderList headersOf(const http_response& response) {
  HeaderList out;
  for (const auto& [name, value] : response.headers()) out.emplace_back(name, value);
  return out;
}

// Watch state shared by the WatchStream, the response streambuf and the continuations. Every
// sink call happens under mu_, so once cancel() has taken the lock no call follows.
class WatchState {
 public:
  explicit WatchState(WatchSink& sink) : sink_(sink) {}

  void feed(const uint8_t* data, size_t n) {
    std::lock_guard lock(mu_);
    if (cancelled_) return;
    buffer_.append(reinterpret_cast<const char*>(data), n);
    if (accepted_) deliverLines();
  }
  // The server answered 200: lines flow to the sink from now on.
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
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  // For a refused watch: the error body once complete, or nullopt at the deadline.
  std::optional<std::string> waitBody(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return finished_; })) return std::nullopt;
    return buffer_;
  }

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
  std::mutex mu_;
  std::condition_variable cv_;
  std::string buffer_;
  bool accepted_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
  bool closed_ = false;
  core::Status close_status_;
};

// A write-only cpprestsdk stream buffer that hands each chunk to WatchState (lesson 2).
class CallbackStreambuf : public Concurrency::streams::details::streambuf_state_manager<uint8_t> {
  using Base = Concurrency::streams::details::streambuf_state_manager<uint8_t>;

 public:
  explicit CallbackStreambuf(std::shared_ptr<WatchState> state)
      : Base(std::ios_base::out), state_(std::move(state)) {}

  bool can_seek() const override { return false; }
  bool has_size() const override { return false; }
  size_t buffer_size(std::ios_base::openmode) const override { return 0; }
  void set_buffer_size(size_t, std::ios_base::openmode) override {}
  size_t in_avail() const override { return 0; }
  pos_type getpos(std::ios_base::openmode) const override { return pos_type(-1); }
  pos_type seekpos(pos_type, std::ios_base::openmode) override { return pos_type(-1); }
  pos_type seekoff(off_type, std::ios_base::seekdir, std::ios_base::openmode) override {
    return pos_type(-1);
  }
  bool acquire(uint8_t*& ptr, size_t& count) override {
    ptr = nullptr;
    count = 0;
    return false;
  }
  void release(uint8_t*, size_t) override {}

 protected:
  pplx::task<int_type> _putc(uint8_t ch) override {
    state_->feed(&ch, 1);
    return pplx::task_from_result<int_type>(ch);
  }
  pplx::task<size_t> _putn(const uint8_t* ptr, size_t count) override {
    state_->feed(ptr, count);
    return pplx::task_from_result(count);
  }
  pplx::task<int_type> _bumpc() override {
    return pplx::task_from_result<int_type>(Base::traits::eof());
  }
  int_type _sbumpc() override { return Base::traits::eof(); }
  pplx::task<int_type> _getc() override {
    return pplx::task_from_result<int_type>(Base::traits::eof());
  }
  int_type _sgetc() override { return Base::traits::eof(); }
  pplx::task<int_type> _nextc() override {
    return pplx::task_from_result<int_type>(Base::traits::eof());
  }
  pplx::task<int_type> _ungetc() override {
    return pplx::task_from_result<int_type>(Base::traits::eof());
  }
  pplx::task<size_t> _getn(uint8_t*, size_t) override { return pplx::task_from_result<size_t>(0); }
  size_t _scopy(uint8_t*, size_t) override { return 0; }
  pplx::task<bool> _sync() override { return pplx::task_from_result(true); }
  uint8_t* _alloc(size_t) override { return nullptr; }  // callers fall back to putn
  void _commit(size_t) override {}

 private:
  std::shared_ptr<WatchState> state_;
};

class CpprestWatchStream : public WatchStream {
 public:
  CpprestWatchStream(std::shared_ptr<WatchState> state, pplx::cancellation_token_source cts)
      : state_(std::move(state)), cts_(std::move(cts)) {}
  ~CpprestWatchStream() override { cancel(); }
  void cancel() override {
    state_->cancel();
    cts_.cancel();
  }

 private:
  std::shared_ptr<WatchState> state_;
  pplx::cancellation_token_source cts_;
};

class CpprestClient : public ApiClient {
 public:
  CpprestClient(KubeConfig config, ClientOptions options)
      : config_(std::move(config)), options_(std::move(options)) {
    tls_.ca_pem = config_.ca_pem;
    tls_.client_cert_pem = config_.client_cert_pem;
    tls_.client_key_pem = config_.client_key_pem;
  }

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
      std::chrono::milliseconds wait = backoff.next();
      if (const std::string* retry_after = response->header("Retry-After")) {
        try {
          wait = std::max<std::chrono::milliseconds>(wait,
                                                     std::chrono::seconds(std::stoi(*retry_after)));
        } catch (const std::exception&) {  // an HTTP date: keep the backoff
        }
      }
      if (Clock::now() + wait >= deadline) return response;  // no time left for another try
      RM_LOG(DEBUG, KUBE) << verbName(request.verb) << " " << request.path << ": HTTP " << code
                          << ", retry " << attempt << " in " << wait.count() << " ms";
      std::this_thread::sleep_for(wait);
    }
  }

  ApiResult<std::unique_ptr<WatchStream>> watch(const ApiRequest& request,
                                                WatchSink& sink) override {
    const std::string what = "watch " + request.path;
    auto state = std::make_shared<WatchState>(sink);
    core::Result<http_request> http = makeRequest(request);
    if (!http.ok()) return ApiError::fromStatus(http.status().withContext(what));
    Concurrency::streams::streambuf<uint8_t> buffer(std::make_shared<CallbackStreambuf>(state));
    http->set_response_stream(Concurrency::streams::ostream(buffer));

    // Lesson 1: a client of its own whose silence limit is this watch's.
    std::shared_ptr<http_client> client;
    try {
      client = std::make_shared<http_client>(config_.server, clientConfig(request.timeout));
    } catch (const std::exception& e) {
      return ApiError::fromStatus(core::invalidArgument(what + ": " + e.what()));
    }
    pplx::cancellation_token_source cts;
    auto head = std::make_shared<std::promise<core::Result<ApiResponse>>>();
    std::future<core::Result<ApiResponse>> head_future = head->get_future();
    const std::string server = config_.server, source = config_.source;
    client->request(*http, cts.get_token())
        .then([state, client, head, server, source](pplx::task<http_response> task) {
          try {
            http_response response = task.get();  // done: does not wait
            head->set_value(ApiResponse{response.status_code(), headersOf(response), {}});
            response.content_ready().then(
                [state, client, server, source](pplx::task<http_response> body) {
                  try {
                    body.get();
                    state->finish(core::Status::Ok());
                  } catch (const std::exception& e) {
                    state->finish(translateError(e, server, source));
                  }
                });
          } catch (const std::exception& e) {
            head->set_value(translateError(e, server, source));
            state->finish(core::cancelled("no response"));
          }
        });

    const Clock::time_point head_deadline =
        Clock::now() +
        std::min<std::chrono::milliseconds>(request.timeout, std::chrono::minutes(1));
    if (head_future.wait_until(head_deadline) != std::future_status::ready) {
      cts.cancel();
      return ApiError::fromStatus(core::timeoutError(what + ": no response headers"));
    }
    core::Result<ApiResponse> head_result = head_future.get();
    if (!head_result.ok()) return ApiError::fromStatus(head_result.status().withContext(what));
    if (head_result->status_code < 200 || head_result->status_code > 299) {
      std::optional<std::string> body = state->waitBody(head_deadline);
      cts.cancel();
      if (body) head_result->body = std::move(*body);
      return ApiError::fromResponse(what, *head_result);
    }
    state->accept();
    return std::unique_ptr<WatchStream>(new CpprestWatchStream(state, cts));
  }

 private:
  http_client_config clientConfig(std::chrono::milliseconds timeout) const {
    http_client_config config;
    config.set_timeout(std::max(timeout, std::chrono::milliseconds(1000)));
    config.set_validate_certificates(true);
    TlsSettings tls = tls_;
    config.set_ssl_context_callback(
        [tls](boost::asio::ssl::context& ctx) { configureTls(tls, ctx); });
    return config;
  }

  // One shared client per distinct timeout (a client's timeout is fixed at creation).
  core::Result<std::shared_ptr<http_client>> clientFor(std::chrono::milliseconds timeout) {
    std::lock_guard lock(mu_);
    std::shared_ptr<http_client>& client = clients_[timeout.count()];
    if (!client) {
      try {
        client = std::make_shared<http_client>(config_.server, clientConfig(timeout));
      } catch (const std::exception& e) {
        clients_.erase(timeout.count());
        return core::invalidArgument(config_.server + ": " + e.what());
      }
    }
    return client;
  }

  core::Result<http_request> makeRequest(const ApiRequest& request) const {
    RM_ASSIGN_OR_RETURN(std::string token, config_.bearerToken());
    http_request http(methodOf(request.verb));
    try {
      http.set_request_uri(web::uri(requestUri(request)));
    } catch (const std::exception& e) {
      return core::invalidArgument("invalid request URI: " + std::string(e.what()));
    }
    http.headers().add("Accept", "application/json");
    http.headers().add("User-Agent", options_.user_agent);
    if (!token.empty()) http.headers().add("Authorization", "Bearer " + token);
    if (!request.body.empty() || request.verb == Verb::kPost || request.verb == Verb::kPut ||
        request.verb == Verb::kPatch) {
      http.set_body(request.body, request.content_type.empty() ? std::string(kJsonContentType)
                                                               : request.content_type);
    }
    return http;
  }

  core::Result<ApiResponse> sendOnce(const ApiRequest& request, Clock::time_point deadline) {
    const std::string what = std::string(verbName(request.verb)) + " " + request.path;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= std::chrono::milliseconds(0)) return core::timeoutError(what + ": deadline passed");
    RM_ASSIGN_OR_RETURN(std::shared_ptr<http_client> client, clientFor(request.timeout));
    RM_ASSIGN_OR_RETURN(http_request http, makeRequest(request));
    pplx::cancellation_token_source cts;
    auto done = std::make_shared<std::promise<core::Result<ApiResponse>>>();
    std::future<core::Result<ApiResponse>> result = done->get_future();
    const std::string server = config_.server, source = config_.source;
    // Continuations never wait: each hands its result on (lesson 4).
    client->request(http, cts.get_token())
        .then([done, server, source](pplx::task<http_response> task) {
          try {
            http_response response = task.get();
            auto out = std::make_shared<ApiResponse>(
                ApiResponse{response.status_code(), headersOf(response), {}});
            response.extract_utf8string(true).then(
                [done, out, server, source](pplx::task<std::string> body) {
                  try {
                    out->body = body.get();
                    done->set_value(std::move(*out));
                  } catch (const std::exception& e) {
                    done->set_value(translateError(e, server, source));
                  }
                });
          } catch (const std::exception& e) {
            done->set_value(translateError(e, server, source));
          }
        });
    if (result.wait_until(deadline) != std::future_status::ready) {
      cts.cancel();
      return core::timeoutError(what + ": no answer within " +
                                std::to_string(request.timeout.count()) + " ms");
    }
    return result.get();
  }

  KubeConfig config_;
  ClientOptions options_;
  TlsSettings tls_;
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<http_client>> clients_;
};

}  // namespace

core::Result<std::unique_ptr<ApiClient>> makeCpprestClient(const KubeConfig& config,
                                                           const ClientOptions& options) {
  if (config.server.rfind("https://", 0) != 0) {
    return core::invalidArgument(config.source + ": server \"" + config.server +
                                 "\" is not an https:// URL");
  }
  if (!config.tls_server_name.empty()) {
    return core::invalidArgument(config.source +
                                 ": tls-server-name is not supported by this client");
  }
  TlsSettings tls{config.ca_pem, config.client_cert_pem, config.client_key_pem};
  RM_RETURN_IF_ERROR(checkTls(tls, config.source));
  try {
    web::uri uri(config.server);
    (void)uri;
  } catch (const std::exception& e) {
    return core::invalidArgument(config.source + ": server \"" + config.server + "\": " + e.what());
  }
  return std::unique_ptr<ApiClient>(new CpprestClient(config, options));
}

}  // namespace ringmaster::kube::internal

namespace ringmaster::kube {

core::Result<std::unique_ptr<ApiClient>> makeApiClient(const KubeConfig& config,
                                                       const ClientOptions& options) {
  return internal::makeCpprestClient(config, options);
}

}  // namespace ringmaster::kube
