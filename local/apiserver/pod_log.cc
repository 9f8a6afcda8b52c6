#include "local/apiserver/pod_log.h"

#include <chrono>
#include <fstream>

#include "local/store/names.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/json.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using core::stringMember;
namespace fs = std::filesystem;

const ResourceKey kPods{"", "pods"};
const ResourceKey kNodes{"", "nodes"};

const json& field(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it != obj.end() ? *it : kNull;
}

std::vector<std::string> containerNames(const json& pod, const char* list) {
  std::vector<std::string> out;
  const json& cs = field(field(pod, "spec"), list);
  if (cs.is_array()) {
    for (const auto& c : cs) out.push_back(stringMember(c, "name"));
  }
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// The container's entry in status.containerStatuses (or initContainerStatuses), or null.
const json& containerStatus(const json& pod, const std::string& container) {
  static const json kNull;
  for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
    const json& cs = field(field(pod, "status"), list);
    if (!cs.is_array()) continue;
    for (const auto& c : cs) {
      if (stringMember(c, "name") == container) return c;
    }
  }
  return kNull;
}

std::optional<int64_t> parseNonNegative(const Request& r, const char* name,
                                        std::optional<StatusError>* error) {
  const std::string* v = r.queryParam(name);
  if (!v) return std::nullopt;
  auto n = core::parseInt(*v);
  if (!n.ok()) {
    *error = badRequestError("couldn't parse " + std::string(name) + ": " + *v);
    return std::nullopt;
  }
  if (*n < 0) {
    *error = invalidError(
        "PodLogOptions", "", "",
        {{"FieldValueInvalid",
          "Invalid value: " + std::to_string(*n) + ": must be greater than or equal to 0", name}});
  }
  return *n;
}

bool truthy(const std::string* v) { return v && (*v == "true" || *v == "1" || *v == "True"); }

void sendError(ResponseWriter& w, const StatusError& e) {
  Headers h;
  h.add("Cache-Control", "no-cache, private");
  h.add("Content-Type", "application/json");
  (void)w.send(e.code(), std::move(h), e.bodyText());
}

}  // namespace

ApiResult<PodLogOptions> parsePodLogOptions(const Request& r) {
  PodLogOptions o;
  std::optional<StatusError> error;
  if (const std::string* c = r.queryParam("container")) o.container = *c;
  o.follow = truthy(r.queryParam("follow"));
  o.previous = truthy(r.queryParam("previous"));
  o.tail_lines = parseNonNegative(r, "tailLines", &error);
  if (!error) o.limit_bytes = parseNonNegative(r, "limitBytes", &error);
  if (!error) o.since_seconds = parseNonNegative(r, "sinceSeconds", &error);
  if (error) return *error;
  if (const std::string* t = r.queryParam("sinceTime")) {
    core::Result<kube::Time> since = kube::Time::parse(*t);
    if (!since.ok()) return badRequestError("couldn't parse sinceTime: " + *t);
    o.since_time = since->timePoint();
  }
  if (o.since_seconds && o.since_time) {
    return invalidError(
        "PodLogOptions", "", "",
        {{"FieldValueForbidden",
          "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified", ""}});
  }
  return o;
}

ApiResult<std::string> podLogContainer(const json& pod, const std::string& container) {
  const std::string name = stringMember(field(pod, "metadata"), "name");
  const auto names = containerNames(pod, "containers");
  const auto init_names = containerNames(pod, "initContainers");
  if (container.empty()) {
    if (names.size() == 1) return names[0];
    if (names.empty()) {
      return badRequestError("a container name must be specified for pod " + name);
    }
    std::string msg = "a container name must be specified for pod " + name + ", choose one of: [" +
                      joined(names) + "]";
    if (!init_names.empty()) msg += " or one of the init containers: [" + joined(init_names) + "]";
    return badRequestError(msg);
  }
  for (const auto* list : {&names, &init_names}) {
    for (const auto& n : *list) {
      if (n == container) return container;
    }
  }
  return badRequestError("container " + container + " is not valid for pod " + name);
}

ApiResult<fs::path> podLogPath(const ObjectStore& store, const json& pod,
                               const std::string& container, bool previous) {
  const json& meta = field(pod, "metadata");
  const std::string node_name = stringMember(field(pod, "spec"), "nodeName");
  auto node = store.get(kNodes, "", node_name);
  if (!node.ok()) return node.error();
  const std::string root = stringMember(field(field((*node)->object, "metadata"), "annotations"),
                                        kKubeletRootAnnotation);
  if (root.empty()) {
    // As kube-apiserver reports a kubelet it cannot reach: 500 without a reason.
    return StatusError(500, "",
                       "node " + node_name + " has no kubelet log root (annotation " +
                           kKubeletRootAnnotation + ")");
  }
  // The kubelet's layout has one file per container in the pod's directory: a container name
  // that is no DNS-1123 label (our server does not validate pod specs) could name any file.
  if (!nameProblems(NameRule::kDns1123Label, container).empty()) {
    return badRequestError("container " + container + " is not valid for pod " +
                           stringMember(meta, "name"));
  }
  return fs::path(root) / "pods" / stringMember(meta, "namespace") /
         (stringMember(meta, "name") + "_" + stringMember(meta, "uid")) /
         (container + (previous ? ".previous.log" : ".log"));
}

StatusError containerNotReadableError(const json& pod, const std::string& container,
                                      bool previous) {
  const std::string pod_name = stringMember(field(pod, "metadata"), "name");
  const std::string who = "\"" + container + "\" in pod \"" + pod_name + "\"";
  if (previous) return badRequestError("previous terminated container " + who + " not found");
  const json& cs = containerStatus(pod, container);
  if (cs.is_null()) return badRequestError("container " + who + " is not available");
  const json& state = field(cs, "state");
  if (field(state, "terminated").is_object()) {
    return badRequestError("container " + who + " is terminated");
  }
  if (field(state, "waiting").is_object()) {
    const std::string reason = stringMember(field(state, "waiting"), "reason");
    if (reason == "ErrImagePull") {
      return badRequestError("container " + who + " is waiting to start: image can't be pulled");
    }
    if (reason == "ImagePullBackOff") {
      return badRequestError("container " + who +
                             " is waiting to start: trying and failing to pull image");
    }
    return badRequestError("container " + who + " is waiting to start: " + reason);
  }
  return badRequestError("container " + who + " is not available");
}

bool containerTerminated(const json& pod, const std::string& container) {
  const std::string phase = stringMember(field(pod, "status"), "phase");
  if (phase == "Succeeded" || phase == "Failed") return true;
  const json& cs = containerStatus(pod, container);
  return field(field(cs, "state"), "terminated").is_object();
}

void servePodLog(const ObjectStore& store, const Request& r, ResponseWriter& w,
                 const std::string& ns, const std::string& name) {
  auto options = parsePodLogOptions(r);
  if (!options.ok()) return sendError(w, options.error());
  auto got = store.get(kPods, ns, name);
  if (!got.ok()) return sendError(w, got.error());
  json pod = (*got)->object;
  const std::string uid = stringMember(field(pod, "metadata"), "uid");
  auto container = podLogContainer(pod, options->container);
  if (!container.ok()) return sendError(w, container.error());
  // Not yet scheduled: kube-apiserver has no kubelet to ask and answers an empty log.
  if (stringMember(field(pod, "spec"), "nodeName").empty()) {
    (void)w.send(200, logFileHeaders(), "");
    return;
  }
  auto path = podLogPath(store, pod, *container, options->previous);
  if (!path.ok()) return sendError(w, path.error());
  if (!std::ifstream(*path, std::ios::binary)) {
    return sendError(w, containerNotReadableError(pod, *container, options->previous));
  }
  LogFileOptions file_options;
  file_options.follow = options->follow;
  file_options.tail_lines = options->tail_lines;
  file_options.limit_bytes = options->limit_bytes;
  if (options->since_seconds) {
    file_options.since =
        std::chrono::system_clock::now() - std::chrono::seconds(*options->since_seconds);
  } else if (options->since_time) {
    file_options.since = options->since_time;
  }
  // The run is over once its status says so (or the pod is gone); a previous run always is.
  const bool previous = options->previous;
  sendLogFile(*path, file_options, w, [&] {
    auto now_pod = store.get(kPods, ns, name);
    return previous || !now_pod.ok() ||
           stringMember(field((*now_pod)->object, "metadata"), "uid") != uid ||
           containerTerminated((*now_pod)->object, *container);
  });
}

}  // namespace ringmaster::local
