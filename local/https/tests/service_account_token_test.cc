#include "local/https/service_account_token.h"

#include <gtest/gtest.h>

#include "ringmaster/core/base64.h"

namespace ringmaster::local {
namespace {

using std::chrono::seconds;
const auto kNow = std::chrono::system_clock::time_point(seconds(1'800'000'000));

ServiceAccountClaims claims() {
  ServiceAccountClaims c;
  c.namespace_name = "ringmaster-system";
  c.service_account = "operator";
  c.service_account_uid = "sa-uid";
  c.pod_name = "operator-abc";
  c.pod_uid = "pod-uid";
  c.audiences = {"https://kubernetes.default.svc"};
  c.expires = kNow + seconds(3600);
  return c;
}

TEST(ServiceAccountTokens, IssuedTokensVerifyAsTheirAccount) {
  const ServiceAccountTokens tokens("key-1");
  const std::string token = tokens.issue(claims(), kNow);
  auto verified = tokens.verify(token, kNow + seconds(10));
  ASSERT_TRUE(verified.has_value());
  EXPECT_EQ(verified->userName(), "system:serviceaccount:ringmaster-system:operator");
  EXPECT_EQ(verified->pod_name, "operator-abc");
  EXPECT_EQ(verified->pod_uid, "pod-uid");
  EXPECT_EQ(verified->audiences, claims().audiences);
  EXPECT_EQ(verified->expires, kNow + seconds(3600));
}

TEST(ServiceAccountTokens, RefusesExpiredForeignAndAlteredTokens) {
  const ServiceAccountTokens tokens("key-1");
  const std::string token = tokens.issue(claims(), kNow);
  EXPECT_FALSE(tokens.verify(token, kNow + seconds(3600)).has_value()) << "expired";
  EXPECT_FALSE(ServiceAccountTokens("key-2").verify(token, kNow).has_value()) << "other key";
  // Another account's claims under the original signature.
  ServiceAccountClaims other = claims();
  other.service_account = "admin";
  const std::string forged = ServiceAccountTokens("key-2").issue(other, kNow);
  const std::string spliced = forged.substr(0, forged.rfind('.')) + token.substr(token.rfind('.'));
  EXPECT_FALSE(tokens.verify(spliced, kNow).has_value()) << "payload swapped";
  for (const char* junk : {"", "a.b", "a.b.c", "..", "not a token"}) {
    EXPECT_FALSE(tokens.verify(junk, kNow).has_value()) << junk;
  }
  EXPECT_FALSE(
      ServiceAccountTokens("").verify(ServiceAccountTokens("").issue(claims(), kNow), kNow))
      << "no key, no tokens";
}

}  // namespace
}  // namespace ringmaster::local
