#include "local/apiserver/protobuf_body.h"

#include <gtest/gtest.h>

#include <string>

#include "local/apiserver/protobuf_wire.h"

namespace ringmaster::local {
namespace {

// Protobuf encoding helpers: length-delimited field `n` holding `payload`.
std::string field(int n, const std::string& payload) {
  std::string out(1, static_cast<char>((n << 3) | 2));
  size_t len = payload.size();
  do {
    uint8_t b = len & 0x7f;
    len >>= 7;
    out += static_cast<char>(b | (len ? 0x80 : 0));
  } while (len);
  return out + payload;
}
std::string entry(const std::string& k, const std::string& v) { return field(1, k) + field(2, v); }
std::string envelope(const std::string& kind, const std::string& raw) {
  return std::string("k8s\0", 4) + field(1, field(1, "v1") + field(2, kind)) + field(2, raw);
}

TEST(ProtobufBody, DecodesAConfigMapAsKubectlCreateSendsIt) {
  std::string meta = field(1, "np-cm") + field(11, entry("app", "x"));
  auto obj = decodeProtobufBody(envelope("ConfigMap", field(1, meta) + field(2, entry("a", "b"))));
  ASSERT_TRUE(obj.has_value());
  EXPECT_EQ(obj->dump(), R"({"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap",)"
                         R"("metadata":{"labels":{"app":"x"},"name":"np-cm"}})");
}

TEST(ProtobufBody, DecodesSecretDataAsBase64AndNamespaces) {
  auto secret = decodeProtobufBody(envelope(
      "Secret", field(1, field(1, "s")) + field(2, entry("k", "val")) + field(3, "Opaque")));
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ((*secret)["data"]["k"], "dmFs");
  EXPECT_EQ((*secret)["type"], "Opaque");
  auto ns = decodeProtobufBody(envelope("Namespace", field(1, field(1, "np-test"))));
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ((*ns)["metadata"]["name"], "np-test");
}

TEST(ProtobufBody, DecodesDeleteOptionsAsTypedClientsSendThem) {
  protobuf::Writer preconditions;
  preconditions.bytesField(1, "uid-1");
  preconditions.bytesField(2, "42");
  protobuf::Writer options;
  options.varintField(1, 30);
  options.messageField(2, preconditions);
  options.bytesField(4, "Background");
  options.bytesField(5, "All");
  auto obj = decodeProtobufBody(envelope("DeleteOptions", options.bytes()));
  ASSERT_TRUE(obj.has_value());
  EXPECT_EQ((*obj)["gracePeriodSeconds"], 30);
  EXPECT_EQ((*obj)["propagationPolicy"], "Background");
  EXPECT_EQ((*obj)["preconditions"]["uid"], "uid-1");
  EXPECT_EQ((*obj)["preconditions"]["resourceVersion"], "42");
  EXPECT_EQ((*obj)["dryRun"], nlohmann::json::array({"All"}));
  EXPECT_FALSE(obj->contains("metadata"));
}

TEST(ProtobufBody, RejectsOtherKindsAndGarbage) {
  EXPECT_FALSE(decodeProtobufBody(envelope("Pod", field(1, field(1, "x")))));
  EXPECT_FALSE(decodeProtobufBody("{\"kind\":\"ConfigMap\"}"));
  EXPECT_FALSE(decodeProtobufBody(std::string("k8s\0\x0a\xff", 6)));
}

}  // namespace
}  // namespace ringmaster::local
