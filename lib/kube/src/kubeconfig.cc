#include "ringmaster/kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "ringmaster/core/base64.h"

namespace ringmaster::kube {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

core::Result<std::string> readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::errnoError("cannot read " + path.string(), errno);
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return core::errnoError("cannot read " + path.string(), errno);
  return out.str();
}

// Reads one kubeconfig document; every error names the file and the key.
class FileParser {
 public:
  FileParser(fs::path path, YAML::Node root) : path_(std::move(path)), root_(std::move(root)) {}

  core::Result<KubeConfig> parse(const std::string& context_override) {
    KubeConfig out;
    out.source = path_.string();
    std::string context_name = context_override;
    if (context_name.empty()) {
      RM_ASSIGN_OR_RETURN(context_name, scalar(root_, "current-context", "current-context"));
      if (context_name.empty()) return error("current-context", "not set and no context given");
    }
    RM_ASSIGN_OR_RETURN(auto context, named("contexts", "context", context_name));
    const std::string ctx_key = context.second;
    RM_ASSIGN_OR_RETURN(std::string cluster_name,
                        scalar(context.first, "cluster", ctx_key + ".cluster"));
    RM_ASSIGN_OR_RETURN(std::string user_name, scalar(context.first, "user", ctx_key + ".user"));
    RM_ASSIGN_OR_RETURN(std::string ns, scalar(context.first, "namespace", ctx_key + ".namespace"));
    if (!ns.empty()) out.namespace_name = ns;
    if (cluster_name.empty()) return error(ctx_key + ".cluster", "missing");
    RM_ASSIGN_OR_RETURN(auto cluster, named("clusters", "cluster", cluster_name));
    RM_RETURN_IF_ERROR(parseCluster(cluster.first, cluster.second, out));
    if (!user_name.empty()) {
      RM_ASSIGN_OR_RETURN(auto user, named("users", "user", user_name));
      RM_RETURN_IF_ERROR(parseUser(user.first, user.second, out));
    }
    return out;
  }

 private:
  core::Status error(const std::string& key, const std::string& what) const {
    return core::invalidArgument(path_.string() + ": " + key + ": " + what);
  }

  core::Result<std::string> scalar(const YAML::Node& map, const char* name,
                                   const std::string& key) const {
    YAML::Node node = map[name];
    if (!node || node.IsNull()) return std::string();
    if (!node.IsScalar()) return error(key, "expected a string");
    return node.Scalar();
  }

  core::Result<bool> flag(const YAML::Node& map, const char* name, const std::string& key) const {
    YAML::Node node = map[name];
    if (!node || node.IsNull()) return false;
    if (node.IsScalar()) {
      if (node.Scalar() == "true") return true;
      if (node.Scalar() == "false") return false;
    }
    return error(key, "expected true or false");
  }

  // The `field` map of the entry called `name` in list `list`, and its key path.
  core::Result<std::pair<YAML::Node, std::string>> named(const char* list, const char* field,
                                                         const std::string& name) const {
    YAML::Node items = root_[list];
    if (items && !items.IsNull() && !items.IsSequence()) return error(list, "expected a list");
    for (size_t i = 0; items && items.IsSequence() && i < items.size(); ++i) {
      YAML::Node n = items[i]["name"];
      if (n && n.IsScalar() && n.Scalar() == name) {
        std::string key = std::string(list) + "[" + std::to_string(i) + "]." + field;
        YAML::Node value = items[i][field];
        if (!value || !value.IsMap()) return error(key, "expected a map");
        return std::make_pair(value, key);
      }
    }
    return error(list, "no entry named \"" + name + "\"");
  }

  fs::path resolve(const std::string& file) const {
    fs::path p(file);
    return p.is_absolute() ? p : path_.parent_path() / p;
  }

  // `<name>-data` (base64) or `<name>` (a file); empty when neither is set.
  core::Result<std::string> dataOrFile(const YAML::Node& map, const std::string& name,
                                       const std::string& key) const {
    const std::string data_name = name + "-data";
    RM_ASSIGN_OR_RETURN(std::string data, scalar(map, data_name.c_str(), key + "." + data_name));
    if (!data.empty()) {
      std::optional<std::string> decoded = core::base64Decode(data);
      if (!decoded) return error(key + "." + data_name, "invalid base64");
      return *decoded;
    }
    RM_ASSIGN_OR_RETURN(std::string file, scalar(map, name.c_str(), key + "." + name));
    if (file.empty()) return std::string();
    core::Result<std::string> content = readFile(resolve(file));
    if (!content.ok()) return error(key + "." + name, content.status().message());
    return content;
  }

  core::Status parseCluster(const YAML::Node& c, const std::string& key, KubeConfig& out) const {
    RM_ASSIGN_OR_RETURN(bool insecure,
                        flag(c, "insecure-skip-tls-verify", key + ".insecure-skip-tls-verify"));
    if (insecure) {
      return error(key + ".insecure-skip-tls-verify",
                   "refused: TLS verification is never skipped; give the cluster's CA in "
                   "certificate-authority or certificate-authority-data");
    }
    RM_ASSIGN_OR_RETURN(out.server, scalar(c, "server", key + ".server"));
    if (out.server.empty()) return error(key + ".server", "missing");
    if (out.server.rfind("https://", 0) != 0) {
      return error(key + ".server", "\"" + out.server + "\" is not an https:// URL");
    }
    RM_ASSIGN_OR_RETURN(out.ca_pem, dataOrFile(c, "certificate-authority", key));
    RM_ASSIGN_OR_RETURN(out.tls_server_name,
                        scalar(c, "tls-server-name", key + ".tls-server-name"));
    return core::Status::Ok();
  }

  core::Status parseUser(const YAML::Node& u, const std::string& key, KubeConfig& out) const {
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (u[unsupported]) {
        return error(key + "." + unsupported,
                     "not supported; use token, tokenFile or a client certificate");
      }
    }
    RM_ASSIGN_OR_RETURN(out.token, scalar(u, "token", key + ".token"));
    RM_ASSIGN_OR_RETURN(std::string token_file, scalar(u, "tokenFile", key + ".tokenFile"));
    if (!token_file.empty()) {
      out.token_file = resolve(token_file).string();
      core::Result<std::string> token = readFile(out.token_file);
      if (!token.ok()) return error(key + ".tokenFile", token.status().message());
    }
    RM_ASSIGN_OR_RETURN(out.client_cert_pem, dataOrFile(u, "client-certificate", key));
    RM_ASSIGN_OR_RETURN(out.client_key_pem, dataOrFile(u, "client-key", key));
    if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
      return error(key, "client-certificate and client-key must be given together");
    }
    return core::Status::Ok();
  }

  fs::path path_;
  YAML::Node root_;
};

std::string envOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

core::Result<std::string> KubeConfig::bearerToken() const {
  if (token_file.empty()) return token;
  core::Result<std::string> content = readFile(token_file);
  if (!content.ok()) return content.status().withContext("bearer token (" + source + ")");
  return trim(std::move(content).value());
}

KubeConfigSources KubeConfigSources::fromEnvironment(std::string explicit_path) {
  KubeConfigSources s;
  s.explicit_path = std::move(explicit_path);
  s.kubeconfig_env = envOrEmpty("KUBECONFIG");
  s.service_host = envOrEmpty("KUBERNETES_SERVICE_HOST");
  s.service_port = envOrEmpty("KUBERNETES_SERVICE_PORT");
  s.home = envOrEmpty("HOME");
  return s;
}

core::Result<KubeConfig> loadKubeConfigFile(const fs::path& path, const std::string& context) {
  RM_ASSIGN_OR_RETURN(std::string text, readFile(path));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return core::invalidArgument(path.string() + ": invalid YAML: " + e.what());
  }
  if (!root.IsMap()) return core::invalidArgument(path.string() + ": expected a YAML map");
  try {
    return FileParser(path, root).parse(context);
  } catch (const YAML::Exception& e) {
    return core::invalidArgument(path.string() + ": " + e.what());
  }
}

core::Result<KubeConfig> loadInClusterConfig(const std::string& host, const std::string& port,
                                             const fs::path& dir) {
  KubeConfig out;
  out.source = "in-cluster";
  // An IPv6 service host needs brackets in the URL.
  const bool v6 = host.find(':') != std::string::npos;
  out.server = "https://" + (v6 ? "[" + host + "]" : host) + ":" + (port.empty() ? "443" : port);
  core::Result<std::string> ca = readFile(dir / "ca.crt");
  if (!ca.ok()) return ca.status().withContext("in-cluster config");
  out.ca_pem = std::move(ca).value();
  out.token_file = (dir / "token").string();
  core::Result<std::string> token = readFile(out.token_file);
  if (!token.ok()) return token.status().withContext("in-cluster config");
  core::Result<std::string> ns = readFile(dir / "namespace");
  if (ns.ok() && !trim(*ns).empty()) out.namespace_name = trim(std::move(ns).value());
  return out;
}

core::Result<KubeConfig> loadKubeConfig(const KubeConfigSources& s) {
  if (!s.explicit_path.empty()) return loadKubeConfigFile(s.explicit_path, s.context);
  if (!s.kubeconfig_env.empty()) {
    std::string first = s.kubeconfig_env.substr(0, s.kubeconfig_env.find(':'));
    if (!first.empty()) return loadKubeConfigFile(first, s.context);
  }
  if (!s.service_host.empty()) {
    return loadInClusterConfig(s.service_host, s.service_port, s.service_account_dir);
  }
  if (!s.home.empty()) {
    fs::path home_config = fs::path(s.home) / ".kube" / "config";
    std::error_code ec;
    if (fs::exists(home_config, ec)) return loadKubeConfigFile(home_config, s.context);
  }
  return core::notFound(
      "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, run in a cluster, or "
      "create ~/.kube/config");
}

}  // namespace ringmaster::kube
