#include "ringmaster/core/json.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster::core {
namespace {

std::string nestedArrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string nestedObjects(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "{\"a\":";
  text += "1";
  text += std::string(depth, '}');
  return text;
}

struct Case {
  const char* name;
  std::string text;
  bool ok;
  const char* error;  // substring of the message when !ok
};

TEST(ParseJson, BoundsDepthAndReportsSyntax) {
  const Case cases[] = {
      {"object", R"({"a":[1,{"b":null}]})", true, ""},
      {"scalar", "42", true, ""},
      {"at the bound", nestedArrays(kMaxJsonDepth), true, ""},
      {"objects at the bound", nestedObjects(kMaxJsonDepth), true, ""},
      {"one past the bound", nestedArrays(kMaxJsonDepth + 1), false, "nested deeper than 1000"},
      {"objects past the bound", nestedObjects(kMaxJsonDepth + 1), false, "nested deeper"},
      // What took the local API server down: 200 KB of brackets.
      {"100,000 deep", nestedArrays(100'000), false, "nested deeper than 1000 levels"},
      {"deep and unterminated", std::string(100'000, '['), false, "nested deeper"},
      {"syntax", R"({"a":)", false, "invalid JSON"},
      {"empty", "", false, "invalid JSON"},
      {"trailing garbage", "{} x", false, "invalid JSON"},
      // nlohmann reports a number too large for a double as out_of_range, not parse_error.
      {"number overflow", "[5555555e5555555]", false, "number overflow"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto parsed = parseJson(c.text);
    ASSERT_EQ(parsed.ok(), c.ok) << (parsed.ok() ? "" : parsed.status().message());
    if (c.ok) {
      // The value is whole: it dumps back to the same JSON.
      EXPECT_EQ(*parsed, nlohmann::json::parse(c.text));
    } else {
      EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
      EXPECT_NE(parsed.status().message().find(c.error), std::string::npos)
          << parsed.status().message();
    }
  }
}

TEST(ParseJson, CustomBoundAndOrderedValues) {
  EXPECT_TRUE(parseJson("[[1]]", 2).ok());
  EXPECT_FALSE(parseJson("[[[1]]]", 2).ok());
  auto ordered = parseOrderedJson(R"({"z":1,"a":2})");
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ(ordered->dump(), R"({"z":1,"a":2})");
  EXPECT_FALSE(parseOrderedJson(nestedArrays(5000)).ok());
}

TEST(StringMember, OnlyAStringMemberOfAnObjectCounts) {
  struct Row {
    const char* object;
    const char* want;
  };
  const Row rows[] = {
      {R"({"kind":"Pod"})", "Pod"},
      {R"({"kind":""})", ""},
      {R"({"other":"Pod"})", ""},   // absent
      {R"({"kind":{"a":1}})", ""},  // an object, not a string
      {R"({"kind":7})", ""},        // a number
      {R"({"kind":null})", ""},
      {R"(["kind","Pod"])", ""},  // not an object
      {R"("kind")", ""},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(stringMember(nlohmann::json::parse(row.object), "kind"), row.want) << row.object;
  }
}

}  // namespace
}  // namespace ringmaster::core
