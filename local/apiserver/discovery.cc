#include "local/apiserver/discovery.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "local/apiserver/openapi.h"

namespace ringmaster::local {
namespace {

using ordered = nlohmann::ordered_json;

std::string gvPath(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

// A stable short hash of a document, for the index's ?hash= (kubectl caches by URL).
std::string hashText(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llX", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string apiVersionsText(const std::string& server_address) {
  ordered doc;
  doc["kind"] = "APIVersions";
  doc["versions"] = {"v1"};
  doc["serverAddressByClientCIDRs"] =
      ordered::array({ordered{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}});
  return doc.dump();
}

std::string apiGroupListText(const std::vector<ApiResource>& resources) {
  // group -> versions in first-seen order (the registry sorts versions; the first is preferred)
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> versions;
  for (const auto& r : resources) {
    const auto& g = r.type.group;
    if (g.empty()) continue;
    if (!versions.count(g)) groups.push_back(g);
    auto& vs = versions[g];
    if (std::find(vs.begin(), vs.end(), r.type.version) == vs.end()) vs.push_back(r.type.version);
  }
  ordered list = ordered::array();
  for (const auto& g : groups) {
    ordered entry;
    entry["name"] = g;
    ordered vs = ordered::array();
    for (const auto& v : versions[g]) vs.push_back({{"groupVersion", g + "/" + v}, {"version", v}});
    entry["versions"] = vs;
    entry["preferredVersion"] = vs.front();
    list.push_back(entry);
  }
  ordered doc;
  doc["kind"] = "APIGroupList";
  doc["apiVersion"] = "v1";
  doc["groups"] = list;
  return doc.dump();
}

std::string apiResourceListText(const std::vector<ApiResource>& resources, const std::string& group,
                                const std::string& version) {
  ordered list = ordered::array();
  for (const auto& r : resources) {
    if (r.type.group != group || r.type.version != version) continue;
    ordered e;
    e["name"] = r.type.resource;
    e["singularName"] = r.singular;
    e["namespaced"] = r.type.namespaced;
    e["kind"] = r.type.kind;
    e["verbs"] = r.verbs;
    if (!r.short_names.empty()) e["shortNames"] = r.short_names;
    if (!r.categories.empty()) e["categories"] = r.categories;
    list.push_back(e);
    if (r.type.group.empty() && r.type.resource == "pods") {
      // The pod subresources this server serves (api_server.cc), in upstream's order.
      list.push_back(ordered{{"name", "pods/binding"},
                             {"singularName", ""},
                             {"namespaced", true},
                             {"kind", "Binding"},
                             {"verbs", {"create"}}});
      list.push_back(ordered{{"name", "pods/log"},
                             {"singularName", ""},
                             {"namespaced", true},
                             {"kind", "Pod"},
                             {"verbs", {"get"}}});
    }
    if (r.type.group.empty() && r.type.resource == "serviceaccounts") {
      list.push_back(ordered{{"name", "serviceaccounts/token"},
                             {"singularName", ""},
                             {"namespaced", true},
                             {"group", "authentication.k8s.io"},
                             {"version", "v1"},
                             {"kind", "TokenRequest"},
                             {"verbs", {"create"}}});
    }
    if (r.type.has_status_subresource) {
      ordered s;
      s["name"] = r.type.resource + "/status";
      s["singularName"] = "";
      s["namespaced"] = r.type.namespaced;
      s["kind"] = r.type.kind;
      s["verbs"] = {"get", "patch", "update"};
      list.push_back(s);
    }
    if (r.scale) {
      list.push_back(ordered{{"name", r.type.resource + "/scale"},
                             {"singularName", ""},
                             {"namespaced", r.type.namespaced},
                             {"group", "autoscaling"},
                             {"version", "v1"},
                             {"kind", "Scale"},
                             {"verbs", {"get", "patch", "update"}}});
    }
  }
  ordered doc;
  doc["kind"] = "APIResourceList";
  doc["apiVersion"] = "v1";
  doc["groupVersion"] = group.empty() ? version : group + "/" + version;
  doc["resources"] = list;
  return doc.dump();
}

std::string versionText() {
  // kubectl-dispatcher picks its bundled kubectl by the server's minor version.
  ordered doc;
  doc["major"] = "1";
  doc["minor"] = "32";
  doc["gitVersion"] = kServerGitVersion;
  doc["gitCommit"] = "0000000000000000000000000000000000000000";
  doc["gitTreeState"] = "archive";
  doc["buildDate"] = "1970-01-01T00:00:00Z";
  doc["goVersion"] = "go1.23.0";
  doc["compiler"] = "gc";
  doc["platform"] = "linux/amd64";
  return doc.dump();
}

std::string openApiV3DocumentText(const std::vector<ApiResource>& resources,
                                  const std::string& gv_path) {
  ordered paths = ordered::object();
  bool any = false;
  for (const auto& r : resources) {
    if (gvPath(r.type.group, r.type.version) != gv_path) continue;
    any = true;
    std::string base = "/" + gv_path + "/";
    std::string path = r.type.namespaced
                           ? base + "namespaces/{namespace}/" + r.type.resource + "/{name}"
                           : base + r.type.resource + "/{name}";
    ordered gvk{{"group", r.type.group}, {"version", r.type.version}, {"kind", r.type.kind}};
    ordered params = ordered::array(
        {ordered{{"name", "fieldValidation"}, {"in", "query"}, {"schema", {{"type", "string"}}}},
         ordered{{"name", "fieldManager"}, {"in", "query"}, {"schema", {{"type", "string"}}}}});
    ordered op;
    op["operationId"] = "patch" + r.type.kind;
    op["parameters"] = params;
    op["responses"] = {{"200", {{"description", "OK"}}}};
    op["x-kubernetes-action"] = "patch";
    op["x-kubernetes-group-version-kind"] = gvk;
    paths[path] = {{"patch", op}};
  }
  if (!any) return "";
  ordered doc;
  doc["openapi"] = "3.0.0";
  doc["info"] = {{"title", "Kubernetes"}, {"version", kServerGitVersion}};
  doc["paths"] = paths;
  const auto slash = gv_path.find('/');
  const std::string rest = gv_path.substr(slash + 1);  // "v1" or "<group>/<version>"
  const auto split = rest.rfind('/');
  const std::string group = gv_path.rfind("apis/", 0) == 0 ? rest.substr(0, split) : "";
  const std::string version = split == std::string::npos ? rest : rest.substr(split + 1);
  doc["components"] = {{"schemas", openApiComponents(resources, group, version)}};
  return doc.dump();
}

std::string openApiV3IndexText(const std::vector<ApiResource>& resources) {
  std::set<std::string> gvs;
  for (const auto& r : resources) gvs.insert(gvPath(r.type.group, r.type.version));
  ordered paths = ordered::object();
  for (const auto& gv : gvs) {
    paths[gv] = {{"serverRelativeURL",
                  "/openapi/v3/" + gv + "?hash=" + hashText(openApiV3DocumentText(resources, gv))}};
  }
  ordered doc;
  doc["paths"] = paths;
  return doc.dump();
}

}  // namespace ringmaster::local
