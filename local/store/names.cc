#include "local/store/names.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace ringmaster::local {
namespace {

constexpr size_t kLabelMax = 63;
constexpr size_t kSubdomainMax = 253;
constexpr const char* kLabelRegex = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr const char* kSubdomainRegex =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr const char* kDns1035Regex = "[a-z]([-a-z0-9]*[a-z0-9])?";

bool lowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool isLabel(std::string_view s) {
  if (s.empty() || !lowerAlnum(s.front()) || !lowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return lowerAlnum(c) || c == '-'; });
}

// Labels joined by single dots.
bool isSubdomain(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!isLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string maxLenError(size_t n) {
  return "must be no more than " + std::to_string(n) + " characters";
}

// apimachinery's RegexError: "<msg> (e.g. 'a',  or 'b', regex used for validation is '<re>')".
std::string regexError(const std::string& message, const std::string& regex,
                       const std::vector<std::string>& examples) {
  std::string out = message + " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i)
    out += (i > 0 ? " or " : "") + ("'" + examples[i] + "', ");
  return out + "regex used for validation is '" + regex + "')";
}

// apimachinery's maskTrailingDash: a generateName may end in '-'.
std::string maskTrailingDash(std::string name) {
  if (!name.empty() && name.back() == '-') {
    name = name.size() >= 2 ? name.substr(0, name.size() - 2) + "a" : "a";
  }
  return name;
}

// The value as Go's %q shows it in a field error (invalid UTF-8 replaced, never thrown).
std::string quoted(const std::string& value) {
  return nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

NameRule nameRuleFor(const ResourceKey& key) {
  static const std::map<ResourceKey, NameRule> kExceptions = {
      {{"", "namespaces"}, NameRule::kDns1123Label},
      {{"", "services"}, NameRule::kDns1035Label},
  };
  auto it = kExceptions.find(key);
  return it == kExceptions.end() ? NameRule::kDns1123Subdomain : it->second;
}

std::vector<std::string> nameProblems(NameRule rule, const std::string& name_in, bool prefix) {
  const std::string name = prefix ? maskTrailingDash(name_in) : name_in;
  std::vector<std::string> out;
  switch (rule) {
    case NameRule::kDns1123Subdomain:
      if (name.size() > kSubdomainMax) out.push_back(maxLenError(kSubdomainMax));
      if (!isSubdomain(name)) {
        out.push_back(regexError(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
            kSubdomainRegex, {"example.com"}));
      }
      break;
    case NameRule::kDns1123Label:
      if (name.size() > kLabelMax) out.push_back(maxLenError(kLabelMax));
      if (!isLabel(name)) {
        out.push_back(
            regexError("a lowercase RFC 1123 label must consist of lower case "
                       "alphanumeric characters or '-', and must start and end with an "
                       "alphanumeric character",
                       kLabelRegex, {"my-name", "123-abc"}));
      }
      break;
    case NameRule::kDns1035Label:
      if (name.size() > kLabelMax) out.push_back(maxLenError(kLabelMax));
      if (!isLabel(name) || !(name.front() >= 'a' && name.front() <= 'z')) {
        out.push_back(regexError(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character",
            kDns1035Regex, {"my-name", "abc-123"}));
      }
      break;
  }
  return out;
}

std::vector<StatusCause> objectMetaNameCauses(const ResourceType& type,
                                              const std::string& generate_name,
                                              const std::string& name, const std::string& ns) {
  std::vector<StatusCause> out;
  auto invalid = [&](const std::string& field, const std::string& value,
                     const std::vector<std::string>& problems) {
    for (const std::string& p : problems) {
      out.push_back({"FieldValueInvalid", "Invalid value: " + quoted(value) + ": " + p, field});
    }
  };
  const NameRule rule = nameRuleFor(type.key());
  if (!generate_name.empty()) {
    invalid("metadata.generateName", generate_name, nameProblems(rule, generate_name, true));
  }
  invalid("metadata.name", name, nameProblems(rule, name));
  if (type.namespaced) {
    invalid("metadata.namespace", ns, nameProblems(NameRule::kDns1123Label, ns));
  }
  return out;
}

}  // namespace ringmaster::local
