#pragma once
// Kubernetes timestamps.
//   Time       metav1.Time: RFC 3339 in UTC to the second, "2026-11-22T10:00:00Z". Accepts any
//              RFC 3339 form on decode (fraction, offset) and keeps whole seconds, as the API
//              server does, so a value read back from the server compares equal to the one written.
//   MicroTime  metav1.MicroTime (Lease acquireTime/renewTime, Event eventTime): exactly six
//              fractional digits, "2026-11-22T02:01:03.874063Z". The API server rejects any other
//              fraction, so decode does too.
// The default-constructed value is the zero time, which Kubernetes writes as JSON null
// ("eventTime": null, "lastProbeTime": null).
//
// Thread-safety: immutable values. Failure: parse() returns InvalidArgument quoting the text.

#include <chrono>
#include <compare>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/field_path.h"

namespace ringmaster::kube {

class Time {
 public:
  using Clock = std::chrono::system_clock;

  Time() = default;                     // the zero time (JSON null)
  explicit Time(Clock::time_point tp);  // truncated to whole seconds
  static Time fromUnixSeconds(int64_t seconds);

  static core::Result<Time> parse(std::string_view text);
  std::string toString() const;  // "" for the zero time

  bool isZero() const { return !set_; }
  Clock::time_point timePoint() const { return Clock::time_point(seconds_); }
  int64_t unixSeconds() const { return seconds_.count(); }

  friend bool operator==(const Time&, const Time&) = default;
  friend auto operator<=>(const Time&, const Time&) = default;

 private:
  bool set_ = false;
  std::chrono::seconds seconds_{0};  // since the Unix epoch
};

class MicroTime {
 public:
  using Clock = std::chrono::system_clock;

  MicroTime() = default;                     // the zero time (JSON null)
  explicit MicroTime(Clock::time_point tp);  // truncated to whole microseconds
  static MicroTime fromUnixMicros(int64_t micros);

  static core::Result<MicroTime> parse(std::string_view text);
  std::string toString() const;  // "" for the zero time

  bool isZero() const { return !set_; }
  Clock::time_point timePoint() const {
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(micros_));
  }
  int64_t unixMicros() const { return micros_.count(); }

  friend bool operator==(const MicroTime&, const MicroTime&) = default;
  friend auto operator<=>(const MicroTime&, const MicroTime&) = default;

 private:
  bool set_ = false;
  std::chrono::microseconds micros_{0};  // since the Unix epoch
};

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, Time& out);
nlohmann::json toJson(const Time& in);
core::Status fromJson(const nlohmann::json& j, const FieldPath& path, MicroTime& out);
nlohmann::json toJson(const MicroTime& in);

}  // namespace ringmaster::kube
