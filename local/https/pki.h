#pragma once
// The local cluster's PKI and credentials, kept in a data directory and reused across restarts:
//   ca.crt / ca.key          self-signed CA, CN "ringmaster-local-ca", 10 years (ECDSA P-256)
//   server.crt / server.key  signed by it for 127.0.0.1, localhost and the pod gateway
//                            (local_network.h) (serverAuth), 1 year
//   token                    the bearer token: 32 random bytes as 64 hex digits
// Keys and the token are written with mode 0600 (atomically: temp file + rename), the directory
// is created 0700. A file that is missing, unreadable, mismatched or expiring within
// `renew_before` is regenerated; a new CA also renews the server certificate. Kubeconfigs
// written before a CA change stop working, so callers rewrite theirs on every start.
//
// Thread-safety: no shared state, but two processes must not initialise one directory at once.
// Failure: Status naming the file or the OpenSSL call.

#include <chrono>
#include <filesystem>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

inline constexpr std::string_view kCaCommonName = "ringmaster-local-ca";

struct PkiOptions {
  int ca_days = 3650;
  int server_days = 365;
  std::chrono::seconds renew_before{std::chrono::hours(24 * 30)};
};

struct LocalPki {
  std::string ca_cert_pem;
  std::string server_cert_pem;  // the server certificate only (clients trust the CA)
  std::string server_key_pem;
  bool created_ca = false;      // this call generated a new CA
  bool created_server = false;  // this call generated a new server certificate
};

core::Result<LocalPki> loadOrCreatePki(const std::filesystem::path& dir,
                                       const PkiOptions& options = {});

// Reads the token in `path`, or writes a fresh one there when it is missing or malformed.
core::Result<std::string> loadOrCreateToken(const std::filesystem::path& path);

}  // namespace ringmaster::local
