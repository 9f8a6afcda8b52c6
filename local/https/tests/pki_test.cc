#include "local/https/pki.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "local/https/files.h"
#include "local/https/kubeconfig.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "rm-https-XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

unsigned modeOf(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 0777;
}

X509* parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

TEST(LoadOrCreatePki, CreatesCaAndServerCertificateWithPrivateKeys) {
  TempDir dir;
  auto pki = loadOrCreatePki(dir.path() / "pki");
  ASSERT_TRUE(pki.ok()) << pki.status().toString();
  EXPECT_TRUE(pki->created_ca);
  EXPECT_TRUE(pki->created_server);
  EXPECT_EQ(modeOf(dir.path() / "pki"), 0700u);
  EXPECT_EQ(modeOf(dir.path() / "pki" / "ca.key"), 0600u);
  EXPECT_EQ(modeOf(dir.path() / "pki" / "server.key"), 0600u);

  X509* ca = parse(pki->ca_cert_pem);
  X509* server = parse(pki->server_cert_pem);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(server, nullptr);
  char cn[128] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "ringmaster-local-ca");
  EXPECT_EQ(X509_check_ca(ca), 1);
  EXPECT_EQ(X509_check_ip_asc(server, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(server, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(server, "example.com", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_issued(ca, server), X509_V_OK);
  // The CA lasts about ten years.
  int days = 0, seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(ca), X509_get0_notAfter(ca)), 1);
  EXPECT_GE(days, 3649);
  X509_free(ca);
  X509_free(server);
}

TEST(LoadOrCreatePki, ReusesValidFilesOnRestart) {
  TempDir dir;
  auto first = loadOrCreatePki(dir.path());
  auto second = loadOrCreatePki(dir.path());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_FALSE(second->created_ca);
  EXPECT_FALSE(second->created_server);
  EXPECT_EQ(first->ca_cert_pem, second->ca_cert_pem);
  EXPECT_EQ(first->server_cert_pem, second->server_cert_pem);
  EXPECT_EQ(first->server_key_pem, second->server_key_pem);
}

TEST(LoadOrCreatePki, RegeneratesOnlyTheServerCertificateWhenItIsMissing) {
  TempDir dir;
  auto first = loadOrCreatePki(dir.path());
  ASSERT_TRUE(first.ok());
  fs::remove(dir.path() / "server.crt");
  auto second = loadOrCreatePki(dir.path());
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->created_ca);
  EXPECT_TRUE(second->created_server);
  EXPECT_EQ(first->ca_cert_pem, second->ca_cert_pem);
  EXPECT_NE(first->server_cert_pem, second->server_cert_pem);
}

TEST(LoadOrCreatePki, RegeneratesEverythingWhenTheCaIsUnreadable) {
  TempDir dir;
  auto first = loadOrCreatePki(dir.path());
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(writeFileAtomic(dir.path() / "ca.crt", "not a certificate", 0644).ok());
  auto second = loadOrCreatePki(dir.path());
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->created_ca);
  EXPECT_TRUE(second->created_server);
  EXPECT_NE(first->ca_cert_pem, second->ca_cert_pem);
}

TEST(LoadOrCreatePki, RenewsAServerCertificateThatExpiresSoon) {
  TempDir dir;
  PkiOptions short_lived;
  short_lived.server_days = 1;
  ASSERT_TRUE(loadOrCreatePki(dir.path(), short_lived).ok());
  // Default options renew what expires within 30 days.
  auto again = loadOrCreatePki(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created_ca);
  EXPECT_TRUE(again->created_server);
}

TEST(LoadOrCreateToken, WritesA64HexDigitTokenOnceAndReusesIt) {
  TempDir dir;
  auto token = loadOrCreateToken(dir.path() / "token");
  ASSERT_TRUE(token.ok()) << token.status().toString();
  EXPECT_EQ(token->size(), 64u);
  EXPECT_EQ(token->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(modeOf(dir.path() / "token"), 0600u);
  auto again = loadOrCreateToken(dir.path() / "token");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*token, *again);
  ASSERT_TRUE(writeFileAtomic(dir.path() / "token", "short", 0600).ok());
  auto replaced = loadOrCreateToken(dir.path() / "token");
  ASSERT_TRUE(replaced.ok());
  EXPECT_NE(*replaced, *token);
  EXPECT_EQ(replaced->size(), 64u);
}

TEST(WriteKubeconfig, WritesClusterUserAndContextWithTheCaInline) {
  TempDir dir;
  KubeconfigSpec spec;
  spec.server_url = "https://127.0.0.1:6443";
  spec.ca_pem = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n";
  spec.token = "0123abcd";
  fs::path path = dir.path() / "kube" / "config";
  ASSERT_TRUE(writeKubeconfig(path, spec).ok());
  EXPECT_EQ(modeOf(path), 0600u);
  auto text = readFile(path);
  ASSERT_TRUE(text.ok());
  unsigned char decoded[256] = {};
  std::string b64 =
      "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmFiYwotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==";
  ASSERT_EQ(EVP_DecodeBlock(decoded, reinterpret_cast<const unsigned char*>(b64.data()),
                            static_cast<int>(b64.size())) -
                2,
            static_cast<int>(spec.ca_pem.size()));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(decoded), spec.ca_pem.size()), spec.ca_pem);
  for (const std::string& want :
       {std::string("server: \"https://127.0.0.1:6443\"\n"),
        "certificate-authority-data: " + b64 + "\n", std::string("token: \"0123abcd\"\n"),
        std::string("current-context: \"ringmaster-local\"\n"),
        std::string("cluster: \"ringmaster-local\"\n"),
        std::string("user: \"ringmaster-local\"\n")}) {
    EXPECT_NE(text->find(want), std::string::npos) << want << " in\n" << *text;
  }
}

TEST(WriteKubeconfig, RejectsBadNamesPlainHttpAndMissingCredentials) {
  KubeconfigSpec spec{"https://127.0.0.1:1", "ca", "t"};
  EXPECT_TRUE(renderKubeconfig(spec).ok());
  KubeconfigSpec bad_name = spec;
  bad_name.name = "a\nb";
  EXPECT_FALSE(renderKubeconfig(bad_name).ok());
  KubeconfigSpec plain = spec;
  plain.server_url = "http://127.0.0.1:1";
  EXPECT_FALSE(renderKubeconfig(plain).ok());
  KubeconfigSpec no_token = spec;
  no_token.token.clear();
  EXPECT_FALSE(renderKubeconfig(no_token).ok());
}

}  // namespace
}  // namespace ringmaster::local
