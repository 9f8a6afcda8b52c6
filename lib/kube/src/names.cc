#include "ringmaster/kube/names.h"

#include <algorithm>
#include <cctype>

namespace ringmaster::kube {
namespace {

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

std::vector<std::string> dns1123LabelProblems(std::string_view name) {
  std::vector<std::string> out;
  if (name.size() > kDnsLabelMaxLength) out.push_back(maxLenError(kDnsLabelMaxLength));
  if (!isLabel(name)) {
    out.push_back(regexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character",
        kLabelRegex, {"my-name", "123-abc"}));
  }
  return out;
}

std::vector<std::string> dns1123SubdomainProblems(std::string_view name) {
  std::vector<std::string> out;
  if (name.size() > kDnsSubdomainMaxLength) out.push_back(maxLenError(kDnsSubdomainMaxLength));
  if (!isSubdomain(name)) {
    out.push_back(regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character",
        kSubdomainRegex, {"example.com"}));
  }
  return out;
}

std::vector<std::string> dns1035LabelProblems(std::string_view name) {
  std::vector<std::string> out;
  if (name.size() > kDnsLabelMaxLength) out.push_back(maxLenError(kDnsLabelMaxLength));
  if (!isLabel(name) || !(name.front() >= 'a' && name.front() <= 'z')) {
    out.push_back(regexError(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
        "an alphabetic character, and end with an alphanumeric character",
        kDns1035Regex, {"my-name", "abc-123"}));
  }
  return out;
}

bool hasBackstep(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

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

}  // namespace ringmaster::kube
