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
  json result = target;
  result.merge_patch(patch);  // RFC 7386, as the API server's merge patch
  return result;
}

namespace {

// RFC 6901 pointer, or nullopt for one that does not parse (no leading '/', a bad ~ escape).
std::optional<json::json_pointer> pointer(const std::string& text) {
  try {
    return json::json_pointer(text);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

// Whether `at` names a value in `doc` (an array index past the end, "-" or "01" does not).
bool holds(const json& doc, const json::json_pointer& at) {
  try {
    return doc.contains(at);
  } catch (const json::exception&) {
    return false;
  }
}

// Whether a value can be added at `at`: the root, or a place whose parent is an object or an
// array (nlohmann's patch asserts on a string or number parent instead of failing).
bool canAddAt(const json& doc, const json::json_pointer& at) {
  if (at.empty()) return true;
  const json::json_pointer parent = at.parent_pointer();
  if (!holds(doc, parent)) return false;
  const json& container = doc.at(parent);
  return container.is_object() || container.is_array();
}

}  // namespace

// Each operation is checked here for the API server's error texts, then applied by nlohmann's
// RFC 6902 patch; `test` is ours, since a test without a value compares against null there.
ApiResult<json> applyJsonPatch(const json& target, const json& patch) {
  if (!patch.is_array()) {
    return badRequestError("json: cannot unmarshal " +
                           std::string(patch.is_object() ? "object" : patch.type_name()) +
                           " into Go value of type jsonpatch.Patch");
  }
  json doc = target;
  for (const json& op : patch) {
    if (!op.is_object()) return badRequestError("json patch operation is not an object");
    const std::string kind = stringMember(op, "op");
    auto path_it = op.find("path");
    if (path_it == op.end() || !path_it->is_string()) {
      return patchApplyError(kind + " operation does not apply: doc is missing path: \"\"");
    }
    const std::string path = path_it->get<std::string>();
    const std::optional<json::json_pointer> at = pointer(path);
    if (!at) return patchApplyError("invalid JSON pointer: \"" + path + "\"");
    const bool has_value = op.contains("value");
    const std::string missing_path =
        kind + " operation does not apply: doc is missing path: \"" + path + "\": missing value";
    json step = {{"op", kind}, {"path", path}};
    if (kind == "add" || kind == "replace") {
      if (!has_value) return patchApplyError(kind + " operation does not apply: missing value");
      step["value"] = op["value"];
      if (kind == "replace" && !holds(doc, *at)) {
        return patchApplyError("replace operation does not apply: doc is missing key: " + path +
                               ": missing value");
      }
      if (kind == "add" && !canAddAt(doc, *at)) return patchApplyError(missing_path);
    } else if (kind == "remove") {
      if (at->empty() || !holds(doc, *at)) return patchApplyError(missing_path);
    } else if (kind == "move" || kind == "copy") {
      auto from_it = op.find("from");
      if (from_it == op.end() || !from_it->is_string()) {
        return patchApplyError(kind + " operation does not apply: missing from path");
      }
      const std::string from = from_it->get<std::string>();
      const std::optional<json::json_pointer> source = pointer(from);
      if (!source || !holds(doc, *source)) {
        return patchApplyError(kind + " operation does not apply: doc is missing from path: " +
                               from + ": missing value");
      }
      if (kind == "move" && path.rfind(from + "/", 0) == 0) {
        return patchApplyError("move operation does not apply: cannot move \"" + from +
                               "\" into its own child \"" + path + "\"");
      }
      // Where the value goes, checked as an add is (for move: before `from` is removed, as the
      // destination's parent cannot be inside `from`, checked above).
      if (!canAddAt(doc, *at)) return patchApplyError(missing_path);
      step["from"] = from;
    } else if (kind == "test") {
      const json expected = has_value ? op["value"] : json();
      const bool found = holds(doc, *at);
      if ((!found && !expected.is_null()) || (found && doc.at(*at) != expected)) {
        return patchApplyError("testing value " + path + " failed: test failed");
      }
      continue;
    } else {
      return patchApplyError("Unexpected kind: " + kind);
    }
    try {
      doc.patch_inplace(json::array({std::move(step)}));
    } catch (const json::exception&) {
      // What the checks above let through: an array index past the end or not a number.
      return patchApplyError(missing_path);
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
