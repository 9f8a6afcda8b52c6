#pragma once
// Private to lib/kube: the cpprestsdk ApiClient (client_factory.h documents its contract).
// This header names no cpprestsdk type so that tests and the factory can include it freely.

#include <memory>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/client_factory.h"

namespace ringmaster::kube::internal {

core::Result<std::unique_ptr<ApiClient>> makeCpprestClient(const KubeConfig& config,
                                                           const ClientOptions& options);

}  // namespace ringmaster::kube::internal
