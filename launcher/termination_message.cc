#include "launcher/termination_message.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "ringmaster/core/utf8.h"
#include "ringmaster/kube/termination_message.h"

namespace ringmaster::launcher {
namespace {

std::string_view nextWord(std::string_view& rest) {
  const size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(start);
  const size_t end = std::min(rest.find(' '), rest.size());
  std::string_view word = rest.substr(0, end);
  rest.remove_prefix(end);
  return word;
}

// "2026-11-22T10:00:00.123Z": a date, 'T', a time, 'Z'.
bool looksLikeTimestamp(std::string_view word) {
  return word.size() >= 20 && word[4] == '-' && word[10] == 'T' && word.back() == 'Z';
}

// Cut at the limit on a UTF-8 character boundary.
std::string capped(std::string text, size_t limit) {
  text.resize(core::utf8Prefix(text, limit).size());
  return text;
}

}  // namespace

std::optional<std::string> errorLineText(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::string_view rest = line;
  if (!looksLikeTimestamp(nextWord(rest))) return std::nullopt;
  if (nextWord(rest) != "E") return std::nullopt;
  std::string_view subsystem = nextWord(rest);
  if (subsystem.empty()) return std::nullopt;
  const size_t text = rest.find_first_not_of(' ');
  std::string out = "E " + std::string(subsystem);
  if (text != std::string_view::npos) out += " " + std::string(rest.substr(text));
  return out;
}

void ErrorLines::feed(std::string_view line, int64_t unix_ms) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (std::optional<std::string> error = errorLineText(line)) {
    core_error_ = capped(std::move(*error), kMaxLineBytes);
    if (first_error_ms_ == 0) first_error_ms_ = unix_ms;
    return;
  }
  const size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return;
  const std::string text = capped(std::string(line), kMaxLineBytes);
  if (line.starts_with("Traceback (most recent call last):")) {
    in_traceback_ = true;
    if (first_error_ms_ == 0) first_error_ms_ = unix_ms;
  } else if (in_traceback_ && first == 0) {
    exception_ = text;
    in_traceback_ = false;
  }
  last_ = text;
}

std::string ErrorLines::best() const {
  if (!core_error_.empty()) return core_error_;
  if (!exception_.empty()) return exception_;
  return last_;
}

std::string failureMessage(std::string_view reason, std::string_view error_line) {
  std::string out(reason);
  if (!error_line.empty()) out += ": " + std::string(error_line);
  return capped(std::move(out), kube::kMaxTerminationMessageBytes);
}

std::optional<std::string> summaryMessage(std::string_view summary_json) {
  nlohmann::json j = nlohmann::json::parse(summary_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  std::string out = j.dump();
  if (out.size() > kube::kMaxTerminationMessageBytes) return std::nullopt;
  return out;
}

core::Status writeTerminationMessage(const std::string& path, std::string_view message) {
  // In place and never created: in a pod the kubelet provides the file (a bind mount); outside
  // one nothing may appear at /dev/termination-log.
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return core::errnoError("termination message " + path, errno);
  size_t done = 0;
  while (done < message.size()) {
    const ssize_t n = ::write(fd, message.data() + done, message.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return core::errnoError("writing termination message " + path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return core::errnoError("closing termination message " + path, errno);
  return core::Status::Ok();
}

}  // namespace ringmaster::launcher
