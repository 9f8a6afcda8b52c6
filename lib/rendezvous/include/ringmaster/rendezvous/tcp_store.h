#pragma once
// The rendezvous store over TCP: one TcpStoreServer (hosted by rank 0's launcher) and one
// TcpStoreClient per process that takes part.
//
// Wire protocol (version 2). All integers are big-endian. Every message, in both directions,
// is one frame:
//
//   frame    := u32 body_len, body[body_len]        1 <= body_len <= the frame limit
//   string   := u32 len, bytes[len]
//
// Authentication comes first: nobody reads or writes a key without proving that it knows the
// attempt's secret, and the secret never crosses the wire. On accept the server sends
//   CHALLENGE: u8 OK, server_nonce[32]
// and the client answers with the request
//   AUTH = 5 : client_nonce[32], HMAC-SHA256(secret, "ringmaster-store client" server_nonce
//              client_nonce)
// The server replies OK, HMAC-SHA256(secret, "ringmaster-store server" server_nonce
// client_nonce), which the client checks in turn (so a stale store of another attempt is not
// mistaken for this one), or UNAUTHENTICATED and closes. Any other request first, a wrong
// proof, or no AUTH within StoreLimits::auth_timeout closes the connection with one log line
// naming the peer. Frames before authentication are at most kMaxAuthFrameBytes.
//
// Requests (body starts with an op byte; the body must be consumed exactly):
//   SET  = 1 : string key, string value
//   GET  = 2 : u64 timeout_ms, string key
//   WAIT = 3 : u64 timeout_ms, u32 key_count, string key x key_count
//   ADD  = 4 : string key, i64 delta
//
// Responses (body starts with a status byte):
//   OK      = 0 : SET, WAIT -> nothing; GET -> the value's bytes (rest of body);
//                 ADD -> i64 value after adding
//   TIMEOUT = 1 : message (rest of body) naming the missing keys
//   INVALID = 2 : message (rest of body), e.g. ADD on a key whose value is not an integer, or a
//                 key, value or the whole store over its StoreLimits
//   UNAUTHENTICATED = 3 : message (rest of body); the server closes the connection
//
// A client sends one request and reads its response before the next (no pipelining). The
// server holds GET and WAIT until every key exists or timeout_ms passes, then answers OK or
// TIMEOUT; it reads no further request from that connection meanwhile. Counters written by ADD
// are stored as decimal text, so GET on a counter key returns e.g. "3". A frame that is too
// large, truncated, or does not parse closes that connection (with a logged warning); the
// other connections are unaffected.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/limits.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {

// The largest frame a client sends or accepts: the default StoreLimits' request frame.
inline constexpr uint32_t kMaxFrameBytes = static_cast<uint32_t>(StoreLimits{}.maxFrameBytes());

// A new secret for one attempt: kSecretRandomBytes from the OS's CSPRNG, as lowercase hex.
inline constexpr size_t kSecretRandomBytes = 32;
core::Result<std::string> generateSecret();

// Serves the store to any number of clients from one thread (poll()).
//
// Ownership: owns its listening socket, client sockets, the key-value data and the serving
// thread. Thread-safety: port(), stop() and the destructor may be called from any thread
// (stop() is idempotent). Failure: start() returns an error if the address cannot be resolved
// or bound; afterwards, errors on one connection close that connection only and are logged.
// stop() closes every connection: clients blocked in get/wait see kUnavailable. Peers that do
// not authenticate, and requests over `limits`, are refused with a log line; the data stays
// within limits.max_total_bytes.
class TcpStoreServer {
 public:
  // bind_host "" or "0.0.0.0" listens on every IPv4 interface; port 0 picks a free port.
  // `secret` is what every client must prove it knows (see the protocol above); an empty one
  // is a valid key that anybody knows, for a store nobody else can reach.
  static core::Result<std::unique_ptr<TcpStoreServer>> start(const std::string& bind_host, int port,
                                                             const std::string& secret,
                                                             const StoreLimits& limits = {});
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  void stop();

  // For tests only: blocks until at least `n` GET/WAIT requests are held waiting for keys, or
  // `timeout` passes. Returns whether they are.
  bool waitForPendingRequestsForTesting(size_t n, std::chrono::milliseconds timeout);
  // For tests only: the bytes the store holds (see StoreLimits::max_total_bytes), as of the
  // last request it handled.
  size_t storedBytesForTesting() const;

 private:
  class Loop;  // sockets, data and held requests; touched by the serving thread only
  TcpStoreServer(std::unique_ptr<Loop> loop, int port);

  std::unique_ptr<Loop> loop_;
  int port_;
  std::thread thread_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

// A Store backed by a TcpStoreServer.
//
// Ownership: owns its socket. Thread-safety: thread-safe; calls are serialized (one request
// and its response at a time), so a get blocked on the server holds up other calls of this
// client — give each thread its own client if that matters. Failure: every error names the
// store's host:port. get/wait return kTimeout naming the missing keys when the server reports
// one; add on a non-integer value is kInvalidArgument. A lost connection or a server that
// stops gives kUnavailable; no reply within the operation's time gives kTimeout. Both close
// the connection and leave the client unusable (later calls return kUnavailable): the
// launcher treats a lost store as fatal to the attempt rather than guessing what was applied.
// A server that refuses our proof of the secret, or cannot prove it knows it, is
// kInvalidArgument from connect().
class TcpStoreClient final : public Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultOpTimeout{30000};

  // Resolves `host` and connects, retrying refused / unreachable / unresolvable with
  // exponential backoff (50 ms doubling to 1 s) until `connect_deadline` has passed, so the
  // server may start after the client. `op_timeout` bounds set and add; get and wait use the
  // caller's timeout (plus a grace period for the reply). Authenticates with `secret` before
  // returning.
  static core::Result<std::unique_ptr<TcpStoreClient>> connect(
      const std::string& host, int port, const std::string& secret,
      std::chrono::milliseconds connect_deadline,
      std::chrono::milliseconds op_timeout = kDefaultOpTimeout);
  ~TcpStoreClient() override;
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  core::Status set(const std::string& key, const Bytes& value) override;
  core::Result<Bytes> get(const std::string& key, std::chrono::milliseconds timeout) override;
  core::Status wait(const std::vector<std::string>& keys,
                    std::chrono::milliseconds timeout) override;
  core::Result<int64_t> add(const std::string& key, int64_t delta) override;

  // "host:port", for messages.
  const std::string& address() const { return address_; }

 private:
  TcpStoreClient(int fd, std::string address, std::chrono::milliseconds op_timeout);
  // The challenge-response of the protocol; on failure the connection is unusable.
  core::Status authenticate(const std::string& secret, std::chrono::milliseconds timeout);
  // Sends one request frame and returns the response body (status byte first).
  core::Result<std::string> roundTrip(const std::string& request,
                                      std::chrono::milliseconds reply_timeout);
  // Reads one frame's body (requires mu_).
  core::Status recvFrame(std::string* body, std::chrono::steady_clock::time_point deadline);
  core::Status sendAll(const std::string& data, std::chrono::steady_clock::time_point deadline);
  core::Status recvExact(char* out, size_t n, std::chrono::steady_clock::time_point deadline);
  // The reply's status byte as a Status ("rendezvous store at h:p: <what>: <message>").
  core::Status decodeStatus(const std::string& reply, const std::string& what);
  core::Status decodeStatusOnly(const std::string& reply, const std::string& what);
  // A reply we cannot read: the stream is out of step, so the connection is closed.
  core::Status protocolError(const std::string& what);
  void markBroken(const core::Status& why);  // requires mu_

  std::mutex mu_;
  int fd_;  // -1 once broken
  std::string address_;
  std::chrono::milliseconds op_timeout_;
  std::string broken_reason_;
};

}  // namespace ringmaster::rendezvous
