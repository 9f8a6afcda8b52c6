#include "local/https/kubeconfig.h"

#include <nlohmann/json.hpp>

#include "local/https/files.h"
#include "ringmaster/core/base64.h"

namespace ringmaster::local {

namespace {

// A YAML double-quoted scalar (JSON string syntax is a subset of it).
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

bool validName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
      return false;
    }
  }
  return true;
}

}  // namespace

core::Result<std::string> renderKubeconfig(const KubeconfigSpec& spec) {
  if (!validName(spec.name))
    return core::invalidArgument("kubeconfig: bad name '" + spec.name + "'");
  if (!spec.server_url.starts_with("https://")) {
    return core::invalidArgument("kubeconfig: server must be an https URL, got '" +
                                 spec.server_url + "'");
  }
  if (spec.ca_pem.empty() || spec.token.empty()) {
    return core::invalidArgument("kubeconfig: CA certificate and token are required");
  }
  const std::string name = quoted(spec.name);
  std::string out;
  out += "apiVersion: v1\n";
  out += "kind: Config\n";
  out += "clusters:\n";
  out += "- name: " + name + "\n";
  out += "  cluster:\n";
  out += "    server: " + quoted(spec.server_url) + "\n";
  out += "    certificate-authority-data: " + core::base64Encode(spec.ca_pem) + "\n";
  out += "users:\n";
  out += "- name: " + name + "\n";
  out += "  user:\n";
  out += "    token: " + quoted(spec.token) + "\n";
  out += "contexts:\n";
  out += "- name: " + name + "\n";
  out += "  context:\n";
  out += "    cluster: " + name + "\n";
  out += "    user: " + name + "\n";
  if (!spec.namespace_name.empty()) out += "    namespace: " + quoted(spec.namespace_name) + "\n";
  out += "current-context: " + name + "\n";
  out += "preferences: {}\n";
  return out;
}

core::Status writeKubeconfig(const std::filesystem::path& path, const KubeconfigSpec& spec) {
  RM_ASSIGN_OR_RETURN(std::string text, renderKubeconfig(spec));
  if (path.has_parent_path()) RM_RETURN_IF_ERROR(ensureDirectory(path.parent_path(), 0700));
  RM_RETURN_IF_ERROR_CTX(writeFileAtomic(path, text, 0600), "writing kubeconfig");
  return core::Status::Ok();
}

}  // namespace ringmaster::local
