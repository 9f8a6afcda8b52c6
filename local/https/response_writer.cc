#include "local/https/response_writer.h"

#include <cstdio>
#include <ctime>

namespace ringmaster::local {

namespace {

std::string httpDate() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

bool bodyAllowed(int status) { return status >= 200 && status != 204 && status != 304; }

}  // namespace

ResponseWriter::ResponseWriter(ByteSink& sink, const Request& request, bool keep_alive,
                               std::stop_source closer, std::function<void()> on_stream_start)
    : sink_(sink),
      request_(request),
      keep_alive_(keep_alive),
      closer_(std::move(closer)),
      on_stream_start_(std::move(on_stream_start)) {}

bool ResponseWriter::keepAlive() const {
  if (!keep_alive_ || failed_ || closed()) return false;
  return state_ == State::kSent || (state_ == State::kEnded && chunked_);
}

std::string ResponseWriter::head(int status, Headers& headers) {
  headers.remove("Content-Length");
  headers.remove("Transfer-Encoding");
  headers.remove("Connection");
  if (!headers.has("Date")) headers.add("Date", httpDate());
  if (!keep_alive_ || closed()) headers.add("Connection", "close");
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out += reasonPhrase(status);
  out += "\r\n";
  for (const auto& [name, value] : headers.entries()) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  return out;
}

core::Status ResponseWriter::write(std::string_view data) {
  if (closed())
    return core::unavailable("response to " + request_.method + " " + request_.path +
                             ": connection closed");
  core::Status written = sink_.writeAll(data);
  if (!written.ok()) {
    failed_ = true;
    closer_.request_stop();
    return std::move(written).withContext("response to " + request_.method + " " + request_.path);
  }
  return written;
}

core::Status ResponseWriter::send(int status, Headers headers, std::string_view body) {
  if (state_ != State::kNone) {
    return core::internalError("response to " + request_.path + " already started");
  }
  state_ = State::kSent;
  status_ = status;
  std::string out = head(status, headers);
  if (bodyAllowed(status)) out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "\r\n";
  if (bodyAllowed(status) && request_.method != "HEAD") {
    out += body;
    body_bytes_ = body.size();
  }
  return write(out);
}

core::Status ResponseWriter::send(int status, std::string_view content_type,
                                  std::string_view body) {
  Headers headers;
  if (!content_type.empty()) headers.add("Content-Type", std::string(content_type));
  return send(status, std::move(headers), body);
}

core::Status ResponseWriter::startStream(int status, Headers headers) {
  if (state_ != State::kNone) {
    return core::internalError("response to " + request_.path + " already started");
  }
  state_ = State::kStreaming;
  status_ = status;
  // HTTP/1.0 has no chunked coding: the body then ends when the connection closes.
  chunked_ = request_.version_minor >= 1;
  if (!chunked_) keep_alive_ = false;
  std::string out = head(status, headers);
  if (chunked_) out += "Transfer-Encoding: chunked\r\n";
  out += "\r\n";
  if (on_stream_start_) on_stream_start_();
  return write(out);
}

core::Status ResponseWriter::writeChunk(std::string_view data) {
  if (state_ != State::kStreaming) {
    return core::internalError("writeChunk on " + request_.path + " without a started stream");
  }
  if (data.empty()) return core::Status::Ok();
  body_bytes_ += data.size();
  if (!chunked_) return write(data);
  char size_line[32];
  int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  std::string out;
  out.reserve(data.size() + static_cast<size_t>(n) + 2);
  out.append(size_line, static_cast<size_t>(n));
  out.append(data);
  out.append("\r\n");
  return write(out);
}

core::Status ResponseWriter::endStream() {
  if (state_ != State::kStreaming) {
    return core::internalError("endStream on " + request_.path + " without a started stream");
  }
  state_ = State::kEnded;
  if (!chunked_) return core::Status::Ok();
  return write("0\r\n\r\n");
}

}  // namespace ringmaster::local
