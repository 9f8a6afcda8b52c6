#pragma once
// TLS for the server side: an SSL_CTX built from PEM (TLS 1.2+, ALPN "http/1.1" only, so Go
// clients never try HTTP/2), and one non-blocking TLS connection whose every wait is a poll()
// on the socket plus the server's stop fd, so stop() wakes blocked reads and writes at once.
//
// Ownership: TlsContext owns its SSL_CTX; TlsConnection owns its SSL and socket fd (closed in
// the destructor) and borrows the stop fd. Thread-safety: a TlsContext is shared read-only by
// connection threads; a TlsConnection is used by one thread. Failure: Status with OpenSSL's
// error text; reads and writes also fail on deadline or stop.

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "local/https/byte_stream.h"

namespace ringmaster::local {

class TlsContext {
 public:
  static core::Result<std::unique_ptr<TlsContext>> createServer(const std::string& cert_pem,
                                                                const std::string& key_pem);
  ~TlsContext();
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// The text of OpenSSL's error queue for this thread (emptied), or `fallback` when empty.
std::string opensslErrors(std::string_view fallback = "unknown OpenSSL error");

class TlsConnection : public ByteSource, public ByteSink {
 public:
  // Takes ownership of `fd` (made non-blocking here).
  TlsConnection(const TlsContext& ctx, int fd, int stop_fd,
                std::chrono::milliseconds write_timeout);
  ~TlsConnection() override;
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  // The server side of the handshake. A client speaking plain HTTP gets Go's answer
  // ("Client sent an HTTP request to an HTTPS server.") and an error.
  core::Status handshake(SteadyClock::time_point deadline);
  core::Result<size_t> read(char* buf, size_t n, SteadyClock::time_point deadline) override;
  core::Status writeAll(std::string_view data) override;
  // Sends close_notify without waiting for the peer's.
  void shutdown();
  int fd() const { return fd_; }

 private:
  // Waits for the socket to become readable (`for_write` false) or writable.
  core::Status wait(bool for_write, SteadyClock::time_point deadline, std::string_view what);

  SSL* ssl_ = nullptr;
  int fd_;
  int stop_fd_;
  std::chrono::milliseconds write_timeout_;
  bool usable_ = true;
};

}  // namespace ringmaster::local
