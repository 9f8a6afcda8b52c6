#pragma once
// Private to lib/kube: the libcurl ApiClient (client_factory.h documents its contract).

#include <memory>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/client_factory.h"

namespace ringmaster::kube::internal {

core::Result<std::unique_ptr<ApiClient>> makeCurlClient(const KubeConfig& config,
                                                        const ClientOptions& options);

}  // namespace ringmaster::kube::internal
