#pragma once
// The discovery and OpenAPI documents kubectl reads before it does anything:
//   /api                      APIVersions
//   /apis                     APIGroupList
//   /api/v1, /apis/<g>/<v>    APIResourceList (verbs, shortNames, categories, subresources)
//   /version                  version.Info
//   /openapi/v3, /openapi/v3/<gv>  OpenAPI v3: one PATCH operation per kind carrying
//       x-kubernetes-group-version-kind and the `fieldValidation` query parameter, which is what
//       kubectl's validator checks before leaving validation to the server,
//       and the kinds' component schemas (openapi.h) that `kubectl explain` reads.
//   /openapi/v2               the same schemas as one Swagger 2.0 document (openapi_v2.h)
//
// Thread-safety: pure functions of the registry snapshot. Failure: none (empty documents).

#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"

namespace ringmaster::local {

// The Kubernetes release whose API this server speaks, as /version and the OpenAPI documents say.
inline constexpr const char* kServerGitVersion = "v1.32.4-ringmaster";

std::string apiVersionsText(const std::string& server_address);  // "127.0.0.1:6443"
std::string apiGroupListText(const std::vector<ApiResource>& resources);
// For the group/version (group "" = core). Empty resources -> an empty list.
std::string apiResourceListText(const std::vector<ApiResource>& resources, const std::string& group,
                                const std::string& version);
std::string versionText();

// The /openapi/v3 index, and the document of one group-version path ("api/v1",
// "apis/example.dev/v1"); "" when that path serves nothing.
std::string openApiV3IndexText(const std::vector<ApiResource>& resources);
std::string openApiV3DocumentText(const std::vector<ApiResource>& resources,
                                  const std::string& gv_path);

}  // namespace ringmaster::local
