#include "local/kubelet/termination_message.h"

#include <algorithm>
#include <fstream>

#include "ringmaster/kube/termination_message.h"

namespace ringmaster::local::kubelet {

namespace fs = std::filesystem;

std::string terminationMessagePath(const kube::Container& container) {
  const auto& path = container.termination_message_path;
  return path && !path->empty() ? *path : std::string(kube::kDefaultTerminationMessagePath);
}

std::string terminationMessagePolicy(const kube::Container& container) {
  const auto& policy = container.termination_message_policy;
  return policy && !policy->empty() ? *policy : std::string(kube::kTerminationMessagePolicyFile);
}

std::string logTail(std::string_view log, size_t max_lines, size_t max_bytes) {
  // A final newline ends the last line; it does not start another.
  size_t start = log.size();
  size_t lines = 0;
  size_t scan = log.size();
  if (scan > 0 && log[scan - 1] == '\n') --scan;
  while (scan > 0 && lines < max_lines) {
    const size_t nl = log.rfind('\n', scan - 1);
    start = nl == std::string_view::npos ? 0 : nl + 1;
    ++lines;
    if (nl == std::string_view::npos) break;
    scan = nl;
  }
  if (lines == 0) start = 0;
  std::string_view tail = log.substr(start);
  if (tail.size() > max_bytes) tail = tail.substr(0, max_bytes);
  return std::string(tail);
}

std::optional<std::string> terminationMessage(std::string_view file, std::string_view policy,
                                              int exit_code, std::string_view log_tail) {
  if (!file.empty()) return std::string(file);
  if (policy == kube::kTerminationMessagePolicyFallbackToLogsOnError && exit_code != 0 &&
      !log_tail.empty()) {
    return std::string(log_tail);
  }
  return std::nullopt;
}

fs::path messageFile(const fs::path& pod_dir, const std::string& name) {
  return pod_dir / (name + ".termination-log");
}

namespace {

// At most `max` bytes of `path` from `offset` (negative: that many bytes before the end).
std::string readSome(const fs::path& path, std::streamoff offset, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  if (offset < 0) {
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    in.seekg(std::max<std::streamoff>(0, size + offset));
  }
  std::string out(max, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return out;
}

}  // namespace

std::optional<std::string> readTerminationMessage(const fs::path& message_file,
                                                  const fs::path& log_file, std::string_view policy,
                                                  int exit_code) {
  const std::string file =
      readSome(message_file, -static_cast<std::streamoff>(kube::kMaxTerminationMessageBytes),
               kube::kMaxTerminationMessageBytes);
  std::string tail;
  if (file.empty() && policy == kube::kTerminationMessagePolicyFallbackToLogsOnError &&
      exit_code != 0) {
    // 80 lines of ordinary log fit in the last 64 KiB; longer ones start mid-line.
    constexpr size_t kWindow = 64 * 1024;
    tail = logTail(readSome(log_file, -static_cast<std::streamoff>(kWindow), kWindow),
                   kube::kMaxTerminationMessageLogLines, kube::kMaxTerminationMessageLogBytes);
  }
  return terminationMessage(file, policy, exit_code, tail);
}

}  // namespace ringmaster::local::kubelet
