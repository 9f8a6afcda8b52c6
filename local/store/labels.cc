#include "local/store/labels.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace ringmaster::local {
namespace {

constexpr size_t kNamePartMax = 63;
constexpr size_t kPrefixMax = 253;

bool isAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool namePartChars(std::string_view s) {
  return !s.empty() && isAlnum(s.front()) && isAlnum(s.back()) &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return isAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool dnsSubdomainChars(std::string_view s) {
  return !s.empty() && isAlnum(s.front()) && isAlnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
         });
}

std::string tooLong(size_t max) {
  return "must be no more than " + std::to_string(max) + " characters";
}

}  // namespace

std::vector<std::string> labelKeyProblems(const std::string& key) {
  std::vector<std::string> out;
  std::string_view name = key;
  const size_t slash = key.find('/');
  if (slash != std::string::npos) {
    if (key.find('/', slash + 1) != std::string::npos) {
      return {
          "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
          "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
          "or '123-abc', regex used for validation is "
          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
          "and '/' (e.g. 'example.com/MyName')"};
    }
    const std::string_view prefix = std::string_view(key).substr(0, slash);
    name = std::string_view(key).substr(slash + 1);
    if (prefix.empty()) {
      out.push_back("prefix part must be non-empty");
    } else {
      if (prefix.size() > kPrefixMax) out.push_back("prefix part " + tooLong(kPrefixMax));
      if (!dnsSubdomainChars(prefix)) {
        out.push_back(
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
      }
    }
  }
  if (name.empty()) {
    out.push_back("name part must be non-empty");
    return out;
  }
  if (name.size() > kNamePartMax) out.push_back("name part " + tooLong(kNamePartMax));
  if (!namePartChars(name)) {
    out.emplace_back(
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
  }
  return out;
}

std::vector<std::string> labelValueProblems(const std::string& value) {
  std::vector<std::string> out;
  if (value.empty()) return out;
  if (value.size() > kNamePartMax) out.push_back(tooLong(kNamePartMax));
  if (!namePartChars(value)) {
    out.emplace_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  }
  return out;
}

std::vector<StatusCause> labelCauses(const nlohmann::json& metadata) {
  std::vector<StatusCause> out;
  if (!metadata.is_object()) return out;
  auto labels = metadata.find("labels");
  if (labels == metadata.end() || !labels->is_object()) return out;
  auto add = [&](const std::string& bad, const std::vector<std::string>& problems) {
    for (const auto& p : problems) {
      out.push_back(
          {"FieldValueInvalid", "Invalid value: \"" + bad + "\": " + p, "metadata.labels"});
    }
  };
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    add(it.key(), labelKeyProblems(it.key()));
    if (it->is_string()) add(it->get<std::string>(), labelValueProblems(it->get<std::string>()));
  }
  return out;
}

}  // namespace ringmaster::local
