#pragma once
// Container termination messages the way the kubelet produces them (see
// ringmaster/kube/termination_message.h for the semantics and the caps):
//   - each run of a container gets an empty per-container file in the pod's directory, which the
//     container sees at its terminationMessagePath (a bind mount; process_launcher.h);
//   - on exit the file's last kMaxTerminationMessageBytes bytes are the message (the kubelet
//     reads the end of the file); under FallbackToLogsOnError an empty file of a container that
//     exited non-zero gives the last kMaxTerminationMessageLogLines lines of its log, of which
//     the kubelet's log reader stops after kMaxTerminationMessageLogBytes.
// The decisions are pure; reading the files is at the edge (readMessageInputs).
//
// Thread-safety: pure functions plus file reads. Failure: unreadable files read as empty (the
// container may never have written one); the message is then absent, as on Kubernetes.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

// The container's terminationMessagePath and policy with the API server's defaults applied.
std::string terminationMessagePath(const kube::Container& container);
std::string terminationMessagePolicy(const kube::Container& container);

// The last `max_lines` lines of `log`, then at most the first `max_bytes` bytes of those.
std::string logTail(std::string_view log, size_t max_lines, size_t max_bytes);

// What state.terminated.message becomes (nullopt: no message). `file` is what the container
// wrote (already capped), `log_tail` the tail of its log (logTail's caps).
std::optional<std::string> terminationMessage(std::string_view file, std::string_view policy,
                                              int exit_code, std::string_view log_tail);

// The host file behind a container's terminationMessagePath: <pod dir>/<container>.termination-log.
std::filesystem::path messageFile(const std::filesystem::path& pod_dir, const std::string& name);

// Reads the message file (capped) and, when the policy may need it, the log's tail, and
// returns terminationMessage() of them.
std::optional<std::string> readTerminationMessage(const std::filesystem::path& message_file,
                                                  const std::filesystem::path& log_file,
                                                  std::string_view policy, int exit_code);

}  // namespace ringmaster::local::kubelet
