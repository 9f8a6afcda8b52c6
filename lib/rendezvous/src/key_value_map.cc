#include "key_value_map.h"

#include <charconv>

namespace ringmaster::rendezvous {

const Bytes* KeyValueMap::find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

core::Result<int64_t> KeyValueMap::add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  if (const Bytes* value = find(key)) {
    const char* begin = value->data();
    const char* end = begin + value->size();
    auto [ptr, ec] = std::from_chars(begin, end, current);
    if (ec != std::errc() || ptr != end || begin == end) {
      return core::invalidArgument("add on key '" + key +
                                   "': its value is not a decimal integer (set by set()?)");
    }
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) {
    return core::invalidArgument("add on key '" + key + "': " + std::to_string(current) + " + " +
                                 std::to_string(delta) + " overflows int64");
  }
  set(key, toBytes(std::to_string(sum)));
  return sum;
}

std::vector<std::string> KeyValueMap::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const auto& key : keys) {
    if (map_.find(key) == map_.end()) out.push_back(key);
  }
  return out;
}

std::string timeoutMessage(const std::vector<std::string>& missing,
                           std::chrono::milliseconds timeout) {
  std::string text =
      "timed out after " + std::to_string(timeout.count()) + " ms waiting for key(s): ";
  for (size_t i = 0; i < missing.size(); ++i) {
    if (i > 0) text += ", ";
    text += missing[i];
  }
  return text;
}

std::chrono::steady_clock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  // A year is "forever" for a rendezvous and keeps now + timeout far from overflow.
  constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365);
  if (timeout < std::chrono::milliseconds::zero()) timeout = std::chrono::milliseconds::zero();
  if (timeout > kForever) timeout = kForever;
  return std::chrono::steady_clock::now() + timeout;
}

}  // namespace ringmaster::rendezvous
