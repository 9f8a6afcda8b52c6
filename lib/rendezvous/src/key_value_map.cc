#include "key_value_map.h"

#include <charconv>

namespace ringmaster::rendezvous {

namespace {

// Long keys are shown by their start only: the message must stay one readable line.
std::string shortKey(const std::string& key) {
  constexpr size_t kShown = 80;
  return key.size() <= kShown ? key : key.substr(0, kShown) + "...";
}

}  // namespace

core::Status KeyValueMap::checkKey(const std::string& key) const {
  if (key.size() > limits_.max_key_bytes) {
    return core::invalidArgument("key '" + shortKey(key) + "' is " + std::to_string(key.size()) +
                                 " bytes, over the limit of " +
                                 std::to_string(limits_.max_key_bytes));
  }
  return core::Status::Ok();
}

core::Status KeyValueMap::set(const std::string& key, Bytes value) {
  RM_RETURN_IF_ERROR(checkKey(key));
  if (value.size() > limits_.max_value_bytes) {
    return core::invalidArgument("value of key '" + shortKey(key) + "' is " +
                                 std::to_string(value.size()) + " bytes, over the limit of " +
                                 std::to_string(limits_.max_value_bytes));
  }
  auto it = map_.find(key);
  const size_t old_bytes =
      it == map_.end() ? 0 : key.size() + it->second.size() + StoreLimits::kEntryOverheadBytes;
  const size_t new_bytes = key.size() + value.size() + StoreLimits::kEntryOverheadBytes;
  if (it == map_.end() && map_.size() >= limits_.max_keys) {
    return core::invalidArgument("set '" + shortKey(key) + "': the store already holds " +
                                 std::to_string(map_.size()) + " keys, its limit");
  }
  if (bytes_ - old_bytes + new_bytes > limits_.max_total_bytes) {
    return core::invalidArgument("set '" + shortKey(key) + "': the store would hold " +
                                 std::to_string(bytes_ - old_bytes + new_bytes) +
                                 " bytes, over its limit of " +
                                 std::to_string(limits_.max_total_bytes));
  }
  bytes_ = bytes_ - old_bytes + new_bytes;
  if (it == map_.end()) {
    map_.emplace(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  return core::Status::Ok();
}

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
  RM_RETURN_IF_ERROR(set(key, toBytes(std::to_string(sum))));
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
