#include "local/store/patch.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "ringmaster/core/json.h"

namespace ringmaster::local {

using core::stringMember;
using nlohmann::json;

json applyMergePatch(const json& target, const json& patch) {
  if (!patch.is_object()) return patch;
  json result = target.is_object() ? target : json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null()) {
      result.erase(it.key());
    } else {
      auto cur = result.find(it.key());
      result[it.key()] = applyMergePatch(cur == result.end() ? json() : *cur, *it);
    }
  }
  return result;
}

namespace {

// ---- JSON pointer (RFC 6901) ----

std::optional<std::vector<std::string>> splitPointer(const std::string& ptr) {
  std::vector<std::string> parts;
  if (ptr.empty()) return parts;
  if (ptr[0] != '/') return std::nullopt;
  size_t start = 1;
  while (true) {
    size_t slash = ptr.find('/', start);
    std::string raw =
        ptr.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    std::string part;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        part.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        part.push_back(raw[i]);
      }
    }
    parts.push_back(std::move(part));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

std::optional<size_t> arrayIndex(const std::string& s, size_t size, bool allow_end) {
  if (allow_end && s == "-") return size;
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  if (!std::all_of(s.begin(), s.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  size_t idx = std::stoul(s);
  if (idx > size || (!allow_end && idx == size)) return std::nullopt;
  return idx;
}

// The container that holds the last token of `parts`.
json* parentOf(json& doc, const std::vector<std::string>& parts) {
  json* cur = &doc;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (cur->is_object()) {
      auto it = cur->find(parts[i]);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array()) {
      auto idx = arrayIndex(parts[i], cur->size(), false);
      if (!idx) return nullptr;
      cur = &(*cur)[*idx];
    } else {
      return nullptr;
    }
  }
  return cur;
}

json* resolve(json& doc, const std::vector<std::string>& parts) {
  if (parts.empty()) return &doc;
  json* parent = parentOf(doc, parts);
  if (!parent) return nullptr;
  if (parent->is_object()) {
    auto it = parent->find(parts.back());
    return it == parent->end() ? nullptr : &*it;
  }
  if (parent->is_array()) {
    auto idx = arrayIndex(parts.back(), parent->size(), false);
    return idx ? &(*parent)[*idx] : nullptr;
  }
  return nullptr;
}

std::optional<std::string> addAt(json& doc, const std::vector<std::string>& parts, json value,
                                 const std::string& path) {
  if (parts.empty()) {
    doc = std::move(value);
    return std::nullopt;
  }
  json* parent = parentOf(doc, parts);
  if (parent && parent->is_object()) {
    (*parent)[parts.back()] = std::move(value);
    return std::nullopt;
  }
  if (parent && parent->is_array()) {
    auto idx = arrayIndex(parts.back(), parent->size(), true);
    if (!idx)
      return "add operation does not apply: doc is missing path: \"" + path + "\": missing value";
    parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(*idx), std::move(value));
    return std::nullopt;
  }
  return "add operation does not apply: doc is missing path: \"" + path + "\": missing value";
}

bool removeAt(json& doc, const std::vector<std::string>& parts) {
  if (parts.empty()) return false;
  json* parent = parentOf(doc, parts);
  if (!parent) return false;
  if (parent->is_object()) return parent->erase(parts.back()) > 0;
  if (parent->is_array()) {
    auto idx = arrayIndex(parts.back(), parent->size(), false);
    if (!idx) return false;
    parent->erase(parent->begin() + static_cast<std::ptrdiff_t>(*idx));
    return true;
  }
  return false;
}

}  // namespace

ApiResult<json> applyJsonPatch(const json& target, const json& patch) {
  if (!patch.is_array()) {
    return badRequestError("json: cannot unmarshal " +
                           std::string(patch.is_object() ? "object" : patch.type_name()) +
                           " into Go value of type jsonpatch.Patch");
  }
  json doc = target;
  for (const json& op : patch) {
    if (!op.is_object()) return badRequestError("json patch operation is not an object");
    std::string kind = stringMember(op, "op");
    auto path_it = op.find("path");
    if (path_it == op.end() || !path_it->is_string()) {
      return patchApplyError(kind + " operation does not apply: doc is missing path: \"\"");
    }
    std::string path = path_it->get<std::string>();
    auto parts = splitPointer(path);
    if (!parts) return patchApplyError("invalid JSON pointer: \"" + path + "\"");
    auto value_it = op.find("value");
    if (kind == "add") {
      if (value_it == op.end())
        return patchApplyError("add operation does not apply: missing value");
      if (auto err = addAt(doc, *parts, *value_it, path)) return patchApplyError(*err);
    } else if (kind == "remove") {
      if (!removeAt(doc, *parts)) {
        return patchApplyError("remove operation does not apply: doc is missing path: \"" + path +
                               "\": missing value");
      }
    } else if (kind == "replace") {
      if (value_it == op.end())
        return patchApplyError("replace operation does not apply: missing value");
      json* at = resolve(doc, *parts);
      if (!at) {
        return patchApplyError("replace operation does not apply: doc is missing key: " + path +
                               ": missing value");
      }
      *at = *value_it;
    } else if (kind == "move" || kind == "copy") {
      auto from_it = op.find("from");
      if (from_it == op.end() || !from_it->is_string()) {
        return patchApplyError(kind + " operation does not apply: missing from path");
      }
      std::string from = from_it->get<std::string>();
      auto from_parts = splitPointer(from);
      json* src = from_parts ? resolve(doc, *from_parts) : nullptr;
      if (!src) {
        return patchApplyError(kind + " operation does not apply: doc is missing from path: " +
                               from + ": missing value");
      }
      json value = *src;
      if (kind == "move") {
        if (path.rfind(from + "/", 0) == 0) {
          return patchApplyError("move operation does not apply: cannot move \"" + from +
                                 "\" into its own child \"" + path + "\"");
        }
        removeAt(doc, *from_parts);
      }
      if (auto err = addAt(doc, *parts, std::move(value), path)) return patchApplyError(*err);
    } else if (kind == "test") {
      json* at = resolve(doc, *parts);
      json expected = value_it == op.end() ? json() : *value_it;
      if ((at == nullptr && !expected.is_null()) || (at != nullptr && *at != expected)) {
        return patchApplyError("testing value " + path + " failed: test failed");
      }
    } else {
      return patchApplyError("Unexpected kind: " + kind);
    }
  }
  return doc;
}

namespace {

std::string mergeKeyFor(const std::string& field, const json& elements) {
  static const std::vector<std::pair<std::string, std::string>> kKeys = {
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"env", "name"},
      {"volumes", "name"},
      {"imagePullSecrets", "name"},
      {"resourceClaims", "name"},
      {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"},
      {"conditions", "type"},
      {"ownerReferences", "uid"},
      {"hostAliases", "ip"}};
  for (const auto& [f, k] : kKeys) {
    if (f == field) return k;
  }
  if (field == "ports") {
    for (const json& e : elements) {
      if (e.is_object() && e.contains("containerPort")) return "containerPort";
    }
    return "port";
  }
  return "";
}

json strategicMerge(const json& target, const json& patch);

json mergeList(const json& target, const json& patch, const std::string& field) {
  // A {"$patch": "replace"} element replaces the whole list with the other elements.
  json plain = json::array();
  bool replace = false;
  for (const json& e : patch) {
    if (e.is_object() && stringMember(e, "$patch") == "replace") {
      replace = true;
    } else {
      plain.push_back(e);
    }
  }
  if (replace || !target.is_array()) {
    json out = json::array();
    for (const json& e : plain) {
      if (!(e.is_object() && stringMember(e, "$patch") == "delete")) out.push_back(e);
    }
    return out;
  }
  if (field == "finalizers") {  // patchStrategy=merge on a list of strings: a set union
    json out = target;
    for (const json& e : plain) {
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    }
    return out;
  }
  std::string key = mergeKeyFor(field, plain);
  if (key.empty()) return plain;
  json out = target;
  for (const json& e : plain) {
    if (!e.is_object() || !e.contains(key)) {
      out.push_back(e);
      continue;
    }
    auto match = std::find_if(out.begin(), out.end(), [&](const json& t) {
      return t.is_object() && t.contains(key) && t[key] == e[key];
    });
    if (stringMember(e, "$patch") == "delete") {
      if (match != out.end()) out.erase(match);
      continue;
    }
    if (match != out.end()) {
      *match = strategicMerge(*match, e);
    } else {
      json added = e;
      added.erase("$patch");
      out.push_back(std::move(added));
    }
  }
  return out;
}

json strategicMerge(const json& target, const json& patch) {
  if (!patch.is_object()) return patch;
  std::string directive = stringMember(patch, "$patch");
  if (directive == "replace") {
    json out = patch;
    out.erase("$patch");
    return out;
  }
  if (directive == "delete") return json();
  json result = target.is_object() ? target : json::object();
  const json* retain = nullptr;
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (k == "$patch" || k.rfind("$setElementOrder/", 0) == 0) continue;
    if (k == "$retainKeys") {
      retain = &*it;
      continue;
    }
    static const std::string kDelete = "$deleteFromPrimitiveList/";
    if (k.rfind(kDelete, 0) == 0) {
      std::string field = k.substr(kDelete.size());
      auto list = result.find(field);
      if (list != result.end() && list->is_array() && it->is_array()) {
        json kept = json::array();
        for (const json& e : *list) {
          if (std::find(it->begin(), it->end(), e) == it->end()) kept.push_back(e);
        }
        *list = std::move(kept);
      }
      continue;
    }
    if (it->is_null()) {
      result.erase(k);
    } else if (it->is_object()) {
      auto cur = result.find(k);
      json merged = strategicMerge(cur == result.end() ? json() : *cur, *it);
      if (merged.is_null()) {
        result.erase(k);
      } else {
        result[k] = std::move(merged);
      }
    } else if (it->is_array()) {
      auto cur = result.find(k);
      result[k] = mergeList(cur == result.end() ? json() : *cur, *it, k);
    } else {
      result[k] = *it;
    }
  }
  if (retain && retain->is_array()) {
    for (auto it = result.begin(); it != result.end();) {
      if (std::find(retain->begin(), retain->end(), it.key()) == retain->end()) {
        it = result.erase(it);
      } else {
        ++it;
      }
    }
  }
  return result;
}

}  // namespace

ApiResult<json> applyStrategicMergePatch(const json& target, const json& patch) {
  if (!patch.is_object()) {
    return badRequestError("json: cannot unmarshal " + std::string(patch.type_name()) +
                           " into Go value of type map[string]interface {}");
  }
  return strategicMerge(target, patch);
}

ApiResult<json> applyPatch(PatchType type, const json& target, std::string_view body) {
  auto parsed = core::parseJson(body);
  if (!parsed.ok()) {
    return badRequestError("error decoding patch: " + parsed.status().message());
  }
  const json& patch = *parsed;
  switch (type) {
    case PatchType::kMerge:
      if (!patch.is_object()) {
        return badRequestError("json: cannot unmarshal " + std::string(patch.type_name()) +
                               " into Go value of type map[string]interface {}");
      }
      return applyMergePatch(target, patch);
    case PatchType::kJson:
      return applyJsonPatch(target, patch);
    case PatchType::kStrategicMerge:
      return applyStrategicMergePatch(target, patch);
  }
  return internalError("unknown patch type");
}

std::optional<PatchType> patchTypeFromContentType(std::string_view content_type) {
  auto semi = content_type.find(';');
  if (semi != std::string_view::npos) content_type = content_type.substr(0, semi);
  while (!content_type.empty() && content_type.back() == ' ') content_type.remove_suffix(1);
  if (content_type == "application/merge-patch+json") return PatchType::kMerge;
  if (content_type == "application/json-patch+json") return PatchType::kJson;
  if (content_type == "application/strategic-merge-patch+json") return PatchType::kStrategicMerge;
  return std::nullopt;
}

}  // namespace ringmaster::local
