#include "local/https/pki.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <vector>

#include "local/https/files.h"
#include "local/https/local_network.h"
#include "local/https/tls.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local {

namespace {

struct Free {
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using CertPtr = std::unique_ptr<X509, Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Free>;
using BioPtr = std::unique_ptr<BIO, Free>;

constexpr const char* kServerCommonName = "ringmaster-local-apiserver";
// Loopback for clients on the host, the pod gateway for pods (local_network.h).
constexpr const char* kServerAltNames = "IP:127.0.0.1,IP:10.244.0.1,DNS:localhost";

core::Status sslError(std::string_view what) {
  return core::internalError(std::string(what) + ": " + opensslErrors());
}

std::string bioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

core::Result<std::string> certPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return sslError("PEM_write_bio_X509");
  return bioText(bio.get());
}

core::Result<std::string> keyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return sslError("PEM_write_bio_PrivateKey");
  }
  return bioText(bio.get());
}

CertPtr parseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return CertPtr(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

KeyPtr parseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return KeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

core::Result<KeyPtr> generateKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return sslError("generating an ECDSA P-256 key");
  return key;
}

core::Status addExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return sslError(std::string("certificate extension ") + OBJ_nid2sn(nid) + "=" + value);
  }
  return core::Status::Ok();
}

// A certificate for `key` named `cn`, signed by `issuer`/`issuer_key` (self-signed when
// `issuer` is null).
core::Result<CertPtr> makeCert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                               int days, bool is_ca) {
  CertPtr cert(X509_new());
  std::unique_ptr<BIGNUM, Free> serial(BN_new());
  if (!cert || !serial) return sslError("X509_new");
  // 127 random bits: positive and unique, as Go's verifier expects.
  if (X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||  // clock skew
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L * days) == nullptr ||
      X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(cn), -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer ? issuer : cert.get())) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return sslError(std::string("building certificate ") + cn);
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  if (is_ca) {
    RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE"));
    RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_key_usage,
                                    "critical,keyCertSign,cRLSign,digitalSignature"));
  } else {
    RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE"));
    RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_key_usage, "critical,digitalSignature"));
    RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth"));
    RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_subject_alt_name, kServerAltNames));
  }
  RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_subject_key_identifier, "hash"));
  RM_RETURN_IF_ERROR(addExtension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always"));
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0) {
    return sslError(std::string("signing certificate ") + cn);
  }
  return cert;
}

// Whether `leaf` chains to `ca` and is still valid at `at` (for a server certificate: for
// serverAuth on 127.0.0.1 and localhost). `why` says what is wrong.
bool verifies(X509* ca, X509* leaf, bool server, time_t at, std::string* why) {
  std::unique_ptr<X509_STORE, Free> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, Free> ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr) != 1) {
    *why = opensslErrors("X509 store setup failed");
    return false;
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, at);
  if (server) {
    X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set1_host(param, "localhost", 0);
    X509_VERIFY_PARAM_set1_ip_asc(param, "127.0.0.1");
  }
  if (X509_verify_cert(ctx.get()) == 1) {
    // A certificate from before the server listened for pods does not name their gateway.
    if (!server || X509_check_ip_asc(leaf, kDefaultPodGateway, 0) == 1) return true;
    *why = std::string("the certificate does not name ") + kDefaultPodGateway;
    return false;
  }
  *why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
  ERR_clear_error();
  return false;
}

struct Pair {
  CertPtr cert;
  KeyPtr key;
  std::string cert_pem;
  std::string key_pem;
};

// Loads a certificate and its key; `why` says why they cannot be used.
bool loadPair(const std::filesystem::path& cert_path, const std::filesystem::path& key_path,
              Pair* out, std::string* why) {
  auto cert_pem = readFile(cert_path);
  auto key_pem = readFile(key_path);
  if (!cert_pem.ok() || !key_pem.ok()) {
    *why = !cert_pem.ok() ? cert_pem.status().message() : key_pem.status().message();
    return false;
  }
  out->cert = parseCert(*cert_pem);
  out->key = parseKey(*key_pem);
  if (!out->cert || !out->key) {
    *why = opensslErrors("unreadable PEM");
    return false;
  }
  if (X509_check_private_key(out->cert.get(), out->key.get()) != 1) {
    *why = "the key does not match the certificate";
    ERR_clear_error();
    return false;
  }
  out->cert_pem = std::move(*cert_pem);
  out->key_pem = std::move(*key_pem);
  return true;
}

core::Result<Pair> createPair(const char* cn, X509* issuer, EVP_PKEY* issuer_key, int days,
                              bool is_ca, const std::filesystem::path& cert_path,
                              const std::filesystem::path& key_path) {
  Pair pair;
  RM_ASSIGN_OR_RETURN(pair.key, generateKey());
  RM_ASSIGN_OR_RETURN(pair.cert, makeCert(cn, pair.key.get(), issuer,
                                          issuer ? issuer_key : pair.key.get(), days, is_ca));
  RM_ASSIGN_OR_RETURN(pair.cert_pem, certPem(pair.cert.get()));
  RM_ASSIGN_OR_RETURN(pair.key_pem, keyPem(pair.key.get()));
  // Key first: a crash in between leaves a mismatched pair, which the next start regenerates.
  RM_RETURN_IF_ERROR(writeFileAtomic(key_path, pair.key_pem, 0600));
  RM_RETURN_IF_ERROR(writeFileAtomic(cert_path, pair.cert_pem, 0644));
  return pair;
}

bool isHexToken(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

core::Result<LocalPki> loadOrCreatePki(const std::filesystem::path& dir,
                                       const PkiOptions& options) {
  RM_RETURN_IF_ERROR(ensureDirectory(dir, 0700));
  const time_t check_at = std::time(nullptr) + options.renew_before.count();
  const auto ca_crt = dir / "ca.crt", ca_key = dir / "ca.key";
  const auto server_crt = dir / "server.crt", server_key = dir / "server.key";
  LocalPki pki;

  Pair ca;
  std::string why;
  if (!loadPair(ca_crt, ca_key, &ca, &why) ||
      !verifies(ca.cert.get(), ca.cert.get(), false, check_at, &why)) {
    RM_LOG(INFO, LOCAL) << "creating the local CA in " << dir.string() << " (" << why << ")";
    RM_ASSIGN_OR_RETURN(ca, createPair(kCaCommonName.data(), nullptr, nullptr, options.ca_days,
                                       true, ca_crt, ca_key));
    pki.created_ca = true;
  }
  Pair server;
  if (pki.created_ca || !loadPair(server_crt, server_key, &server, &why) ||
      !verifies(ca.cert.get(), server.cert.get(), true, check_at, &why)) {
    if (pki.created_ca) why = "new CA";
    RM_LOG(INFO, LOCAL) << "creating the API server certificate in " << dir.string() << " (" << why
                        << ")";
    RM_ASSIGN_OR_RETURN(server, createPair(kServerCommonName, ca.cert.get(), ca.key.get(),
                                           options.server_days, false, server_crt, server_key));
    pki.created_server = true;
  }
  pki.ca_cert_pem = std::move(ca.cert_pem);
  pki.server_cert_pem = std::move(server.cert_pem);
  pki.server_key_pem = std::move(server.key_pem);
  return pki;
}

core::Result<std::string> loadOrCreateToken(const std::filesystem::path& path) {
  auto existing = readFile(path);
  if (existing.ok()) {
    std::string_view token = *existing;
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.remove_suffix(1);
    }
    if (isHexToken(token)) return std::string(token);
    RM_LOG(WARN, LOCAL) << path.string() << " does not hold a token; writing a new one";
  } else if (existing.status().code() != core::Code::kNotFound) {
    RM_LOG(WARN, LOCAL) << existing.status().message() << "; writing a new token";
  }
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return sslError("RAND_bytes for the bearer token");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 15]);
  }
  if (path.has_parent_path()) RM_RETURN_IF_ERROR(ensureDirectory(path.parent_path(), 0700));
  RM_RETURN_IF_ERROR_CTX(writeFileAtomic(path, token + "\n", 0600), "writing the bearer token");
  return token;
}

}  // namespace ringmaster::local
