#include "local/kubelet/pod_env.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ringmaster::local::kubelet {

std::string expandVars(std::string_view text,
                       const std::function<const std::string*(const std::string&)>& lookup) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    char next = text[i + 1];
    if (next == '$') {  // "$$" is an escaped "$"
      out += '$';
      i += 2;
      continue;
    }
    if (next == '(') {
      size_t close = text.find(')', i + 2);
      if (close != std::string_view::npos) {
        std::string name(text.substr(i + 2, close - i - 2));
        const std::string* value = name.empty() ? nullptr : lookup(name);
        if (value) {
          out += *value;
        } else {
          out.append(text.substr(i, close - i + 1));
        }
        i = close + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

namespace {

// "metadata.labels['app']" -> "app" when `path` starts with `prefix` + "['" and ends "']".
std::optional<std::string> subscript(const std::string& path, const std::string& prefix) {
  if (path.rfind(prefix + "['", 0) != 0 || path.size() < prefix.size() + 4) return std::nullopt;
  if (path.compare(path.size() - 2, 2, "']") != 0) return std::nullopt;
  return path.substr(prefix.size() + 2, path.size() - prefix.size() - 4);
}

}  // namespace

core::Result<std::string> fieldRefValue(const kube::Pod& pod, const std::string& field_path,
                                        const PodFacts& facts) {
  const auto& m = pod.metadata;
  if (field_path == "metadata.name") return m.name;
  if (field_path == "metadata.namespace") return m.namespace_name;
  if (field_path == "metadata.uid") return m.uid;
  if (field_path == "spec.nodeName") {
    return pod.spec.node_name.empty() ? facts.node_name : pod.spec.node_name;
  }
  if (field_path == "spec.serviceAccountName") return pod.spec.service_account_name;
  if (field_path == "status.podIP" || field_path == "status.podIPs") return facts.pod_ip;
  if (field_path == "status.hostIP" || field_path == "status.hostIPs") return facts.host_ip;
  if (auto key = subscript(field_path, "metadata.labels")) {
    auto it = m.labels.find(*key);
    return it == m.labels.end() ? std::string() : it->second;
  }
  if (auto key = subscript(field_path, "metadata.annotations")) {
    auto it = m.annotations.find(*key);
    return it == m.annotations.end() ? std::string() : it->second;
  }
  return core::invalidArgument("unsupported fieldRef.fieldPath \"" + field_path + "\"");
}

namespace {

// Go's %q for the printable ASCII and escapes a label or annotation value can hold.
std::string quoted(const std::string& value) {
  std::string out = "\"";
  for (unsigned char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

core::Result<std::string> downwardApiValue(const kube::Pod& pod, const std::string& field_path,
                                           const PodFacts& facts) {
  if (field_path == "metadata.labels" || field_path == "metadata.annotations") {
    const auto& entries =
        field_path == "metadata.labels" ? pod.metadata.labels : pod.metadata.annotations;
    std::string out;
    for (const auto& [key, value] : entries) {  // a std::map: sorted by key
      if (!out.empty()) out += '\n';
      out += key + "=" + quoted(value);
    }
    return out;
  }
  return fieldRefValue(pod, field_path, facts);
}

std::vector<std::string> passthroughNames() {
  return {"ASAN_OPTIONS", "UBSAN_OPTIONS",   "LSAN_OPTIONS",
          "TSAN_OPTIONS", "OMP_NUM_THREADS", "LD_LIBRARY_PATH"};
}

void setEnv(EnvList& env, const std::string& name, std::string value) {
  for (auto& [k, v] : env) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  env.emplace_back(name, std::move(value));
}

const std::string* findEnv(const EnvList& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) return &v;
  }
  return nullptr;
}

EnvList baseEnv(const BaseEnvOptions& options) {
  EnvList env;
  std::string path = options.self_dir;
  if (!path.empty()) path += ':';
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string here.
  path += options.inherited_path.empty() ? std::string_view(kImagePath)
                                         : std::string_view(options.inherited_path);
  env.emplace_back("PATH", path);
  env.emplace_back("HOME", options.home.empty() ? "/root" : options.home);
  env.emplace_back("LANG", "C.UTF-8");
  for (const auto& [k, v] : options.passthrough) env.emplace_back(k, v);
  if (!options.nss_wrapper_library.empty()) {
    env.emplace_back("LD_PRELOAD", options.nss_wrapper_library);
    env.emplace_back("NSS_WRAPPER_HOSTS", options.hosts_file);
    env.emplace_back("NSS_WRAPPER_MAX_HOSTENTS", std::to_string(kNssWrapperMaxHostEntries));
    // nss_wrapper dlopens libc with RTLD_DEEPBIND, which sanitizer runtimes refuse (they abort
    // the process); without it names still resolve from the hosts file.
    env.emplace_back("NSS_WRAPPER_DISABLE_DEEPBIND", "1");
    // ASan insists on being first in the library list; a preload would make it refuse to start.
    const std::string* asan = findEnv(env, "ASAN_OPTIONS");
    std::string value = asan && !asan->empty() ? *asan + ":" : "";
    setEnv(env, "ASAN_OPTIONS", value + "verify_asan_link_order=0");
  }
  return env;
}

core::Result<EnvList> containerEnv(const kube::Pod& pod, const kube::Container& container,
                                   const PodFacts& facts, const EnvList& base,
                                   const KeyLookup& lookup) {
  EnvList env = base;
  EnvList own;  // the container's variables defined so far: what $(VAR) may refer to
  for (size_t i = 0; i < container.env.size(); ++i) {
    const kube::EnvVar& var = container.env[i];
    const std::string where = "container " + container.name + " env " + var.name;
    std::string value;
    if (var.value_from) {
      const kube::EnvVarSource& from = *var.value_from;
      if (from.field_ref) {
        core::Result<std::string> v = fieldRefValue(pod, from.field_ref->field_path, facts);
        if (!v.ok()) return v.status().withContext(where);
        value = *v;
      } else if (from.config_map_key_ref || from.secret_key_ref) {
        const bool secret = from.secret_key_ref.has_value();
        const kube::KeySelector& ref = secret ? *from.secret_key_ref : *from.config_map_key_ref;
        core::Result<std::optional<std::string>> v = lookup(secret, ref.name, ref.key);
        if (!v.ok()) return v.status().withContext(where);
        if (!v->has_value()) {
          if (ref.optional.value_or(false)) continue;
          return core::notFound(where + ": " + (secret ? "secret" : "configmap") + " \"" +
                                ref.name + "\" has no key \"" + ref.key + "\"");
        }
        value = **v;
      } else {
        return core::invalidArgument(where + ": unsupported valueFrom (resourceFieldRef)");
      }
    } else {
      value = expandVars(var.value.value_or(""),
                         [&](const std::string& name) { return findEnv(own, name); });
    }
    setEnv(own, var.name, value);
    setEnv(env, var.name, std::move(value));
  }
  return env;
}

EnvList apiServerEnv(const std::string& server_url, bool own_network_namespace,
                     const std::string& pod_gateway) {
  std::string_view rest = server_url;
  const auto scheme = rest.find("://");
  if (scheme != std::string_view::npos) rest.remove_prefix(scheme + 3);
  rest = rest.substr(0, rest.find('/'));
  std::string host, port = "443";
  if (!rest.empty() && rest.front() == '[') {  // [::1]:6443
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return {};
    host = std::string(rest.substr(1, close - 1));
    if (close + 1 < rest.size() && rest[close + 1] == ':')
      port = std::string(rest.substr(close + 2));
  } else {
    const auto colon = rest.rfind(':');
    host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = std::string(rest.substr(colon + 1));
  }
  if (host.empty()) return {};
  const bool loopback = host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  if (loopback && own_network_namespace && !pod_gateway.empty()) host = pod_gateway;
  return {{"KUBERNETES_SERVICE_HOST", host}, {"KUBERNETES_SERVICE_PORT", port}};
}

std::string gatewayOf(const std::string& cidr) {
  const auto slash = cidr.find('/');
  in_addr addr{};
  if (slash == std::string::npos || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &addr) != 1) {
    return "";
  }
  int bits = 0;
  try {
    bits = std::stoi(cidr.substr(slash + 1));
  } catch (const std::exception&) {
    return "";
  }
  if (bits < 1 || bits > 30) return "";
  const uint32_t mask = ~uint32_t{0} << (32 - bits);
  addr.s_addr = htonl((ntohl(addr.s_addr) & mask) + 1);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr, text, sizeof text);
  return text;
}

std::vector<std::string> imageEntrypoint(const std::string& image) {
  // Repository: the image without its digest (@sha256:...) and tag (a ':' after the last '/').
  std::string repository = image.substr(0, image.find('@'));
  const auto slash = repository.rfind('/');
  const auto colon = repository.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repository.resize(colon);
  }
  auto endsWith = [&](std::string_view suffix) {
    return repository == suffix ||
           (repository.size() > suffix.size() && repository.ends_with(suffix) &&
            repository[repository.size() - suffix.size() - 1] == '/');
  };
  if (endsWith("ringmaster/operator")) return {"ringmaster-operator"};
  if (endsWith("ringmaster/trainer")) return {"ringmaster-launcher"};
  return {};
}

std::vector<std::string> expandEach(const std::vector<std::string>& words, const EnvList& env) {
  auto lookup = [&](const std::string& name) { return findEnv(env, name); };
  std::vector<std::string> out;
  for (const auto& w : words) out.push_back(expandVars(w, lookup));
  return out;
}

std::vector<std::string> containerArgv(const kube::Container& container, const EnvList& env) {
  std::vector<std::string> argv = container.command.empty() ? imageEntrypoint(container.image)
                                                            : expandEach(container.command, env);
  const std::vector<std::string> args = expandEach(container.args, env);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string resolveExecutable(const std::string& name, const std::string& path) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    // An empty entry means the current directory. (Not assigned after the substr: GCC 12
    // flags that with a false -Wrestrict.)
    std::string dir = end > start ? path.substr(start, end - start) : std::string(".");
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace ringmaster::local::kubelet
