#pragma once
// A container's termination message, as Kubernetes defines it: the container may write it to the
// file at its terminationMessagePath; the kubelet reads at most kMaxTerminationMessageBytes of it
// into status.containerStatuses[].state.terminated.message when the container exits. Policy
// FallbackToLogsOnError: an empty file of a failed container gives the tail of its log instead.
// Header-only and dependency-free: the launcher (which writes the file) shares it without
// linking the client library.

#include <cstddef>
#include <string_view>

namespace ringmaster::kube {

inline constexpr std::string_view kDefaultTerminationMessagePath = "/dev/termination-log";
inline constexpr std::string_view kTerminationMessagePolicyFile = "File";
inline constexpr std::string_view kTerminationMessagePolicyFallbackToLogsOnError =
    "FallbackToLogsOnError";
// The kubelet's caps: the file, and the log tail of FallbackToLogsOnError (lines, then bytes).
inline constexpr size_t kMaxTerminationMessageBytes = 4096;
inline constexpr size_t kMaxTerminationMessageLogLines = 80;
inline constexpr size_t kMaxTerminationMessageLogBytes = 2048;

}  // namespace ringmaster::kube
