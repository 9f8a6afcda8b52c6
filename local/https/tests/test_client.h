#pragma once
// A small blocking HTTPS client for the server tests: verifies the server against the local CA
// for 127.0.0.1, sends raw request text and reads responses piece by piece (head, whole body,
// one chunk at a time). Every read has a 20 s socket timeout so a broken server fails a test
// instead of hanging it.

#include <memory>
#include <string>

#include "local/https/http_message.h"
#include "ringmaster/core/status.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace ringmaster::local::testing {

struct TestResponse {
  int status = 0;
  Headers headers;
  std::string body;
};

class TestClient {
 public:
  static core::Result<std::unique_ptr<TestClient>> connect(int port, const std::string& ca_pem);
  ~TestClient();

  core::Status send(std::string_view raw);
  // Status line and headers only (interim 1xx responses included).
  core::Result<TestResponse> readHead();
  // Head and the whole body after any 1xx (Content-Length, chunked, or until EOF for `Connection:
  // close`).
  core::Result<TestResponse> readResponse();
  // The next chunk of a chunked body; "" for the terminating chunk.
  core::Result<std::string> readChunk();
  // True when the server closed the connection (EOF) rather than sending more bytes.
  bool peerClosed();
  // Closes the TCP connection without a TLS close_notify.
  void closeAbruptly();
  std::string alpn() const;

  // "GET <path> HTTP/1.1" with Host and, unless empty, the bearer token.
  static std::string get(std::string_view path, std::string_view token);

 private:
  TestClient() = default;
  core::Status fill();
  core::Result<std::string> line();
  core::Result<std::string> exact(size_t n);

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

// The raw bytes a plain TCP client gets back for `request` (until EOF or 20 s).
core::Result<std::string> plainExchange(int port, std::string_view request);

}  // namespace ringmaster::local::testing
