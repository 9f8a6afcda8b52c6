#include "local/https/request_reader.h"

#include <cctype>
#include <charconv>

namespace ringmaster::local {

namespace {

constexpr size_t kReadBlock = 16 * 1024;
constexpr size_t kMaxChunkLine = 1024;
constexpr int kMaxLeadingEmptyLines = 4;

std::string lowerTrimmed(std::string_view s) {
  std::string out(trimOws(s));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

ReadOutcome parseRequestLine(std::string_view line, Request* out) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return ReadOutcome::reject(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!isHttpToken(method)) return ReadOutcome::reject(400, "malformed method");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !std::isdigit(version[5]) ||
      version[6] != '.' || !std::isdigit(version[7])) {
    return ReadOutcome::reject(400, "malformed HTTP version");
  }
  if (version[5] != '1') return ReadOutcome::reject(505, "only HTTP/1.x is supported");
  out->version_minor = version[7] - '0';
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return ReadOutcome::reject(400, "control character in request target");
    }
  }
  if (target.empty() || (target.front() != '/' && !(target == "*" && method == "OPTIONS"))) {
    return ReadOutcome::reject(400, "request target must be an absolute path");
  }
  out->method = std::string(method);
  out->target = std::string(target);
  size_t q = target.find('?');
  auto path = percentDecode(target.substr(0, q), false);
  if (!path) return ReadOutcome::reject(400, "malformed percent-encoding in path");
  out->path = std::move(*path);
  if (q != std::string_view::npos) {
    out->raw_query = std::string(target.substr(q + 1));
    auto query = parseQuery(out->raw_query);
    if (!query) return ReadOutcome::reject(400, "malformed percent-encoding in query");
    out->query = std::move(*query);
  }
  return {};
}

ReadOutcome parseHeaderLine(std::string_view line, Headers* headers) {
  if (line.front() == ' ' || line.front() == '\t') {
    return ReadOutcome::reject(400, "obsolete header line folding");
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || !isHttpToken(line.substr(0, colon))) {
    return ReadOutcome::reject(400, "malformed header field");
  }
  std::string_view value = trimOws(line.substr(colon + 1));
  for (char c : value) {
    if (c == '\0' || c == '\r' || c == '\n') {
      return ReadOutcome::reject(400, "control character in header value");
    }
  }
  headers->add(std::string(line.substr(0, colon)), std::string(value));
  return {};
}

}  // namespace

ReadOutcome RequestReader::fill(SteadyClock::time_point deadline, bool* eof) {
  *eof = false;
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > kReadBlock) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  size_t old = buf_.size();
  buf_.resize(old + kReadBlock);
  core::Result<size_t> n = source_.read(buf_.data() + old, kReadBlock, deadline);
  buf_.resize(old + (n.ok() ? *n : 0));
  if (!n.ok()) return ReadOutcome::closed(n.status().message());
  if (*n == 0) {
    *eof = true;
    return ReadOutcome::closed("peer closed the connection");
  }
  return {};
}

ReadOutcome RequestReader::readLine(std::string* line, size_t max, SteadyClock::time_point deadline,
                                    int too_long_status) {
  size_t scanned = 0;  // relative to pos_, which fill() may move when it compacts
  for (;;) {
    size_t nl = buf_.find('\n', pos_ + scanned);
    if (nl != std::string::npos) {
      size_t end = nl > pos_ && buf_[nl - 1] == '\r' ? nl - 1 : nl;
      if (end - pos_ > max) return ReadOutcome::reject(too_long_status, "line too long");
      line->assign(buf_, pos_, end - pos_);
      pos_ = nl + 1;
      return {};
    }
    scanned = buf_.size() - pos_;
    if (scanned > max) return ReadOutcome::reject(too_long_status, "line too long");
    bool eof = false;
    ReadOutcome filled = fill(deadline, &eof);
    if (!filled.ok()) return filled;
  }
}

ReadOutcome RequestReader::readExact(size_t n, std::string* out, SteadyClock::time_point deadline) {
  while (buf_.size() - pos_ < n) {
    bool eof = false;
    ReadOutcome filled = fill(deadline, &eof);
    if (!filled.ok()) return filled;
  }
  out->append(buf_, pos_, n);
  pos_ += n;
  return {};
}

ReadOutcome RequestReader::readHead(Request* out, SteadyClock::time_point idle_deadline) {
  chunked_ = false;
  content_length_ = 0;
  if (pos_ == buf_.size()) {
    bool eof = false;
    ReadOutcome filled = fill(idle_deadline, &eof);
    if (!filled.ok()) return filled;
  }
  const SteadyClock::time_point deadline = SteadyClock::now() + limits_.head_timeout;
  std::string line;
  for (int empty = 0;; ++empty) {
    ReadOutcome got = readLine(&line, limits_.max_head_bytes, deadline, 414);
    if (!got.ok()) return got;
    if (!line.empty()) break;
    if (empty >= kMaxLeadingEmptyLines) return ReadOutcome::reject(400, "empty request line");
  }
  ReadOutcome parsed = parseRequestLine(line, out);
  if (!parsed.ok()) return parsed;
  size_t head_bytes = line.size();
  for (;;) {
    ReadOutcome got = readLine(&line, limits_.max_head_bytes, deadline, 431);
    if (!got.ok()) return got;
    if (line.empty()) break;
    head_bytes += line.size() + 2;
    if (head_bytes > limits_.max_head_bytes) {
      return ReadOutcome::reject(431, "request header fields too large");
    }
    ReadOutcome header = parseHeaderLine(line, &out->headers);
    if (!header.ok()) return header;
  }

  std::string coding;
  bool has_length = false;
  for (const auto& [name, value] : out->headers.entries()) {
    if (equalsIgnoreCase(name, "Transfer-Encoding")) {
      coding += (coding.empty() ? "" : ",") + value;
    } else if (equalsIgnoreCase(name, "Content-Length")) {
      std::string_view digits = trimOws(value);
      size_t length = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
        return ReadOutcome::reject(400, "malformed Content-Length");
      }
      if (has_length && length != content_length_) {
        return ReadOutcome::reject(400, "conflicting Content-Length fields");
      }
      has_length = true;
      content_length_ = length;
    }
  }
  if (!coding.empty()) {
    if (lowerTrimmed(coding) != "chunked") {
      return ReadOutcome::reject(501, "unsupported transfer coding: " + coding);
    }
    if (has_length) {
      return ReadOutcome::reject(400, "both Transfer-Encoding and Content-Length");
    }
    chunked_ = true;
  }
  if (content_length_ > limits_.max_body_bytes) {
    return ReadOutcome::reject(
        413, "request body larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
  }
  return {};
}

ReadOutcome RequestReader::readChunked(std::string* out, SteadyClock::time_point deadline) {
  std::string line;
  for (;;) {
    ReadOutcome got = readLine(&line, kMaxChunkLine, deadline, 400);
    if (!got.ok()) return got;
    std::string_view size_text = trimOws(std::string_view(line).substr(0, line.find(';')));
    size_t size = 0;
    auto [end, ec] =
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (size_text.empty() || ec != std::errc() || end != size_text.data() + size_text.size()) {
      return ReadOutcome::reject(400, "malformed chunk size");
    }
    if (size == 0) break;
    if (size > limits_.max_body_bytes - out->size()) {
      return ReadOutcome::reject(
          413, "request body larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
    got = readExact(size, out, deadline);
    if (!got.ok()) return got;
    got = readLine(&line, kMaxChunkLine, deadline, 400);
    if (!got.ok()) return got;
    if (!line.empty()) return ReadOutcome::reject(400, "chunk data longer than its size");
  }
  // Trailer fields are read and dropped.
  size_t trailer_bytes = 0;
  for (;;) {
    ReadOutcome got = readLine(&line, limits_.max_head_bytes, deadline, 431);
    if (!got.ok()) return got;
    if (line.empty()) return {};
    trailer_bytes += line.size();
    if (trailer_bytes > limits_.max_head_bytes) {
      return ReadOutcome::reject(431, "trailer fields too large");
    }
  }
}

ReadOutcome RequestReader::readBody(Request* out) {
  const SteadyClock::time_point deadline = SteadyClock::now() + limits_.body_timeout;
  ReadOutcome result;
  if (chunked_) {
    result = readChunked(&out->body, deadline);
  } else if (content_length_ > 0) {
    out->body.reserve(content_length_);
    result = readExact(content_length_, &out->body, deadline);
  }
  chunked_ = false;
  content_length_ = 0;
  return result;
}

bool wantsKeepAlive(const Request& request) {
  bool close = false;
  bool keep_alive = false;
  for (const auto& [name, value] : request.headers.entries()) {
    if (!equalsIgnoreCase(name, "Connection")) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string option = lowerTrimmed(rest.substr(0, comma));
      close |= option == "close";
      keep_alive |= option == "keep-alive";
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  if (close) return false;
  return request.version_minor >= 1 || keep_alive;
}

}  // namespace ringmaster::local
