#pragma once
// Status and Result<T>: errors as values, each carrying a code and a message with context
// ("rank 1: allreduce bucket 3 (4194304 bytes): connection reset").
//
// Thread-safety: value types; no shared state. Failure: none (these *are* the failure path).

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ringmaster::core {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // bad input from a user: config, data file, environment (exit 1)
  kUsage,            // bad command line (exit 2)
  kNotFound,
  kAlreadyExists,
  kTimeout,
  kUnavailable,  // peer or service unreachable; retry may help
  kDataLoss,     // corrupt or truncated file
  kCancelled,    // stop requested (SIGTERM)
  kInternal,
};

std::string_view codeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message reads "<context>: <message>".
  Status withContext(std::string_view context) const&;
  Status withContext(std::string_view context) &&;

  // Process exit code: 0 ok, 2 usage, 1 everything else.
  int exitCode() const;

  std::string toString() const;

  bool operator==(const Status&) const = default;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status usageError(std::string m) { return {Code::kUsage, std::move(m)}; }
inline Status notFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status timeoutError(std::string m) { return {Code::kTimeout, std::move(m)}; }
inline Status unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status dataLoss(std::string m) { return {Code::kDataLoss, std::move(m)}; }
inline Status cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
inline Status internalError(std::string m) { return {Code::kInternal, std::move(m)}; }
// An error from a C call that sets errno: "<what>: <strerror(errno)>".
Status errnoError(std::string_view what, int err);

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(Code::kInternal, "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ringmaster::core

#define RM_CONCAT_INNER_(a, b) a##b
#define RM_CONCAT_(a, b) RM_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not ok.
#define RM_RETURN_IF_ERROR(expr)                    \
  do {                                              \
    ::ringmaster::core::Status rm_status_ = (expr); \
    if (!rm_status_.ok()) return rm_status_;        \
  } while (0)

// Like RM_RETURN_IF_ERROR, adding context to the message.
#define RM_RETURN_IF_ERROR_CTX(expr, ctx)                                \
  do {                                                                   \
    ::ringmaster::core::Status rm_status_ = (expr);                      \
    if (!rm_status_.ok()) return std::move(rm_status_).withContext(ctx); \
  } while (0)

// `lhs = value of expr` or return its error. lhs may be a declaration: RM_ASSIGN_OR_RETURN(auto x,
// f());
#define RM_ASSIGN_OR_RETURN(lhs, expr) \
  RM_ASSIGN_OR_RETURN_IMPL_(RM_CONCAT_(rm_result_, __LINE__), lhs, expr)
#define RM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
