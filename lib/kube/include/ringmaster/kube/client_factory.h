#pragma once
// makeApiClient: the ApiClient for a KubeConfig (the libcurl transport, lib/kube/src).
//
// Every request: a deadline (ApiRequest::timeout, retries included), `Authorization: Bearer`
// with the token read at that moment (KubeConfig::bearerToken re-reads token files), TLS
// verified against the cluster CA only (not the system trust store) when the config has one.
// 429 (honouring Retry-After) and 5xx answers are retried with exponential backoff up to
// max_attempts while the deadline allows; the last answer is returned otherwise.
// Each watch gets its own connection, silence limit (ApiRequest::timeout) and cancellation.
//
// Ownership: the returned client owns its connections; WatchStreams it returned must be
// destroyed or cancelled before it. Thread-safety: the client is safe to share between threads.
// Failure: makeApiClient fails on an unusable config (bad URL, unreadable certificate);
// TLS failures are reported in words ("TLS handshake with https://...: certificate not
// trusted by the cluster CA from <kubeconfig>").

#include <chrono>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/kubeconfig.h"

namespace ringmaster::kube {

struct ClientOptions {
  int max_attempts = 5;  // for 429 and 5xx answers
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5'000};
  std::string user_agent = "ringmaster/0.1";
};

core::Result<std::unique_ptr<ApiClient>> makeApiClient(const KubeConfig& config,
                                                       const ClientOptions& options = {});

}  // namespace ringmaster::kube
