#pragma once
// LogServer: the local kubelet's read-only HTTPS endpoint for its containers' logs, which a real
// kube-apiserver calls for `kubectl logs` once the Node advertises it (status.daemonEndpoints.
// kubeletEndpoint.Port on the InternalIP 127.0.0.1):
//   GET /containerLogs/<namespace>/<pod>/<container>?follow=&tailLines=&limitBytes=
//       &sinceSeconds=&previous=
// Files are the kubelet's own (pod_paths.h); answers are text/plain (local/https/log_file.h),
// errors plain text with 400 or 404 as a kubelet answers them. TLS with a self-signed
// certificate kept under <root>/pki; no client authentication (such an API server presents no
// kubelet client certificate), so it listens on 127.0.0.1 only and is off unless asked for.
//
// Ownership: owns the HTTPS server; `pods` must stay callable until stop(). Thread-safety:
// requests run on connection threads and only call `pods` and read files. Failure: start()
// fails when the port cannot be bound or the certificate cannot be made.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::local::kubelet {

class LogServer {
 public:
  // The pod the kubelet knows by namespace and name (nullptr when none).
  using PodLookup =
      std::function<std::shared_ptr<const kube::Pod>(const std::string&, const std::string&)>;

  // port 0: any free port (see port()).
  static core::Result<std::unique_ptr<LogServer>> start(int port,
                                                        const std::filesystem::path& root_dir,
                                                        PodLookup pods);
  ~LogServer();
  int port() const;
  void stop();

  class Impl;

 private:
  explicit LogServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringmaster::local::kubelet
