#include "local/https/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cctype>

#include "local/https/files.h"
#include "ringmaster/core/base64.h"

namespace ringmaster::local {

namespace {

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
  // Strings double-quoted: a token or name of digits must stay a string for every reader.
  YAML::Emitter out;
  auto named = [&](const char* list, const char* kind, auto body) {
    out << YAML::Key << list << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << spec.name;
    out << YAML::Key << kind << YAML::Value << YAML::BeginMap;
    body();
    out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  };
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Config";
  named("clusters", "cluster", [&] {
    out << YAML::Key << "server" << YAML::Value << YAML::DoubleQuoted << spec.server_url;
    out << YAML::Key << "certificate-authority-data" << YAML::Value
        << core::base64Encode(spec.ca_pem);
  });
  named("users", "user",
        [&] { out << YAML::Key << "token" << YAML::Value << YAML::DoubleQuoted << spec.token; });
  named("contexts", "context", [&] {
    out << YAML::Key << "cluster" << YAML::Value << YAML::DoubleQuoted << spec.name;
    out << YAML::Key << "user" << YAML::Value << YAML::DoubleQuoted << spec.name;
    if (!spec.namespace_name.empty()) {
      out << YAML::Key << "namespace" << YAML::Value << YAML::DoubleQuoted << spec.namespace_name;
    }
  });
  out << YAML::Key << "current-context" << YAML::Value << YAML::DoubleQuoted << spec.name;
  out << YAML::Key << "preferences" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  out << YAML::EndMap;
  if (!out.good()) return core::internalError("kubeconfig: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

core::Status writeKubeconfig(const std::filesystem::path& path, const KubeconfigSpec& spec) {
  RM_ASSIGN_OR_RETURN(std::string text, renderKubeconfig(spec));
  if (path.has_parent_path()) RM_RETURN_IF_ERROR(ensureDirectory(path.parent_path(), 0700));
  RM_RETURN_IF_ERROR_CTX(writeFileAtomic(path, text, 0600), "writing kubeconfig");
  return core::Status::Ok();
}

}  // namespace ringmaster::local
