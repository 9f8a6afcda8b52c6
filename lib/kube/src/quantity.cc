#include "ringmaster/kube/quantity.h"

#include <cmath>
#include <limits>
#include <optional>

namespace ringmaster::kube {
namespace {

using Int128 = __int128;
constexpr int kMaxDigits = 18;  // significant digits kept exactly in a uint64

struct Suffix {
  std::string_view text;
  int exp10;
  int exp2;
};
constexpr Suffix kSuffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
    {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"", 0, 0},
};

int64_t saturate(Int128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

Quantity::Quantity(int64_t units) : text_(std::to_string(units)) {
  negative_ = units < 0;
  // Magnitude without overflowing on INT64_MIN.
  mantissa_ = negative_ ? uint64_t(0) - static_cast<uint64_t>(units) : static_cast<uint64_t>(units);
}

Quantity Quantity::fromMilli(int64_t milli) {
  if (milli % 1000 == 0) return Quantity(milli / 1000);
  Quantity q(milli);
  q.text_ += 'm';
  q.exp10_ = -3;
  return q;
}

core::Result<Quantity> Quantity::parse(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return core::invalidArgument("expected a quantity, got \"" + std::string(text) + "\" (" +
                                 std::string(why) + ")");
  };
  Quantity q;
  q.text_ = std::string(text);
  q.mantissa_ = 0;
  std::size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    q.negative_ = text[pos] == '-';
    ++pos;
  }
  int digits = 0, significant = 0, fraction_digits = 0;
  bool seen_point = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '.') {
      if (seen_point) return bad("two decimal points");
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    ++digits;
    if (seen_point) ++fraction_digits;
    if (significant == 0 && c == '0') continue;  // leading zeros carry no precision
    if (++significant > kMaxDigits) return bad("more than 18 significant digits");
    q.mantissa_ = q.mantissa_ * 10 + uint64_t(c - '0');
  }
  if (digits == 0) return bad("no digits");
  q.exp10_ = -fraction_digits;
  std::string_view suffix = text.substr(pos);
  const Suffix* match = nullptr;
  for (const Suffix& s : kSuffixes) {
    if (s.text == suffix) {
      match = &s;
      break;
    }
  }
  if (match != nullptr) {
    q.exp10_ += match->exp10;
    q.exp2_ = match->exp2;
  } else if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    // Decimal exponent: e3, E-2, e+20 ("E" alone and "Ei" are suffixes, matched above).
    std::size_t i = 1;
    bool neg = false;
    if (suffix[i] == '+' || suffix[i] == '-') neg = suffix[i++] == '-';
    if (i >= suffix.size()) return bad("exponent without digits");
    int exp = 0;
    for (; i < suffix.size(); ++i) {
      if (suffix[i] < '0' || suffix[i] > '9') return bad("bad exponent");
      exp = exp * 10 + (suffix[i] - '0');
      if (exp > 1000) return bad("exponent out of range");
    }
    q.exp10_ += neg ? -exp : exp;
  } else {
    return bad("unknown suffix \"" + std::string(suffix) + "\"");
  }
  return q;
}

int64_t Quantity::scaled(int exp10) const {
  if (mantissa_ == 0) return 0;
  // mantissa < 10^18 < 2^60 and exp2 <= 60, so this fits in 127 bits.
  Int128 v = static_cast<Int128>(mantissa_) << exp2_;
  int e = exp10_ + exp10;
  const Int128 kLimit = Int128(std::numeric_limits<int64_t>::max()) + 1;
  if (e >= 0) {
    for (int i = 0; i < e && v <= kLimit; ++i) v *= 10;
    return saturate(negative_ ? -v : v);
  }
  // Divide by 10^-e, rounding up (towards +infinity).
  Int128 quotient = v;
  bool remainder = false;
  for (int i = 0; i < -e && quotient > 0; ++i) {
    if (quotient % 10 != 0) remainder = true;
    quotient /= 10;
  }
  if (quotient == 0 && v != 0) remainder = true;
  if (negative_) return saturate(-quotient);
  return saturate(quotient + (remainder ? 1 : 0));
}

int64_t Quantity::value() const { return scaled(0); }
int64_t Quantity::milliValue() const { return scaled(3); }

double Quantity::asDouble() const {
  long double v = static_cast<long double>(mantissa_) * std::ldexp(1.0L, exp2_) *
                  std::pow(10.0L, static_cast<long double>(exp10_));
  return static_cast<double>(negative_ ? -v : v);
}

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, Quantity& out) {
  if (j.is_string()) {
    core::Result<Quantity> q = Quantity::parse(j.get_ref<const std::string&>());
    if (!q.ok()) return path.error(q.status().message());
    out = std::move(q).value();
    return core::Status::Ok();
  }
  if (j.is_number()) {
    core::Result<Quantity> q = Quantity::parse(j.dump());
    if (!q.ok()) return path.error(q.status().message());
    out = std::move(q).value();
    out.json_number_ = true;
    return core::Status::Ok();
  }
  return path.error("expected a quantity, got " + std::string(j.type_name()));
}

nlohmann::json toJson(const Quantity& in) {
  if (in.json_number_) {
    nlohmann::json number = nlohmann::json::parse(in.text_, nullptr, /*allow_exceptions=*/false);
    if (number.is_number()) return number;
  }
  return in.text_;
}

}  // namespace ringmaster::kube
