#include "local/https/tls.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace ringmaster::local {

namespace {

constexpr unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};

// Picks "http/1.1" when offered; otherwise no ALPN at all (Go then speaks HTTP/1.1 anyway).
int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  for (unsigned int i = 0; i < inlen;) {
    unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof kHttp11 && std::memcmp(in + i + 1, kHttp11, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};

// A write to a socket the peer reset raises SIGPIPE in the writing thread, which the server
// blocks in connection threads; consume the pending signal so it never reaches anyone.
void consumePendingSigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    timespec zero{};
    sigtimedwait(&set, nullptr, &zero);
  }
}

}  // namespace

std::string opensslErrors(std::string_view fallback) {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? std::string(fallback) : out;
}

core::Result<std::unique_ptr<TlsContext>> TlsContext::createServer(const std::string& cert_pem,
                                                                   const std::string& key_pem) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (raw == nullptr) return core::internalError("SSL_CTX_new: " + opensslErrors());
  std::unique_ptr<TlsContext> ctx(new TlsContext(raw));
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(raw, SSL_MODE_RELEASE_BUFFERS);

  std::unique_ptr<BIO, BioDeleter> cert_bio(
      BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
  X509* leaf = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) return core::invalidArgument("server certificate PEM: " + opensslErrors());
  int used = SSL_CTX_use_certificate(raw, leaf);
  X509_free(leaf);
  if (used != 1) return core::invalidArgument("server certificate: " + opensslErrors());
  // Any further certificates in the PEM form the chain sent to clients.
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(raw, extra) != 1) {
      X509_free(extra);
      return core::invalidArgument("server certificate chain: " + opensslErrors());
    }
  }
  ERR_clear_error();  // the loop above ends on a "no start line" error

  std::unique_ptr<BIO, BioDeleter> key_bio(
      BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  if (key == nullptr) return core::invalidArgument("server key PEM: " + opensslErrors());
  used = SSL_CTX_use_PrivateKey(raw, key);
  EVP_PKEY_free(key);
  if (used != 1 || SSL_CTX_check_private_key(raw) != 1) {
    return core::invalidArgument("server key does not match its certificate: " + opensslErrors());
  }
  SSL_CTX_set_alpn_select_cb(raw, selectAlpn, nullptr);
  return ctx;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsConnection::TlsConnection(const TlsContext& ctx, int fd, int stop_fd,
                             std::chrono::milliseconds write_timeout)
    : fd_(fd), stop_fd_(stop_fd), write_timeout_(write_timeout) {
  int flags = fcntl(fd_, F_GETFL, 0);
  if (flags < 0 || fcntl(fd_, F_SETFL, flags | O_NONBLOCK) != 0) usable_ = false;
  ERR_clear_error();
  ssl_ = SSL_new(ctx.get());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) usable_ = false;
}

TlsConnection::~TlsConnection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

core::Status TlsConnection::wait(bool for_write, SteadyClock::time_point deadline,
                                 std::string_view what) {
  pollfd fds[2] = {{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0},
                   {stop_fd_, POLLIN, 0}};
  for (;;) {
    int timeout_ms = -1;
    if (deadline != SteadyClock::time_point::max()) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
      if (left <= 0) {
        usable_ = false;
        return core::timeoutError(std::string(what) + ": timed out");
      }
      timeout_ms = left > INT_MAX ? INT_MAX : static_cast<int>(left);
    }
    int r = ::poll(fds, 2, timeout_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      usable_ = false;
      return core::errnoError(std::string(what) + ": poll", errno);
    }
    if (r == 0) continue;
    if (fds[1].revents != 0) {
      usable_ = false;
      return core::cancelled(std::string(what) + ": server stopping");
    }
    if (fds[0].revents != 0) return core::Status::Ok();  // errors surface in the next SSL call
  }
}

core::Status TlsConnection::handshake(SteadyClock::time_point deadline) {
  if (!usable_) return core::internalError("TLS setup: " + opensslErrors());
  for (;;) {
    ERR_clear_error();
    int r = SSL_accept(ssl_);
    if (r == 1) return core::Status::Ok();
    int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      RM_RETURN_IF_ERROR(wait(err == SSL_ERROR_WANT_WRITE, deadline, "TLS handshake"));
      continue;
    }
    usable_ = false;
    if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_HTTP_REQUEST) {
      static constexpr std::string_view kAnswer =
          "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
      [[maybe_unused]] ssize_t n = ::send(fd_, kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL);
      ERR_clear_error();
      return core::invalidArgument("TLS handshake: client sent plain HTTP");
    }
    int saved = errno;
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      return saved == 0 ? core::unavailable("TLS handshake: peer closed the connection")
                        : core::errnoError("TLS handshake", saved);
    }
    return core::unavailable("TLS handshake: " + opensslErrors());
  }
}

core::Result<size_t> TlsConnection::read(char* buf, size_t n, SteadyClock::time_point deadline) {
  if (!usable_) return core::unavailable("TLS read: connection no longer usable");
  for (;;) {
    ERR_clear_error();
    size_t got = 0;
    int r = SSL_read_ex(ssl_, buf, n, &got);
    if (r == 1) return got;
    int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      RM_RETURN_IF_ERROR(wait(err == SSL_ERROR_WANT_WRITE, deadline, "TLS read"));
      continue;
    }
    if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};
    int saved = errno;
    usable_ = false;
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      if (saved == 0) return size_t{0};
      return core::errnoError("TLS read", saved);
    }
    return core::unavailable("TLS read: " + opensslErrors());
  }
}

core::Status TlsConnection::writeAll(std::string_view data) {
  if (!usable_) return core::unavailable("TLS write: connection no longer usable");
  SteadyClock::time_point deadline = SteadyClock::now() + write_timeout_;
  while (!data.empty()) {
    ERR_clear_error();
    size_t written = 0;
    int r = SSL_write_ex(ssl_, data.data(), data.size(), &written);
    if (r == 1) {
      data.remove_prefix(written);
      deadline = SteadyClock::now() + write_timeout_;
      continue;
    }
    int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      RM_RETURN_IF_ERROR(wait(err == SSL_ERROR_WANT_WRITE, deadline, "TLS write"));
      continue;
    }
    int saved = errno;
    usable_ = false;
    if (saved == EPIPE) consumePendingSigpipe();
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      return core::errnoError("TLS write", saved == 0 ? EPIPE : saved);
    }
    return core::unavailable("TLS write: " + opensslErrors());
  }
  return core::Status::Ok();
}

void TlsConnection::shutdown() {
  if (!usable_ || ssl_ == nullptr || !SSL_is_init_finished(ssl_)) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // best effort: the socket closes next either way
  ERR_clear_error();
  consumePendingSigpipe();
}

}  // namespace ringmaster::local
