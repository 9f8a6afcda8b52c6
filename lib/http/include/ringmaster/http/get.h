#pragma once
// HTTP GET over libcurl: the one client for the small plain-HTTP reads the components make (the
// operator's /metrics scrape of rank 0, the local kubelet's httpGet probes, the tests' reads of
// /metrics, /healthz and /readyz). The API server's HTTPS traffic goes through lib/kube's client,
// which drives libcurl itself (pooled handles, streaming watches).

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::http {

struct GetOptions {
  // The whole exchange: resolve, connect, request and answer.
  std::chrono::milliseconds timeout{5000};
  // Body bytes kept; the rest is read and dropped, and Response::truncated says so.
  size_t max_body = 16u << 20;
  std::vector<std::string> headers;  // "Name: value"
};

struct Response {
  long status = 0;
  std::string body;
  bool truncated = false;
};

// Any answer is a Response, whatever its status. Failure: kUnavailable when no answer came
// (resolve, connect, timeout, a broken answer), naming the URL and the cause; kInvalidArgument
// for a URL libcurl rejects. Thread-safety: any thread (one easy handle per call).
core::Result<Response> get(const std::string& url, const GetOptions& options = {});

// "http://host:port/path", with an IPv6 literal bracketed.
std::string url(const std::string& host, int port, const std::string& path);

}  // namespace ringmaster::http
