#pragma once
// Server: HTTP/1.1 over TLS on 127.0.0.1 for the embedded API server. One thread
// per connection (capped), keep-alive, Content-Length and chunked request bodies, bearer-token
// authentication (auth.h) before any handler runs, and chunked streaming responses whose
// chunks reach the client at once. A watch blocks only its own connection's thread.
//
// A streaming handler learns that its client went away (the server watches the socket for a
// hang-up) or that the server is stopping through ResponseWriter::closed() / closedToken(),
// and must then return: stop() waits for every handler to return.
//
// Ownership: start() returns the owner; the Server owns its sockets and threads and copies the
// handler, which must stay callable until stop() returns. Thread-safety: the handler is called
// concurrently from connection threads; port()/url() are const; stop() is idempotent and may
// be called from any thread except a handler's. Failure: start() fails on bad certificates or
// a port that cannot be bound; per-connection errors are logged (DEBUG) and close only that
// connection.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "local/https/auth.h"
#include "local/https/http_message.h"
#include "local/https/request_reader.h"
#include "local/https/response_writer.h"

namespace ringmaster::local {

using Handler = std::function<void(const Request&, ResponseWriter&)>;

struct ServerOptions {
  int port = 0;  // on 127.0.0.1; 0 picks a free port (see Server::port())
  // More IPv4 addresses to listen on, at the same port (the pod gateway, local_network.h); an
  // address need not be configured yet. One that cannot be bound is logged and left out.
  std::vector<std::string> also_listen_on;
  std::string cert_pem;      // server certificate, then any chain certificates
  std::string key_pem;       // its private key
  std::string bearer_token;  // required: requests must carry `Authorization: Bearer <token>`
  // Other bearer tokens the server accepts, and whose they are (ServiceAccount tokens).
  TokenUserFn token_user;
  // Requests without credentials reach the handler on every path, not only the public ones: for
  // the local kubelet's read-only log endpoint, which a kube-apiserver without a kubelet client
  // certificate calls anonymously. A wrong token is still refused.
  bool anonymous_reads = false;
  // At this many open connections a newcomer replaces the one idle longest (waiting for its
  // handshake or next request); only when every one is serving a request is it closed (logged).
  size_t max_connections = 512;
  RequestLimits limits;
  std::chrono::milliseconds idle_timeout{120'000};  // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{60'000};  // a client that reads nothing this long
  std::chrono::milliseconds handshake_timeout{10'000};
};

class Server {
 public:
  static core::Result<std::unique_ptr<Server>> start(ServerOptions options, Handler handler);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  std::string url() const;  // "https://127.0.0.1:<port>"
  // Closes the listener, ends idle connections, marks every stream closed (handlers waiting on
  // closedToken() wake), fails blocked writes, and joins all threads.
  void stop();

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringmaster::local
