#pragma once
// ResponseWriter: how a handler answers one request, either with one complete response
// (status, headers, body; Content-Length added) or with a chunked stream whose every chunk is
// flushed to the client at once (watch events, `logs -f`).
//
// Ownership: built by the Server for one request; borrows the connection's sink, which outlives
// the handler call. Thread-safety: send/startStream/writeChunk/endStream from the handler's
// thread only; closed() and closedToken() from any thread. Failure: methods return a non-ok
// Status once the client is gone, a write timed out or the server is stopping; after that
// closed() is true and the connection is not reused.

#include <functional>
#include <stop_token>
#include <string>
#include <string_view>

#include "local/https/byte_stream.h"
#include "local/https/http_message.h"

namespace ringmaster::local {

class ResponseWriter {
 public:
  // `closer` is shared with the server: it requests stop when the client disconnects or the
  // server stops, and the writer requests it when a write fails. `on_stream_start` runs when
  // a stream begins (the server then watches the socket for a disconnect).
  ResponseWriter(ByteSink& sink, const Request& request, bool keep_alive, std::stop_source closer,
                 std::function<void()> on_stream_start = {});

  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;

  // A complete response. Content-Length, Date and (when closing) Connection are set here;
  // Transfer-Encoding/Content-Length/Connection given by the caller are replaced.
  core::Status send(int status, Headers headers, std::string_view body);
  core::Status send(int status, std::string_view content_type, std::string_view body);

  // A chunked streaming response: the status line and headers are flushed now.
  core::Status startStream(int status, Headers headers);
  // Sends one chunk and flushes it. An empty chunk is skipped (it would end the stream).
  core::Status writeChunk(std::string_view data);
  // Sends the terminating chunk; the connection may then serve another request.
  core::Status endStream();

  bool responded() const { return state_ != State::kNone; }
  bool streaming() const { return state_ == State::kStreaming; }
  // True once the client is gone, a write failed or the server is stopping.
  bool closed() const { return closer_.stop_requested(); }
  // For waits that must end when closed() turns true: std::condition_variable_any::wait
  // with this token, or a std::stop_callback.
  std::stop_token closedToken() const { return closer_.get_token(); }

  // For the server after the handler returns.
  int status() const { return status_; }
  size_t bodyBytes() const { return body_bytes_; }
  bool keepAlive() const;
  bool streamEnded() const { return state_ == State::kEnded; }

 private:
  enum class State { kNone, kSent, kStreaming, kEnded };

  std::string head(int status, Headers& headers);
  core::Status write(std::string_view data);

  ByteSink& sink_;
  const Request& request_;
  bool keep_alive_;
  std::stop_source closer_;
  std::function<void()> on_stream_start_;
  State state_ = State::kNone;
  bool chunked_ = true;
  bool failed_ = false;
  int status_ = 0;
  size_t body_bytes_ = 0;
};

}  // namespace ringmaster::local
