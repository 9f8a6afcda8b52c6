#include "local/https/tests/test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>

namespace ringmaster::local::testing {

namespace {

core::Result<int> connectTcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return core::errnoError("socket", errno);
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    return core::errnoError("connect", err);
  }
  return fd;
}

std::string sslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += buf;
    out += "; ";
  }
  return out;
}

}  // namespace

core::Result<std::unique_ptr<TestClient>> TestClient::connect(int port, const std::string& ca_pem) {
  // A write to a connection the server closed must fail the test's assertion with EPIPE, not
  // kill the whole test binary with SIGPIPE.
  static const bool sigpipe_ignored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  std::unique_ptr<TestClient> client(new TestClient());
  RM_ASSIGN_OR_RETURN(client->fd_, connectTcp(port));
  client->ctx_ = SSL_CTX_new(TLS_client_method());
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (ca == nullptr) return core::invalidArgument("CA PEM: " + sslErrors());
  X509_STORE_add_cert(SSL_CTX_get_cert_store(client->ctx_), ca);
  X509_free(ca);
  SSL_CTX_set_verify(client->ctx_, SSL_VERIFY_PEER, nullptr);
  static const unsigned char kProtos[] = "\x02h2\x08http/1.1";
  SSL_CTX_set_alpn_protos(client->ctx_, kProtos, sizeof kProtos - 1);
  client->ssl_ = SSL_new(client->ctx_);
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(client->ssl_), "127.0.0.1");
  SSL_set_fd(client->ssl_, client->fd_);
  if (SSL_connect(client->ssl_) != 1) return core::unavailable("SSL_connect: " + sslErrors());
  return client;
}

TestClient::~TestClient() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

std::string TestClient::alpn() const {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_, &data, &len);
  return std::string(reinterpret_cast<const char*>(data), len);
}

void TestClient::closeAbruptly() {
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
  fd_ = -1;
}

core::Status TestClient::send(std::string_view raw) {
  size_t written = 0;
  if (SSL_write_ex(ssl_, raw.data(), raw.size(), &written) != 1) {
    return core::unavailable("SSL_write: " + sslErrors());
  }
  return core::Status::Ok();
}

core::Status TestClient::fill() {
  char buf[16384];
  size_t got = 0;
  if (SSL_read_ex(ssl_, buf, sizeof buf, &got) == 1) {
    buf_.append(buf, got);
    return core::Status::Ok();
  }
  int err = SSL_get_error(ssl_, 0);
  ERR_clear_error();
  eof_ = true;
  if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && errno == 0)) {
    return core::unavailable("EOF");
  }
  return core::unavailable("SSL_read failed (" + std::to_string(err) + ")");
}

core::Result<std::string> TestClient::line() {
  for (;;) {
    size_t nl = buf_.find("\r\n");
    if (nl != std::string::npos) {
      std::string out = buf_.substr(0, nl);
      buf_.erase(0, nl + 2);
      return out;
    }
    RM_RETURN_IF_ERROR(fill());
  }
}

core::Result<std::string> TestClient::exact(size_t n) {
  while (buf_.size() < n) RM_RETURN_IF_ERROR(fill());
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  return out;
}

core::Result<TestResponse> TestClient::readHead() {
  TestResponse response;
  RM_ASSIGN_OR_RETURN(std::string status_line, line());
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.")) {
    return core::invalidArgument("bad status line: " + status_line);
  }
  response.status = std::stoi(status_line.substr(9, 3));
  for (;;) {
    RM_ASSIGN_OR_RETURN(std::string header, line());
    if (header.empty()) break;
    size_t colon = header.find(':');
    std::string value = header.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    response.headers.add(header.substr(0, colon), value);
  }
  return response;
}

core::Result<std::string> TestClient::readChunk() {
  RM_ASSIGN_OR_RETURN(std::string size_line, line());
  size_t size = 0;
  auto [end, ec] = std::from_chars(size_line.data(), size_line.data() + size_line.size(), size, 16);
  if (ec != std::errc()) return core::invalidArgument("bad chunk size line: " + size_line);
  RM_ASSIGN_OR_RETURN(std::string data, exact(size));
  RM_ASSIGN_OR_RETURN(std::string crlf, line());
  if (!crlf.empty()) return core::invalidArgument("chunk not followed by CRLF");
  return data;
}

core::Result<TestResponse> TestClient::readResponse() {
  RM_ASSIGN_OR_RETURN(TestResponse response, readHead());
  while (response.status >= 100 && response.status < 200) {  // interim: 100 Continue
    RM_ASSIGN_OR_RETURN(response, readHead());
  }
  if (equalsIgnoreCase(response.headers.get("Transfer-Encoding"), "chunked")) {
    for (;;) {
      RM_ASSIGN_OR_RETURN(std::string chunk, readChunk());
      if (chunk.empty()) break;
      response.body += chunk;
    }
  } else if (const std::string* length = response.headers.find("Content-Length")) {
    RM_ASSIGN_OR_RETURN(response.body, exact(std::stoul(*length)));
  } else {
    while (fill().ok()) {
    }
    response.body = std::move(buf_);
    buf_.clear();
  }
  return response;
}

bool TestClient::peerClosed() {
  if (!buf_.empty()) return false;
  return !fill().ok() && eof_;
}

std::string TestClient::get(std::string_view path, std::string_view token) {
  std::string out = "GET " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!token.empty()) out += "Authorization: Bearer " + std::string(token) + "\r\n";
  out += "\r\n";
  return out;
}

core::Result<std::string> plainExchange(int port, std::string_view request) {
  RM_ASSIGN_OR_RETURN(int fd, connectTcp(port));
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    int err = errno;
    ::close(fd);
    return core::errnoError("send", err);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace ringmaster::local::testing
