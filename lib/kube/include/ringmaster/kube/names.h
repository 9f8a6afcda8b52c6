#pragma once
// Kubernetes' name rules with apimachinery's messages (IsDNS1123Label, IsDNS1123Subdomain,
// IsDNS1035Label, IsQualifiedName, IsValidLabelValue) and its path rule (validatePathNoBacksteps),
// the one implementation of them: the local API server checks object names with them, the operator
// the names a TrainingJob gives (its own, its volumes', its pods' labels).
//
// Thread-safety: pure functions. Failure: the problems are returned, never thrown; an empty
// vector means the name is valid.

#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::kube {

inline constexpr size_t kDnsLabelMaxLength = 63;
inline constexpr size_t kDnsSubdomainMaxLength = 253;

// At most 63 of [a-z0-9-], alphanumeric at both ends (pod hostnames, volume names, namespaces).
std::vector<std::string> dns1123LabelProblems(std::string_view name);
// At most 253 characters of labels joined by single dots (most object names).
std::vector<std::string> dns1123SubdomainProblems(std::string_view name);
// A DNS-1123 label that starts with a letter (Service names).
std::vector<std::string> dns1035LabelProblems(std::string_view name);
// Whether `path` has a ".." segment, which could climb out of where it is resolved (a volume's
// subPath, a mount path, a checkpoint directory).
bool hasBackstep(std::string_view path);
// Why `key` is not a label or annotation key, a qualified name (IsQualifiedName: [prefix/]name, a
// DNS-1123 subdomain prefix, a name part of at most 63 alphanumerics, '-', '_' or '.',
// alphanumeric at both ends).
std::vector<std::string> labelKeyProblems(const std::string& key);
// Why `value` is not a label value (IsValidLabelValue: empty, or a name part).
std::vector<std::string> labelValueProblems(const std::string& value);

}  // namespace ringmaster::kube
