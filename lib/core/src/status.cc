#include "ringmaster/core/status.h"

#include <cstring>

namespace ringmaster::core {

std::string_view codeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kUsage:
      return "USAGE";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kAlreadyExists:
      return "ALREADY_EXISTS";
    case Code::kTimeout:
      return "TIMEOUT";
    case Code::kUnavailable:
      return "UNAVAILABLE";
    case Code::kDataLoss:
      return "DATA_LOSS";
    case Code::kCancelled:
      return "CANCELLED";
    case Code::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

Status Status::withContext(std::string_view context) const& {
  Status copy = *this;
  return std::move(copy).withContext(context);
}

Status Status::withContext(std::string_view context) && {
  if (!ok()) message_ = std::string(context) + ": " + message_;
  return std::move(*this);
}

int Status::exitCode() const {
  if (ok()) return 0;
  return code_ == Code::kUsage ? 2 : 1;
}

std::string Status::toString() const {
  if (ok()) return "OK";
  return message_;
}

Status errnoError(std::string_view what, int err) {
  char buf[256];
  const char* text = strerror_r(err, buf, sizeof buf);  // GNU variant returns the text
  Code code = Code::kInternal;
  if (err == ENOENT) code = Code::kNotFound;
  if (err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNRESET ||
      err == EPIPE)
    code = Code::kUnavailable;
  if (err == ETIMEDOUT) code = Code::kTimeout;
  return {code, std::string(what) + ": " + text};
}

}  // namespace ringmaster::core
