#pragma once
// Object names as kube-apiserver validates them on create: which resource uses which rule (the
// one table, nameRuleFor); the rules themselves are lib/kube's (ringmaster/kube/names.h), with
// apimachinery's messages. Names also become file names (the
// kubelet's pod directories), so nothing else may reach the store.
//
// Thread-safety: pure functions. Failure: the problems are returned, never thrown.

#include <string>
#include <vector>

#include "local/store/resource_type.h"
#include "local/store/status_error.h"

namespace ringmaster::local {

enum class NameRule {
  kDns1123Subdomain,  // at most 253 of [a-z0-9.-], alphanumeric at both ends and around dots
  kDns1123Label,      // at most 63 of [a-z0-9-], alphanumeric at both ends
  kDns1035Label,      // a DNS-1123 label that starts with a letter
};

// The rule metadata.name follows for objects of `key`: namespaces are DNS-1123 labels,
// services DNS-1035 labels, every other kind (built-in or custom) a DNS-1123 subdomain.
NameRule nameRuleFor(const ResourceKey& key);

// Why `name` breaks `rule`, in kube-apiserver's words; empty when it is valid. `prefix`: the
// name is a generateName, to which a suffix is appended (a trailing '-' is then fine).
std::vector<std::string> nameProblems(NameRule rule, const std::string& name, bool prefix = false);

// The 422 causes of an object's metadata on create, in kube-apiserver's order:
// metadata.generateName, metadata.name (after generation), metadata.namespace (a DNS-1123
// label, when the type is namespaced). Empty when all are valid.
std::vector<StatusCause> objectMetaNameCauses(const ResourceType& type,
                                              const std::string& generate_name,
                                              const std::string& name, const std::string& ns);

}  // namespace ringmaster::local
