#include "local/controllers/namespace_defaults.h"

#include "ringmaster/core/log.h"

namespace ringmaster::local::controllers {
namespace {

using json = nlohmann::json;

const ResourceKey kNamespaces{"", "namespaces"};
const ResourceKey kConfigMaps{"", "configmaps"};
const ResourceKey kServiceAccounts{"", "serviceaccounts"};

}  // namespace

NamespaceDefaults::NamespaceDefaults(ObjectStore& store, std::string ca_pem)
    : store_(store), ca_pem_(std::move(ca_pem)) {}

size_t NamespaceDefaults::sync() {
  auto namespaces = store_.list(kNamespaces, "", {});
  if (!namespaces.ok()) return 0;
  size_t writes = 0;
  for (const auto& item : namespaces->items) {
    const json& ns = item->object;
    if (ns["metadata"].contains("deletionTimestamp") ||
        ns.value("status", json::object()).value("phase", "") == "Terminating") {
      continue;
    }
    writes += ensure(ns["metadata"].value("name", ""));
  }
  return writes;
}

size_t NamespaceDefaults::ensure(const std::string& ns) {
  size_t writes = 0;
  auto report = [&](const char* what, const StatusError& error) {
    RM_LOG(WARN, LOCAL) << "namespace " << ns << ": " << what << ": " << error.message();
  };
  const json ca_data = {{"ca.crt", ca_pem_}};
  auto cm = store_.get(kConfigMaps, ns, kRootCaConfigMap);
  if (!cm.ok() && cm.error().code() == 404) {
    json obj = {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", kRootCaConfigMap}, {"namespace", ns}}},
                {"data", ca_data}};
    auto created = store_.create(kConfigMaps, ns, obj);
    if (created.ok()) ++writes;
    if (!created.ok() && created.error().code() != 409)
      report("creating kube-root-ca.crt", created.error());
  } else if (cm.ok() && (*cm)->object.value("data", json::object()) != ca_data) {
    auto updated = store_.mutate(kConfigMaps, ns, kRootCaConfigMap,
                                 [&](json& obj) -> std::optional<StatusError> {
                                   obj["data"] = ca_data;
                                   return std::nullopt;
                                 });
    if (updated.ok()) ++writes;
    if (!updated.ok()) report("updating kube-root-ca.crt", updated.error());
  }
  auto sa = store_.get(kServiceAccounts, ns, kDefaultServiceAccount);
  if (!sa.ok() && sa.error().code() == 404) {
    json obj = {{"apiVersion", "v1"},
                {"kind", "ServiceAccount"},
                {"metadata", {{"name", kDefaultServiceAccount}, {"namespace", ns}}}};
    auto created = store_.create(kServiceAccounts, ns, obj);
    if (created.ok()) ++writes;
    if (!created.ok() && created.error().code() != 409)
      report("creating ServiceAccount default", created.error());
  }
  return writes;
}

}  // namespace ringmaster::local::controllers
