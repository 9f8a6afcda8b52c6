#include "local/https/http_message.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

TEST(PercentDecode, DecodesEscapesAndPlusOnlyWhenAsked) {
  EXPECT_EQ(percentDecode("a%20b%2Fc", false), "a b/c");
  EXPECT_EQ(percentDecode("a+b", false), "a+b");
  EXPECT_EQ(percentDecode("a+b", true), "a b");
  EXPECT_EQ(percentDecode("%e2%9c%93", false), "\xe2\x9c\x93");
}

TEST(PercentDecode, RejectsTruncatedOrInvalidEscapesAndNul) {
  EXPECT_EQ(percentDecode("abc%", false), std::nullopt);
  EXPECT_EQ(percentDecode("abc%2", false), std::nullopt);
  EXPECT_EQ(percentDecode("%zz", false), std::nullopt);
  EXPECT_EQ(percentDecode("a%00b", false), std::nullopt);
}

TEST(PercentEncode, RoundTripsThroughDecode) {
  std::string raw = "metadata.name=a b&c/d";
  EXPECT_EQ(percentEncode(raw), "metadata.name%3Da%20b%26c%2Fd");
  EXPECT_EQ(percentDecode(percentEncode(raw), false), raw);
}

TEST(ParseQuery, DecodesKubectlSelectorsInOrder) {
  auto query = parseQuery(
      "fieldSelector=metadata.name%3Dmnist&labelSelector=app%3Ddemo%2Ctier+in+(a)&watch&limit=500");
  ASSERT_TRUE(query.has_value());
  ASSERT_EQ(query->size(), 4u);
  EXPECT_EQ((*query)[0],
            (std::pair<std::string, std::string>{"fieldSelector", "metadata.name=mnist"}));
  EXPECT_EQ((*query)[1].second, "app=demo,tier in (a)");
  EXPECT_EQ((*query)[2], (std::pair<std::string, std::string>{"watch", ""}));
  EXPECT_EQ((*query)[3].second, "500");
  EXPECT_EQ(parseQuery("a=%G1"), std::nullopt);
  EXPECT_TRUE(parseQuery("")->empty());
}

TEST(Headers, LookupIgnoresCaseAndSetReplacesAll) {
  Headers headers;
  headers.add("Content-Type", "application/json");
  headers.add("X-A", "1");
  headers.add("x-a", "2");
  EXPECT_EQ(headers.get("content-type"), "application/json");
  EXPECT_EQ(headers.get("X-A"), "1");
  headers.set("X-a", "3");
  EXPECT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers.get("x-A"), "3");
  headers.remove("CONTENT-TYPE");
  EXPECT_FALSE(headers.has("Content-Type"));
  EXPECT_EQ(headers.get("missing"), "");
}

TEST(ParseAccept, SplitsKubectlTableAcceptWithParameters) {
  auto ranges = parseAccept(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
      "g=meta.k8s.io,application/json");
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].essence(), "application/json");
  ASSERT_NE(ranges[0].param("as"), nullptr);
  EXPECT_EQ(*ranges[0].param("as"), "Table");
  EXPECT_EQ(*ranges[1].param("v"), "v1beta1");
  EXPECT_EQ(ranges[2].param("as"), nullptr);
}

TEST(ParseAccept, HandlesQualityWildcardsQuotesAndEmptyHeader) {
  auto ranges = parseAccept("application/json, */*;q=0.5, text/plain;x=\"a,b\"");
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_DOUBLE_EQ(ranges[1].quality, 0.5);
  EXPECT_TRUE(ranges[1].accepts("application/yaml"));
  EXPECT_FALSE(ranges[0].accepts("application/yaml"));
  EXPECT_EQ(*ranges[2].param("x"), "a,b");
  auto any = parseAccept("");
  ASSERT_EQ(any.size(), 1u);
  EXPECT_TRUE(any[0].accepts("application/json"));
  EXPECT_EQ(parseMediaType("json"), std::nullopt);
}

TEST(ContentTypeEssence, DropsParametersAndLowercases) {
  Request request;
  request.headers.add("Content-Type", "Application/Merge-Patch+JSON; charset=utf-8");
  EXPECT_EQ(contentTypeEssence(request), "application/merge-patch+json");
  EXPECT_EQ(contentTypeEssence(Request{}), "");
}

}  // namespace
}  // namespace ringmaster::local
