#include "ringmaster/kube/names.h"

#include <algorithm>

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

}  // namespace ringmaster::kube
