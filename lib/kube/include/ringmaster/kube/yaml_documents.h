#pragma once
// readYamlDocuments: a multi-document YAML file (what `kubectl apply -f` takes) as JSON values,
// with YAML 1.2 core-schema typing: plain scalars that read as integers, floats, booleans or
// null become those JSON types; quoted scalars stay strings ("1.0" in quotes is a string).
//
// Failure: the Status names the file, and for a syntax error the line and column; empty
// documents (a trailing `---`) are skipped, a document that is not a mapping is an error.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::kube {

core::Result<std::vector<nlohmann::json>> readYamlDocuments(const std::filesystem::path& path);
core::Result<std::vector<nlohmann::json>> parseYamlDocuments(const std::string& text,
                                                             const std::string& source);

}  // namespace ringmaster::kube
