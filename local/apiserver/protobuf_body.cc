#include "local/apiserver/protobuf_body.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "local/apiserver/protobuf_wire.h"
#include "ringmaster/core/base64.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

using protobuf::Field;
using protobuf::Reader;

// map<string, string|bytes> entry {1: key, 2: value}.
bool mapEntry(std::string_view entry, json* map, bool bytes_value) {
  Reader r(entry);
  std::string key, value;
  Field f;
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 2) key = f.bytes;
    if (f.number == 2 && f.wire == 2) value = f.bytes;
  }
  (*map)[key] = bytes_value ? core::base64Encode(value) : value;
  return true;
}

bool objectMeta(std::string_view data, json* meta) {
  Reader r(data);
  Field f;
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.wire != 2) continue;
    const std::string s(f.bytes);
    switch (f.number) {
      case 1:
        if (!s.empty()) (*meta)["name"] = s;
        break;
      case 2:
        if (!s.empty()) (*meta)["generateName"] = s;
        break;
      case 3:
        if (!s.empty()) (*meta)["namespace"] = s;
        break;
      case 11:
        if (!mapEntry(f.bytes, &(*meta)["labels"], false)) return false;
        break;
      case 12:
        if (!mapEntry(f.bytes, &(*meta)["annotations"], false)) return false;
        break;
      case 14:
        (*meta)["finalizers"].push_back(s);
        break;
      default:
        break;  // server-set or unused by the generators
    }
  }
  return true;
}

// meta/v1 DeleteOptions{1: gracePeriodSeconds, 2: Preconditions{1: uid, 2: resourceVersion},
// 3: orphanDependents, 4: propagationPolicy, 5: repeated dryRun}.
bool decodeDeleteOptions(std::string_view raw, json* obj) {
  Reader r(raw);
  Field f;
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 0) (*obj)["gracePeriodSeconds"] = static_cast<int64_t>(f.varint);
    if (f.number == 3 && f.wire == 0) (*obj)["orphanDependents"] = f.varint != 0;
    if (f.number == 4 && f.wire == 2) (*obj)["propagationPolicy"] = std::string(f.bytes);
    if (f.number == 5 && f.wire == 2) (*obj)["dryRun"].push_back(std::string(f.bytes));
    if (f.number == 2 && f.wire == 2) {
      Reader pre(f.bytes);
      Field g;
      json& p = (*obj)["preconditions"] = json::object();
      while (!pre.done()) {
        if (!pre.next(&g)) return false;
        if (g.number == 1 && g.wire == 2) p["uid"] = std::string(g.bytes);
        if (g.number == 2 && g.wire == 2) p["resourceVersion"] = std::string(g.bytes);
      }
    }
  }
  return true;
}

// A message of string fields: field number -> JSON key; `repeated` keys collect arrays (an
// empty string included: apiGroups [""] is the core group).
bool decodeStrings(std::string_view raw, const std::map<uint32_t, const char*>& keys,
                   const std::set<uint32_t>& repeated, json* obj) {
  Reader r(raw);
  Field f;
  *obj = json::object();
  while (!r.done()) {
    if (!r.next(&f)) return false;
    auto key = keys.find(f.number);
    if (f.wire != 2 || key == keys.end()) continue;
    if (repeated.count(f.number)) {
      (*obj)[key->second].push_back(std::string(f.bytes));
    } else if (!f.bytes.empty()) {
      (*obj)[key->second] = std::string(f.bytes);
    }
  }
  return true;
}

// rbac/v1 PolicyRule{1 verbs, 2 apiGroups, 3 resources, 4 resourceNames, 5 nonResourceURLs}.
bool decodePolicyRule(std::string_view raw, json* rule) {
  return decodeStrings(raw,
                       {{1, "verbs"},
                        {2, "apiGroups"},
                        {3, "resources"},
                        {4, "resourceNames"},
                        {5, "nonResourceURLs"}},
                       {1, 2, 3, 4, 5}, rule);
}

// authentication/v1 TokenRequestSpec{1 audiences, 3 boundObjectRef{1 kind, 2 apiVersion, 3 name,
// 4 uid}, 4 expirationSeconds}.
bool decodeTokenRequestSpec(std::string_view raw, json* spec) {
  Reader r(raw);
  Field f;
  *spec = json::object();
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 2) (*spec)["audiences"].push_back(std::string(f.bytes));
    if (f.number == 4 && f.wire == 0) (*spec)["expirationSeconds"] = static_cast<int64_t>(f.varint);
    if (f.number == 3 && f.wire == 2) {
      json ref;
      if (!decodeStrings(f.bytes, {{1, "kind"}, {2, "apiVersion"}, {3, "name"}, {4, "uid"}}, {},
                         &ref)) {
        return false;
      }
      (*spec)["boundObjectRef"] = ref;
    }
  }
  return true;
}

bool decodeKind(const std::string& kind, std::string_view raw, json* obj) {
  if (kind == "DeleteOptions") return decodeDeleteOptions(raw, obj);
  Reader r(raw);
  Field f;
  json meta = json::object();
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 2) {
      if (!objectMeta(f.bytes, &meta)) return false;
      continue;
    }
    if (kind == "ConfigMap") {
      if (f.number == 2 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["data"], false)) return false;
      if (f.number == 3 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["binaryData"], true))
        return false;
      if (f.number == 4 && f.wire == 0) (*obj)["immutable"] = f.varint != 0;
    } else if (kind == "Secret") {
      if (f.number == 2 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["data"], true)) return false;
      if (f.number == 3 && f.wire == 2 && !f.bytes.empty()) (*obj)["type"] = std::string(f.bytes);
      if (f.number == 4 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["stringData"], false))
        return false;
      if (f.number == 5 && f.wire == 0) (*obj)["immutable"] = f.varint != 0;
    } else if (kind == "Role" || kind == "ClusterRole") {
      if (f.number == 2 && f.wire == 2) {
        json rule;
        if (!decodePolicyRule(f.bytes, &rule)) return false;
        (*obj)["rules"].push_back(rule);
      }
    } else if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
      // {2 subjects: Subject{1 kind, 2 apiGroup, 3 name, 4 namespace}, 3 roleRef{1 apiGroup,
      // 2 kind, 3 name}}
      if (f.number == 2 && f.wire == 2) {
        json subject;
        if (!decodeStrings(f.bytes, {{1, "kind"}, {2, "apiGroup"}, {3, "name"}, {4, "namespace"}},
                           {}, &subject)) {
          return false;
        }
        (*obj)["subjects"].push_back(subject);
      }
      if (f.number == 3 && f.wire == 2 &&
          !decodeStrings(f.bytes, {{1, "apiGroup"}, {2, "kind"}, {3, "name"}}, {},
                         &(*obj)["roleRef"])) {
        return false;
      }
    } else if (kind == "ServiceAccount") {
      if (f.number == 4 && f.wire == 0) (*obj)["automountServiceAccountToken"] = f.varint != 0;
    } else if (kind == "TokenRequest") {
      if (f.number == 2 && f.wire == 2 && !decodeTokenRequestSpec(f.bytes, &(*obj)["spec"])) {
        return false;
      }
    } else if (kind == "Namespace") {
      if (f.number == 2 && f.wire == 2) {  // NamespaceSpec{1: finalizers}
        Reader spec(f.bytes);
        Field g;
        json& spec_json = (*obj)["spec"] = json::object();
        while (!spec.done()) {
          if (!spec.next(&g)) return false;
          if (g.number == 1 && g.wire == 2) spec_json["finalizers"].push_back(std::string(g.bytes));
        }
      }
    }
  }
  (*obj)["metadata"] = meta;
  return true;
}

}  // namespace

std::optional<json> decodeProtobufBody(std::string_view body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic) return std::nullopt;
  Reader r(body.substr(4));
  Field f;
  std::string api_version, kind;
  std::string_view raw;
  while (!r.done()) {
    if (!r.next(&f)) return std::nullopt;
    if (f.number == 1 && f.wire == 2) {  // TypeMeta{1: apiVersion, 2: kind}
      Reader tm(f.bytes);
      Field g;
      while (!tm.done()) {
        if (!tm.next(&g)) return std::nullopt;
        if (g.number == 1 && g.wire == 2) api_version = g.bytes;
        if (g.number == 2 && g.wire == 2) kind = g.bytes;
      }
    } else if (f.number == 2 && f.wire == 2) {
      raw = f.bytes;
    } else if ((f.number == 3 || f.number == 4) && f.wire == 2 && !f.bytes.empty()) {
      return std::nullopt;  // a content encoding/type inside the envelope: not ours
    }
  }
  // The kinds kubectl's generators and typed clients send. DeleteOptions is registered in every
  // group-version (client-go's Secrets client sends it as "v1"; others as "meta.k8s.io/v1").
  static const std::set<std::pair<std::string, std::string>> kDecoded = {
      {"v1", "ConfigMap"},
      {"v1", "Secret"},
      {"v1", "Namespace"},
      {"v1", "ServiceAccount"},
      {"authentication.k8s.io/v1", "TokenRequest"},
      {"rbac.authorization.k8s.io/v1", "Role"},
      {"rbac.authorization.k8s.io/v1", "ClusterRole"},
      {"rbac.authorization.k8s.io/v1", "RoleBinding"},
      {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding"},
  };
  if (kind != "DeleteOptions" && !kDecoded.count({api_version, kind})) return std::nullopt;
  json obj = {{"apiVersion", api_version}, {"kind", kind}};
  if (!decodeKind(kind, raw, &obj)) return std::nullopt;
  return obj;
}

}  // namespace ringmaster::local
