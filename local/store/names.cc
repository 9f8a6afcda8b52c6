#include "local/store/names.h"

#include <map>
#include <nlohmann/json.hpp>

#include "ringmaster/kube/names.h"

namespace ringmaster::local {
namespace {

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
  switch (rule) {
    case NameRule::kDns1123Subdomain:
      return kube::dns1123SubdomainProblems(name);
    case NameRule::kDns1123Label:
      return kube::dns1123LabelProblems(name);
    case NameRule::kDns1035Label:
      return kube::dns1035LabelProblems(name);
  }
  return {};
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
