#include "local/https/service_account_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>

#include "ringmaster/core/base64.h"
#include "ringmaster/core/json.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;
using std::chrono::system_clock;

constexpr std::string_view kHeader = R"({"alg":"HS256","typ":"JWT"})";

int64_t unixSeconds(system_clock::time_point t) {
  return duration_cast<seconds>(t.time_since_epoch()).count();
}

}  // namespace

std::string ServiceAccountClaims::userName() const {
  return "system:serviceaccount:" + namespace_name + ":" + service_account;
}

std::string ServiceAccountTokens::sign(std::string_view signing_input) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &length);
  return core::base64UrlEncode(std::string_view(reinterpret_cast<const char*>(mac), length));
}

std::string ServiceAccountTokens::issue(const ServiceAccountClaims& c,
                                        system_clock::time_point now) const {
  json k8s = {{"namespace", c.namespace_name},
              {"serviceaccount", {{"name", c.service_account}, {"uid", c.service_account_uid}}}};
  if (!c.pod_name.empty()) k8s["pod"] = {{"name", c.pod_name}, {"uid", c.pod_uid}};
  const json payload = {{"aud", c.audiences},      {"exp", unixSeconds(c.expires)},
                        {"iat", unixSeconds(now)}, {"iss", kServiceAccountIssuer},
                        {"kubernetes.io", k8s},    {"nbf", unixSeconds(now)},
                        {"sub", c.userName()}};
  const std::string input =
      core::base64UrlEncode(kHeader) + "." + core::base64UrlEncode(payload.dump());
  return input + "." + sign(input);
}

std::optional<ServiceAccountClaims> ServiceAccountTokens::verify(
    std::string_view token, system_clock::time_point now) const {
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || key_.empty()) return std::nullopt;
  const std::string_view input = token.substr(0, second);
  const std::string_view signature = token.substr(second + 1);
  const std::string expected = sign(input);
  if (signature.size() != expected.size() ||
      CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) != 0) {
    return std::nullopt;
  }
  const auto header = core::base64UrlDecode(token.substr(0, first));
  const auto payload_text = core::base64UrlDecode(input.substr(first + 1));
  if (!header || *header != kHeader || !payload_text) return std::nullopt;
  auto payload = core::parseJson(*payload_text);
  if (!payload.ok() || !payload->is_object()) return std::nullopt;
  const json& p = *payload;
  try {
    ServiceAccountClaims c;
    const json& k8s = p.at("kubernetes.io");
    c.namespace_name = k8s.at("namespace").get<std::string>();
    c.service_account = k8s.at("serviceaccount").at("name").get<std::string>();
    c.service_account_uid = k8s.at("serviceaccount").value("uid", "");
    if (k8s.contains("pod")) {
      c.pod_name = k8s["pod"].value("name", "");
      c.pod_uid = k8s["pod"].value("uid", "");
    }
    c.audiences = p.value("aud", std::vector<std::string>{});
    c.expires = system_clock::time_point(seconds(p.at("exp").get<int64_t>()));
    if (p.value("iss", "") != kServiceAccountIssuer || p.value("sub", "") != c.userName() ||
        c.expires <= now) {
      return std::nullopt;
    }
    return c;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace ringmaster::local
