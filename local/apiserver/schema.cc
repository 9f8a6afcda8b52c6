#include "local/apiserver/schema.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <mutex>
#include <set>

#include "local/apiserver/cel.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

const json& member(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it != obj.end() ? *it : kNull;
}

bool flag(const json& schema, const char* key) {
  const json& v = member(schema, key);
  return v.is_boolean() && v.get<bool>();
}

std::string str(const json& obj, const char* key) {
  const json& v = member(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::string child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

bool preservesUnknown(const json& schema) {
  if (flag(schema, "x-kubernetes-preserve-unknown-fields")) return true;
  const json& ap = member(schema, "additionalProperties");
  return ap.is_boolean() && ap.get<bool>();
}

// The schema that applies to key `key` of an object, or null when the key is not specified.
const json* propertySchema(const json& schema, const std::string& key) {
  const json& props = member(schema, "properties");
  if (props.is_object()) {
    auto it = props.find(key);
    if (it != props.end()) return &*it;
  }
  const json& ap = member(schema, "additionalProperties");
  if (ap.is_object()) return &ap;
  return nullptr;
}

// Go's %v for a JSON scalar as k8s' field errors print it.
std::string valueText(const json& v) {
  if (v.is_string()) return json(v.get<std::string>()).dump();
  if (v.is_null()) return "\"null\"";
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  }
  return v.dump();
}

std::string numberText(const json& v) {
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  }
  return v.dump();
}

std::string jsonTypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float: {
      double d = v.get<double>();
      return std::floor(d) == d ? "integer" : "number";
    }
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "unknown";
  }
}

bool typeMatches(const std::string& type, const json& v) {
  if (type.empty()) return true;
  const std::string actual = jsonTypeName(v);
  if (type == "number") return actual == "number" || actual == "integer";
  return type == actual;
}

bool isRfc3339(const std::string& s, bool date_only) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), date_only ? "%Y-%m-%d" : "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) {
    if (date_only) return false;
    end = strptime(s.c_str(), "%Y-%m-%dt%H:%M:%S", &tm);
    if (!end) return false;
  }
  if (date_only) return *end == '\0';
  if (*end == '.') {
    ++end;
    if (!isdigit(static_cast<unsigned char>(*end))) return false;
    while (isdigit(static_cast<unsigned char>(*end))) ++end;
  }
  if (*end == 'Z' || *end == 'z') return end[1] == '\0';
  if (*end == '+' || *end == '-') {
    return strlen(end) == 6 && isdigit(static_cast<unsigned char>(end[1])) && end[3] == ':';
  }
  return false;
}

bool isUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

// Whether `v` satisfies `format` (unknown formats pass, as upstream). Only strings are checked,
// as a real API server does: "format: int32" bounds nothing there; a schema says "maximum".
bool formatOk(const std::string& format, const json& v) {
  if (!v.is_string()) return true;
  const std::string s = v.get<std::string>();
  if (format == "date-time" || format == "datetime") return isRfc3339(s, false);
  if (format == "date") return isRfc3339(s, true);
  if (format == "uuid") return isUuid(s);
  return true;
}

// ---------------------------------------------------------------- prune + default

void prune(json& v, const json& schema, const std::string& path, bool root, bool embedded,
           std::vector<std::string>* unknown) {
  if (v.is_object()) {
    const bool preserve = preservesUnknown(schema);
    for (auto it = v.begin(); it != v.end();) {
      const std::string key = it.key();
      const json* ps = propertySchema(schema, key);
      const bool meta_key =
          (root || embedded) && (key == "apiVersion" || key == "kind" || key == "metadata");
      if (meta_key && key == "metadata") {
        ++it;  // ObjectMeta is the server's business, not the schema's
        continue;
      }
      if (!ps) {
        if (meta_key || preserve) {
          ++it;
          continue;
        }
        if (unknown) unknown->push_back(child(path, key));
        it = v.erase(it);
        continue;
      }
      if (it->is_null() && !flag(*ps, "nullable") && member(*ps, "default").is_null()) {
        it = v.erase(it);  // null of a non-nullable field without a default: dropped
        continue;
      }
      prune(*it, *ps, child(path, key), false, flag(*ps, "x-kubernetes-embedded-resource"),
            unknown);
      ++it;
    }
  } else if (v.is_array()) {
    const json& items = member(schema, "items");
    if (!items.is_object()) return;
    for (size_t i = 0; i < v.size(); ++i) {
      prune(v[i], items, item(path, i), false, flag(items, "x-kubernetes-embedded-resource"),
            unknown);
    }
  }
}

void defaults(json& v, const json& schema) {
  if (v.is_object()) {
    const json& props = member(schema, "properties");
    if (props.is_object()) {
      for (auto it = props.begin(); it != props.end(); ++it) {
        const json& d = member(*it, "default");
        if (d.is_null()) continue;
        auto have = v.find(it.key());
        if (have == v.end() || (have->is_null() && !flag(*it, "nullable"))) v[it.key()] = d;
      }
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (const json* ps = propertySchema(schema, it.key())) defaults(*it, *ps);
    }
  } else if (v.is_array()) {
    const json& items = member(schema, "items");
    if (!items.is_object()) return;
    for (auto& e : v) defaults(e, items);
  }
}

// ---------------------------------------------------------------- validation

struct Collected {
  std::vector<StatusCause> required, not_supported, other;
};

void invalid(Collected& out, const std::string& path, const json& shown, const std::string& why,
             const char* reason = "FieldValueInvalid") {
  out.other.push_back({reason, "Invalid value: " + valueText(shown) + ": " + why, path});
}

void validate(const json& v, const json& schema, const std::string& path, bool root,
              Collected& out) {
  if (!schema.is_object()) return;
  const std::string in = path + " in body";
  const bool int_or_string = flag(schema, "x-kubernetes-int-or-string");
  const std::string type = str(schema, "type");
  if (v.is_null()) {
    if (flag(schema, "nullable")) return;
    if (!type.empty()) {
      out.other.push_back(
          {"FieldValueTypeInvalid",
           "Invalid value: \"null\": " + in + " must be of type " + type + ": \"null\"", path});
    }
    return;
  }
  if (int_or_string) {
    if (!v.is_string() && jsonTypeName(v) != "integer") {
      out.other.push_back(
          {"FieldValueTypeInvalid",
           "Invalid value: " + json(jsonTypeName(v)).dump() + ": " + in +
               " must be of type integer or string: " + json(jsonTypeName(v)).dump(),
           path});
      return;
    }
  } else if (!typeMatches(type, v)) {
    out.other.push_back({"FieldValueTypeInvalid",
                         "Invalid value: " + json(jsonTypeName(v)).dump() + ": " + in +
                             " must be of type " + type + ": " + json(jsonTypeName(v)).dump(),
                         path});
    return;
  }
  // format
  const std::string format = str(schema, "format");
  if (!format.empty() && !formatOk(format, v)) {
    const std::string shown = v.is_string() ? v.get<std::string>() : v.dump();
    out.other.push_back({"FieldValueTypeInvalid",
                         "Invalid value: " + json(shown).dump() + ": " + in + " must be of type " +
                             format + ": " + json(shown).dump(),
                         path});
  }
  // enum
  const json& en = member(schema, "enum");
  if (en.is_array()) {
    bool found = false;
    for (const auto& e : en) found |= e == v;
    if (!found) {
      std::string values;
      for (const auto& e : en) {
        values += (values.empty() ? "" : ", ") +
                  json(e.is_string() ? e.get<std::string>() : e.dump()).dump();
      }
      out.not_supported.push_back(
          {"FieldValueNotSupported",
           "Unsupported value: " + valueText(v) + ": supported values: " + values, path});
    }
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    const json& min = member(schema, "minimum");
    if (min.is_number()) {
      const bool excl = flag(schema, "exclusiveMinimum");
      if (excl ? !(x > min.get<double>()) : x < min.get<double>()) {
        invalid(out, path, v,
                in + " should be greater than " + (excl ? "" : "or equal to ") + numberText(min));
      }
    }
    const json& max = member(schema, "maximum");
    if (max.is_number()) {
      const bool excl = flag(schema, "exclusiveMaximum");
      if (excl ? !(x < max.get<double>()) : x > max.get<double>()) {
        invalid(out, path, v,
                in + " should be less than " + (excl ? "" : "or equal to ") + numberText(max));
      }
    }
    const json& mult = member(schema, "multipleOf");
    if (mult.is_number() && mult.get<double>() > 0) {
      double q = x / mult.get<double>();
      if (std::fabs(q - std::round(q)) > 1e-9) {
        invalid(out, path, v, in + " should be a multiple of " + numberText(mult));
      }
    }
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    int64_t chars = 0;
    for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
    const json& minl = member(schema, "minLength");
    if (minl.is_number_integer() && chars < minl.get<int64_t>()) {
      invalid(out, path, v, in + " should be at least " + minl.dump() + " chars long");
    }
    const json& maxl = member(schema, "maxLength");
    if (maxl.is_number_integer() && chars > maxl.get<int64_t>()) {
      const int64_t m = maxl.get<int64_t>();
      out.other.push_back(
          {"FieldValueTooLong", "Too long: may not be longer than " + std::to_string(m), path});
    }
    const std::string pattern = str(schema, "pattern");
    if (!pattern.empty()) {
      auto m = regexSearch(pattern, s);
      if (m && !*m) invalid(out, path, v, in + " should match '" + pattern + "'");
    }
  }
  if (v.is_array()) {
    const auto n = static_cast<int64_t>(v.size());
    const json& mini = member(schema, "minItems");
    if (mini.is_number_integer() && n < mini.get<int64_t>()) {
      invalid(out, path, n, in + " should have at least " + mini.dump() + " items");
    }
    const json& maxi = member(schema, "maxItems");
    if (maxi.is_number_integer() && n > maxi.get<int64_t>()) {
      out.other.push_back(
          {"FieldValueTooMany",
           "Too many: " + std::to_string(n) + ": must have at most " + maxi.dump() + " items",
           path});
    }
    if (flag(schema, "uniqueItems")) {
      for (size_t i = 0; i < v.size(); ++i) {
        for (size_t j = i + 1; j < v.size(); ++j) {
          if (v[i] == v[j]) {
            out.other.push_back(
                {"FieldValueDuplicate", "Duplicate value: " + valueText(v[j]), item(path, j)});
          }
        }
      }
    }
    const json& items = member(schema, "items");
    for (size_t i = 0; i < v.size(); ++i) validate(v[i], items, item(path, i), false, out);
  }
  if (v.is_object()) {
    const auto n = static_cast<int64_t>(v.size());
    const json& minp = member(schema, "minProperties");
    if (minp.is_number_integer() && n < minp.get<int64_t>()) {
      out.other.push_back({"FieldValueInvalid",
                           "Invalid value: " + std::to_string(n) + ": " + in +
                               " should have at least " + minp.dump() + " properties",
                           path});
    }
    const json& maxp = member(schema, "maxProperties");
    if (maxp.is_number_integer() && n > maxp.get<int64_t>()) {
      out.other.push_back(
          {"FieldValueTooMany",
           "Too many: " + std::to_string(n) + ": must have at most " + maxp.dump() + " items",
           path});
    }
    const json& req = member(schema, "required");
    if (req.is_array()) {
      for (const auto& r : req) {
        if (r.is_string() && !v.contains(r.get<std::string>())) {
          out.required.push_back(
              {"FieldValueRequired", "Required value", child(path, r.get<std::string>())});
        }
      }
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (root && it.key() == "metadata") continue;
      if (const json* ps = propertySchema(schema, it.key())) {
        validate(*it, *ps, child(path, it.key()), false, out);
      }
    }
  }
}

// ---------------------------------------------------------------- CEL

std::mutex g_logged_mu;
std::set<std::string>* g_logged = new std::set<std::string>;  // leaked: used at exit

void logUnsupportedOnce(const std::string& rule, const std::string& why) {
  std::lock_guard lock(g_logged_mu);
  if (!g_logged->insert(rule).second) return;
  RM_LOG(WARN, LOCAL) << "CEL rule not checked (outside the supported subset: " << why
                      << "): " << rule;
}

std::string celTypeName(const json& v) {
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_float()) return "number";
  if (v.is_number()) return "integer";
  return "null";
}

void rules(const json& v, const json* old, const json& schema, const std::string& path, bool root,
           std::vector<StatusCause>& out) {
  if (!schema.is_object() || v.is_null()) return;
  const json& vals = member(schema, "x-kubernetes-validations");
  if (vals.is_array()) {
    for (const auto& rule : vals) {
      const std::string expr = str(rule, "rule");
      if (expr.empty()) continue;
      const bool transition = celUsesOldSelf(expr);
      if (transition && !old) continue;  // transition rules run on updates only
      CelResult r = evaluateCel(expr, v, transition ? old : nullptr);
      if (r.kind == CelResult::kUnsupported) {
        logUnsupportedOnce(expr, r.message);
        continue;
      }
      std::string field = path;
      const std::string field_path = str(rule, "fieldPath");
      if (!field_path.empty()) {
        field += field_path[0] == '.' ? field_path : "." + field_path;
      }
      // kube-apiserver 1.26 prints the root's empty field path as Go's nil pointer.
      if (field.empty()) field = "<nil>";
      const std::string type = celTypeName(v);
      if (r.kind == CelResult::kError) {
        out.push_back({"FieldValueInvalid",
                       "Invalid value: \"" + type + "\": " + expr + ": " + r.message, field});
        continue;
      }
      if (!r.value.is_boolean()) {
        logUnsupportedOnce(expr, "does not evaluate to a bool");
        continue;
      }
      if (r.value.get<bool>()) continue;
      std::string message = str(rule, "message");
      const std::string message_expr = str(rule, "messageExpression");
      if (!message_expr.empty()) {
        CelResult m = evaluateCel(message_expr, v, transition ? old : nullptr);
        if (m.kind == CelResult::kOk && m.value.is_string() && !m.value.get<std::string>().empty())
          message = m.value.get<std::string>();
      }
      if (message.empty()) message = "failed rule: " + expr;
      const std::string reason = str(rule, "reason");
      if (reason == "FieldValueForbidden") {
        out.push_back({reason, "Forbidden: " + message, field});
      } else if (reason == "FieldValueRequired") {
        out.push_back({reason, "Required value: " + message, field});
      } else {
        out.push_back({"FieldValueInvalid", "Invalid value: \"" + type + "\": " + message, field});
      }
    }
  }
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (root && it.key() == "metadata") continue;
      const json* ps = propertySchema(schema, it.key());
      if (!ps) continue;
      const json* o = nullptr;
      if (old && old->is_object()) {
        auto oi = old->find(it.key());
        if (oi != old->end()) o = &*oi;
      }
      rules(*it, o, *ps, child(path, it.key()), false, out);
    }
  } else if (v.is_array()) {
    const json& items = member(schema, "items");
    // Old items correlate only for listType map/set; without that the item rules see no oldSelf.
    for (size_t i = 0; i < v.size(); ++i) rules(v[i], nullptr, items, item(path, i), false, out);
  }
}

bool hasRules(const json& schema) {
  if (!schema.is_object()) return false;
  if (member(schema, "x-kubernetes-validations").is_array() &&
      !member(schema, "x-kubernetes-validations").empty())
    return true;
  const json& props = member(schema, "properties");
  if (props.is_object()) {
    for (const auto& p : props) {
      if (hasRules(p)) return true;
    }
  }
  return hasRules(member(schema, "items")) || hasRules(member(schema, "additionalProperties"));
}

// ---------------------------------------------------------------- structural

void structural(const json& s, const std::string& path, bool root, bool in_items,
                std::vector<StatusCause>& out) {
  if (!s.is_object()) {
    out.push_back(
        {"FieldValueInvalid", "Invalid value: " + valueText(s) + ": must be a schema", path});
    return;
  }
  const std::string type = str(s, "type");
  const bool preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
  const bool int_or_string = flag(s, "x-kubernetes-int-or-string");
  if (root && type != "object") {
    out.push_back(
        type.empty()
            ? StatusCause{"FieldValueRequired", "Required value: must not be empty at the root",
                          path + ".type"}
            : StatusCause{"FieldValueInvalid",
                          "Invalid value: " + json(type).dump() + ": must be object at the root",
                          path + ".type"});
  } else if (!root && type.empty() && !preserve && !int_or_string) {
    out.push_back({"FieldValueRequired",
                   std::string("Required value: must not be empty for specified ") +
                       (in_items ? "array items" : "object fields"),
                   path + ".type"});
  }
  static const std::set<std::string> kTypes = {"object", "array",   "string", "integer",
                                               "number", "boolean", ""};
  if (!kTypes.count(type)) {
    out.push_back({"FieldValueNotSupported",
                   "Unsupported value: " + json(type).dump() +
                       ": supported values: \"array\", \"boolean\", \"integer\", \"number\", "
                       "\"object\", \"string\"",
                   path + ".type"});
  }
  const json& props = member(s, "properties");
  const json& ap = member(s, "additionalProperties");
  if (props.is_object() && !props.empty() && !ap.is_null()) {
    if (!(ap.is_boolean() && ap.get<bool>() == false)) {
      out.push_back({"FieldValueForbidden",
                     "Forbidden: additionalProperties and properties are mutual exclusive",
                     path + ".additionalProperties"});
    }
  }
  if (ap.is_boolean() && !ap.get<bool>()) {
    out.push_back({"FieldValueForbidden", "Forbidden: additionalProperties cannot be set to false",
                   path + ".additionalProperties"});
  }
  if (type == "array" && !member(s, "items").is_object()) {
    out.push_back({"FieldValueRequired", "Required value: must be specified", path + ".items"});
  }
  if (!member(s, "$ref").is_null()) {
    out.push_back({"FieldValueForbidden", "Forbidden: $ref is not supported", path + ".$ref"});
  }
  if (props.is_object()) {
    for (auto it = props.begin(); it != props.end(); ++it) {
      structural(*it, path + ".properties[" + it.key() + "]", false, false, out);
    }
  }
  if (member(s, "items").is_object()) structural(s["items"], path + ".items", false, true, out);
  if (ap.is_object()) structural(ap, path + ".additionalProperties", false, false, out);
  if (!member(s, "default").is_null() && root) {
    out.push_back(
        {"FieldValueForbidden", "Forbidden: must not be set at the root", path + ".default"});
  }
}

}  // namespace

void pruneUnknownFields(json& obj, const json& schema, std::vector<std::string>* unknown) {
  prune(obj, schema, "", true, false, unknown);
}

void applyDefaults(json& obj, const json& schema) { defaults(obj, schema); }

std::vector<StatusCause> validateSchema(const json& obj, const json& schema) {
  Collected c;
  validate(obj, schema, "", true, c);
  std::vector<StatusCause> out = std::move(c.required);
  for (auto& x : c.not_supported) out.push_back(std::move(x));
  for (auto& x : c.other) out.push_back(std::move(x));
  return out;
}

std::vector<StatusCause> validateCelRules(const json& obj, const json* old, const json& schema) {
  std::vector<StatusCause> out;
  rules(obj, old, schema, "", true, out);
  return out;
}

bool schemaHasCelRules(const json& schema) { return hasRules(schema); }

std::vector<StatusCause> checkStructuralSchema(const json& schema, const std::string& path) {
  std::vector<StatusCause> out;
  structural(schema, path, true, false, out);
  return out;
}

SchemaOutcome admitCustomResource(
    json& obj, const json* old, const json& schema, bool status_only,
    const std::function<std::vector<StatusCause>(const nlohmann::json&)>& more_causes) {
  SchemaOutcome out;
  pruneUnknownFields(obj, schema, &out.unknown_fields);
  std::sort(out.unknown_fields.begin(), out.unknown_fields.end());
  applyDefaults(obj, schema);
  auto keep = [&](std::vector<StatusCause> causes) {
    if (!status_only) return causes;
    std::vector<StatusCause> kept;
    for (auto& c : causes) {
      if (c.field == "status" || c.field.rfind("status.", 0) == 0 ||
          c.field.rfind("status[", 0) == 0) {
        kept.push_back(std::move(c));
      }
    }
    return kept;
  };
  out.causes = keep(validateSchema(obj, schema));
  if (more_causes) {
    for (auto& c : more_causes(obj)) out.causes.push_back(std::move(c));
  }
  if (!schemaHasCelRules(schema)) return out;
  // As kube-apiserver 1.26: rules are skipped only after errors that leave the object's shape
  // unknown or too big to evaluate (wrong type, missing required field, too long, too many). A
  // value outside an enum does not stop them (checked against it by the differential test).
  for (const auto& c : out.causes) {
    if (c.reason == "FieldValueTypeInvalid" || c.reason == "FieldValueRequired" ||
        c.reason == "FieldValueTooLong" || c.reason == "FieldValueTooMany") {
      out.causes.push_back({"FieldValueInvalid",
                            "Invalid value: \"null\": some validation rules were not checked "
                            "because the object was invalid; correct the existing errors to "
                            "complete validation",
                            "<nil>"});
      return out;
    }
  }
  for (auto& c : keep(validateCelRules(obj, old, schema))) out.causes.push_back(std::move(c));
  return out;
}

}  // namespace ringmaster::local
