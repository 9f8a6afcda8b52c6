#include "local/store/meta_util.h"

#include <array>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>

#include "ringmaster/core/base64.h"
#include "ringmaster/core/json.h"

namespace ringmaster::local {

RandomSource::RandomSource() {
  std::random_device rd;
  rng_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

std::string RandomSource::uuid4() {
  uint64_t hi = rng_(), lo = rng_();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 10
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  auto put = [&](uint64_t v, int nibbles) {
    for (int i = nibbles - 1; i >= 0; --i) out.push_back(kHex[(v >> (i * 4)) & 0xF]);
  };
  put(hi >> 32, 8);
  out.push_back('-');
  put((hi >> 16) & 0xFFFF, 4);
  out.push_back('-');
  put(hi & 0xFFFF, 4);
  out.push_back('-');
  put(lo >> 48, 4);
  out.push_back('-');
  put(lo & 0xFFFFFFFFFFFFULL, 12);
  return out;
}

std::string RandomSource::nameSuffix() {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < 5; ++i) out.push_back(kAlphabet[rng_() % kAlphabet.size()]);
  return out;
}

std::string formatTimestamp(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

std::string encodeContinueToken(const ContinueToken& token) {
  // Key order as upstream: v, rv, start.
  nlohmann::ordered_json j;
  j["v"] = "meta.k8s.io/v1";
  j["rv"] = token.rv;
  j["start"] = token.start;
  return core::base64UrlEncode(j.dump());
}

std::optional<ContinueToken> decodeContinueToken(std::string_view text) {
  auto raw = core::base64UrlDecode(text);
  if (!raw) return std::nullopt;
  auto parsed = core::parseJson(*raw);  // a client's continue parameter
  if (!parsed.ok()) return std::nullopt;
  const nlohmann::json& j = *parsed;
  // A client's token may hold any type under "v": compare as JSON (a conversion would throw).
  if (!j.is_object() || j.value("v", nlohmann::json()) != "meta.k8s.io/v1") return std::nullopt;
  auto rv = j.find("rv");
  auto start = j.find("start");
  if (rv == j.end() || !rv->is_number_integer() || start == j.end() || !start->is_string())
    return std::nullopt;
  return ContinueToken{rv->get<int64_t>(), start->get<std::string>()};
}

}  // namespace ringmaster::local
