#pragma once
// GET pods/{name}/log: container logs where the local kubelet writes them:
// pod -> spec.nodeName -> that Node's annotation local.ringmaster.dev/kubelet-root = R ->
// R/pods/<ns>/<pod>_<uid>/<container>.log (`previous=true`: <container>.previous.log).
// Query: container, follow, previous, tailLines, limitBytes, sinceSeconds/sinceTime (whole-file
// granularity: the file's mtime decides, the log has no per-line times), timestamps (ignored, see
// local/README.md). Answers 200 text/plain; with follow=true a chunked stream that ends once the
// container has terminated (its status, or the file was rotated away) and the file is drained,
// or when the client goes away. Errors are the texts kube-apiserver and the kubelet use.
//
// Thread-safety: runs on the request's connection thread; reads the store and the file only.
// Failure: answered as Status bodies (400 bad container / waiting container, 404 pod or node).

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "local/https/http_message.h"
#include "local/https/log_file.h"
#include "local/https/response_writer.h"
#include "local/store/object_store.h"

namespace ringmaster::local {

inline constexpr const char* kKubeletRootAnnotation = "local.ringmaster.dev/kubelet-root";

struct PodLogOptions {
  std::string container;
  bool follow = false;
  bool previous = false;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
  std::optional<int64_t> since_seconds;
  // RFC 3339 with any offset, "2026-11-22T12:00:00+02:00" (kube::Time reads it).
  std::optional<std::chrono::system_clock::time_point> since_time;
};

// The query of a pods/log request; 400 for a malformed number, 422 for a negative one.
ApiResult<PodLogOptions> parsePodLogOptions(const Request& request);

// Which container of `pod` the request means (the only one when not named), or kube-apiserver's
// 400: "a container name must be specified for pod P, choose one of: [a b]" /
// "container X is not valid for pod P".
ApiResult<std::string> podLogContainer(const nlohmann::json& pod, const std::string& container);

// The log file of `container` (pod must be bound; the node must carry the annotation).
ApiResult<std::filesystem::path> podLogPath(const ObjectStore& store, const nlohmann::json& pod,
                                            const std::string& container, bool previous);

// Why there is no log to read for a container that has no file yet, from its status (the
// kubelet's texts): "container \"c\" in pod \"p\" is waiting to start: ContainerCreating", …
StatusError containerNotReadableError(const nlohmann::json& pod, const std::string& container,
                                      bool previous);

// Whether the container's current run is over (terminated state, or the pod is finished/gone).
bool containerTerminated(const nlohmann::json& pod, const std::string& container);

// The whole handler.
void servePodLog(const ObjectStore& store, const Request& request, ResponseWriter& writer,
                 const std::string& ns, const std::string& name);

}  // namespace ringmaster::local
