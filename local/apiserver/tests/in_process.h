#pragma once
// Drives ApiServer::handle() in-process for the API server's tests: a request from method, URL
// and body; the raw response captured by a thread-safe sink and parsed into status, headers and
// (de-chunked) body. Streaming handlers run on a thread; waitFor() blocks until the captured
// bytes contain a text (20 s deadline) so tests never sleep.

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "local/apiserver/api_server.h"
#include "local/https/byte_stream.h"
#include "local/https/http_message.h"
#include "local/https/response_writer.h"

namespace ringmaster::local::testing {

class CaptureSink : public ByteSink {
 public:
  core::Status writeAll(std::string_view data) override {
    {
      std::lock_guard lock(mu_);
      raw_.append(data);
    }
    cv_.notify_all();
    return core::Status::Ok();
  }
  std::string raw() const {
    std::lock_guard lock(mu_);
    return raw_;
  }
  // Whether the raw bytes came to contain `text` within 20 s.
  bool waitFor(const std::string& text) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [&] { return raw_.find(text) != std::string::npos; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string raw_;
};

struct Reply {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;  // de-chunked
  std::string header(const std::string& name) const {
    size_t at = head.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    at += name.size() + 4;
    return head.substr(at, head.find("\r\n", at) - at);
  }
};

inline Reply parseReply(const std::string& raw) {
  Reply r;
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = raw.substr(0, end + 2);
  r.status = std::stoi(raw.substr(9, 3));
  std::string rest = raw.substr(end + 4);
  if (r.head.find("Transfer-Encoding: chunked") == std::string::npos) {
    r.body = rest;
    return r;
  }
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t eol = rest.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t n = std::stoul(rest.substr(pos, eol - pos), nullptr, 16);
    if (n == 0) break;
    r.body += rest.substr(eol + 2, n);
    pos = eol + 2 + n + 2;
  }
  return r;
}

inline Request makeRequest(const std::string& method, const std::string& url,
                           const std::string& body = "",
                           const std::string& content_type = "application/json") {
  Request req;
  req.method = method;
  req.target = url;
  size_t q = url.find('?');
  req.path = url.substr(0, q);
  if (q != std::string::npos) {
    req.raw_query = url.substr(q + 1);
    req.query = parseQuery(req.raw_query).value_or(QueryParams{});
  }
  req.headers.add("Accept", "application/json");
  if (!body.empty()) req.headers.add("Content-Type", content_type);
  req.body = body;
  req.user = "ringmaster-local-admin";
  return req;
}

// An API server for one test, its data under <dir>/data (a fixture's temporary directory).
inline core::Result<std::unique_ptr<ApiServer>> startServer(const std::string& dir) {
  ApiServerOptions options;
  options.data_dir = std::filesystem::path(dir) / "data";
  return ApiServer::start(options);
}

inline Reply call(ApiServer& server, const std::string& method, const std::string& url,
                  const std::string& body = "",
                  const std::string& content_type = "application/json") {
  Request req = makeRequest(method, url, body, content_type);
  CaptureSink sink;
  ResponseWriter writer(sink, req, true, std::stop_source());
  server.handle(req, writer);
  if (writer.streaming()) (void)writer.endStream();
  return parseReply(sink.raw());
}

// A request served on its own thread (streams); stop() ends it as a disconnect would.
class StreamCall {
 public:
  StreamCall(ApiServer& server, const std::string& url)
      : request_(makeRequest("GET", url)), writer_(sink_, request_, true, closer_) {
    thread_ = std::thread([this, &server] {
      server.handle(request_, writer_);
      std::lock_guard lock(mu_);
      done_ = true;
      cv_.notify_all();
    });
  }
  ~StreamCall() {
    closer_.request_stop();
    thread_.join();
  }
  CaptureSink& sink() { return sink_; }
  // Whether the handler returned within 20 s.
  bool waitDone() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return done_; });
  }
  void disconnect() { closer_.request_stop(); }
  Reply reply() const { return parseReply(sink_.raw()); }

 private:
  CaptureSink sink_;
  Request request_;
  std::stop_source closer_;
  ResponseWriter writer_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace ringmaster::local::testing
