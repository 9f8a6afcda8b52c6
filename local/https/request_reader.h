#pragma once
// Reads HTTP/1.1 requests from a ByteSource: request line, header fields, and a body framed by
// Content-Length or chunked transfer coding, within size limits. Bytes past one request stay
// buffered for the next (keep-alive, pipelining).
//
// Ownership: borrows the source, which must outlive the reader. Thread-safety: one thread.
// Failure: a ReadOutcome says whether to answer (400, 413, 431, 501, 505) and close, or just
// close (EOF, timeout, I/O error).

#include <string>

#include "local/https/byte_stream.h"
#include "local/https/http_message.h"

namespace ringmaster::local {

struct RequestLimits {
  size_t max_head_bytes = 64 * 1024;               // request line + header fields
  size_t max_body_bytes = 8 * 1024 * 1024;         // after de-chunking
  std::chrono::milliseconds head_timeout{30'000};  // from the first byte of a request
  std::chrono::milliseconds body_timeout{60'000};
};

struct ReadOutcome {
  enum class Kind {
    kOk,
    kClosed,  // EOF before a request began, idle timeout, or I/O error: close silently
    kReject,  // malformed or too large: answer `status` with `message`, then close
  };
  Kind kind = Kind::kOk;
  int status = 0;
  std::string message;

  bool ok() const { return kind == Kind::kOk; }
  static ReadOutcome closed(std::string why) { return {Kind::kClosed, 0, std::move(why)}; }
  static ReadOutcome reject(int status, std::string why) {
    return {Kind::kReject, status, std::move(why)};
  }
};

class RequestReader {
 public:
  RequestReader(ByteSource& source, RequestLimits limits) : source_(source), limits_(limits) {}

  // Reads the request line and headers into `out` (method, target, path, query, headers),
  // waiting until `idle_deadline` for the first byte.
  ReadOutcome readHead(Request* out, SteadyClock::time_point idle_deadline);
  // Reads the body announced by the head just read into `out->body`.
  ReadOutcome readBody(Request* out);
  // Whether the head read asks for a body (Content-Length > 0 or chunked).
  bool expectsBody() const { return chunked_ || content_length_ > 0; }

 private:
  // Appends more bytes to buf_; kClosed outcome on EOF/timeout/error.
  ReadOutcome fill(SteadyClock::time_point deadline, bool* eof);
  // Takes one line (without CR LF) from buf_, reading more as needed.
  ReadOutcome readLine(std::string* line, size_t max, SteadyClock::time_point deadline,
                       int too_long_status);
  ReadOutcome readExact(size_t n, std::string* out, SteadyClock::time_point deadline);
  ReadOutcome readChunked(std::string* out, SteadyClock::time_point deadline);

  ByteSource& source_;
  RequestLimits limits_;
  std::string buf_;
  size_t pos_ = 0;  // consumed prefix of buf_
  bool chunked_ = false;
  size_t content_length_ = 0;
};

// Whether the connection may stay open after answering `request` (HTTP/1.1 unless
// "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
bool wantsKeepAlive(const Request& request);

}  // namespace ringmaster::local
