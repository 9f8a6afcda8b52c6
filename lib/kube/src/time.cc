#include "ringmaster/kube/time.h"

#include <cstdio>
#include <optional>

namespace ringmaster::kube {
namespace {

using std::chrono::microseconds;

// How many fractional-second digits a format accepts.
enum class Fraction { kAny, kExactlySix };

bool readDigits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

// RFC 3339 "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)" -> microseconds since the epoch
// (fractions beyond microseconds are truncated).
std::optional<microseconds> parseRfc3339(std::string_view s, Fraction fraction) {
  int year, month, day, hour, minute, second;
  if (!readDigits(s, 0, 4, year) || s.size() < 19 || s[4] != '-' || !readDigits(s, 5, 2, month) ||
      s[7] != '-' || !readDigits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') ||
      !readDigits(s, 11, 2, hour) || s[13] != ':' || !readDigits(s, 14, 2, minute) ||
      s[16] != ':' || !readDigits(s, 17, 2, second)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  int64_t micros = 0;
  int digits = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 6; ++i) micros *= 10;
  }
  if (fraction == Fraction::kExactlySix && digits != 6) return std::nullopt;
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!readDigits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !readDigits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(month),
                                  std::chrono::day(day)};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;
  auto t = std::chrono::sys_days(ymd).time_since_epoch() + std::chrono::hours(hour) +
           std::chrono::minutes(minute - offset_minutes) + std::chrono::seconds(second);
  return std::chrono::duration_cast<microseconds>(t) + microseconds(micros);
}

// "YYYY-MM-DDTHH:MM:SS" in UTC, then the fraction (if any) and "Z".
std::string formatRfc3339(microseconds since_epoch, bool six_digit_fraction) {
  auto secs = std::chrono::floor<std::chrono::seconds>(since_epoch);
  auto days = std::chrono::floor<std::chrono::days>(secs);
  std::chrono::year_month_day ymd{std::chrono::sys_days(days)};
  std::chrono::hh_mm_ss<std::chrono::seconds> hms(secs - days);
  char buf[40];
  int n = std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02d", int(ymd.year()),
                        unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                        int(hms.minutes().count()), int(hms.seconds().count()));
  std::string out(buf, n);
  if (six_digit_fraction) {
    std::snprintf(buf, sizeof(buf), ".%06lld",
                  static_cast<long long>((since_epoch - secs).count()));
    out += buf;
  }
  out += 'Z';
  return out;
}

template <class T>
core::Status decodeTime(const nlohmann::json& j, const FieldPath& path, T& out,
                        std::string_view what) {
  if (j.is_null()) {
    out = T();
    return core::Status::Ok();
  }
  if (!j.is_string()) {
    return path.error("expected " + std::string(what) + " string, got " +
                      std::string(j.type_name()));
  }
  core::Result<T> parsed = T::parse(j.get_ref<const std::string&>());
  if (!parsed.ok()) return path.error(parsed.status().message());
  out = *parsed;
  return core::Status::Ok();
}

}  // namespace

Time::Time(Clock::time_point tp)
    : set_(true), seconds_(std::chrono::floor<std::chrono::seconds>(tp.time_since_epoch())) {}

Time Time::fromUnixSeconds(int64_t seconds) {
  return Time(Clock::time_point(std::chrono::seconds(seconds)));
}

core::Result<Time> Time::parse(std::string_view text) {
  std::optional<microseconds> t = parseRfc3339(text, Fraction::kAny);
  if (!t) {
    return core::invalidArgument("expected an RFC 3339 time (2026-11-22T10:00:00Z), got \"" +
                                 std::string(text) + "\"");
  }
  Time out;
  out.set_ = true;
  out.seconds_ = std::chrono::floor<std::chrono::seconds>(*t);
  return out;
}

std::string Time::toString() const {
  return set_ ? formatRfc3339(std::chrono::duration_cast<microseconds>(seconds_), false) : "";
}

MicroTime::MicroTime(Clock::time_point tp)
    : set_(true), micros_(std::chrono::floor<microseconds>(tp.time_since_epoch())) {}

MicroTime MicroTime::fromUnixMicros(int64_t micros) {
  MicroTime out;
  out.set_ = true;
  out.micros_ = microseconds(micros);
  return out;
}

core::Result<MicroTime> MicroTime::parse(std::string_view text) {
  std::optional<microseconds> t = parseRfc3339(text, Fraction::kExactlySix);
  if (!t) {
    return core::invalidArgument(
        "expected an RFC 3339 time with 6 fractional digits (2026-11-22T02:01:03.874063Z), got "
        "\"" +
        std::string(text) + "\"");
  }
  return fromUnixMicros(t->count());
}

std::string MicroTime::toString() const { return set_ ? formatRfc3339(micros_, true) : ""; }

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, Time& out) {
  return decodeTime(j, path, out, "a time");
}

nlohmann::json toJson(const Time& in) {
  return in.isZero() ? nlohmann::json(nullptr) : nlohmann::json(in.toString());
}

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, MicroTime& out) {
  return decodeTime(j, path, out, "a time");
}

nlohmann::json toJson(const MicroTime& in) {
  return in.isZero() ? nlohmann::json(nullptr) : nlohmann::json(in.toString());
}

}  // namespace ringmaster::kube
