#include "ringmaster/kube/yaml_documents.h"

#include <gtest/gtest.h>

namespace ringmaster::kube {
namespace {

TEST(YamlDocuments, TypesPlainScalarsByTheCoreSchemaAndKeepsQuotedOnesAsText) {
  auto docs = parseYamlDocuments(R"(
kind: TrainingJob
spec:
  replicas: 2
  lr: 0.05
  big: 1e3
  suspend: false
  image: "1.0"
  tag: '042'
  nothing: ~
  name: fmnist
  hidden: [512, 512]
)",
                                 "job.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  ASSERT_EQ(docs->size(), 1u);
  const auto& spec = (*docs)[0]["spec"];
  EXPECT_EQ(spec["replicas"], 2);
  EXPECT_TRUE(spec["replicas"].is_number_integer());
  EXPECT_DOUBLE_EQ(spec["lr"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(spec["big"].get<double>(), 1000.0);
  EXPECT_EQ(spec["suspend"], false);
  EXPECT_EQ(spec["image"], "1.0");
  EXPECT_EQ(spec["tag"], "042");
  EXPECT_TRUE(spec["nothing"].is_null());
  EXPECT_EQ(spec["name"], "fmnist");
  EXPECT_EQ(spec["hidden"], nlohmann::json::array({512, 512}));
}

TEST(YamlDocuments, SplitsDocumentsAndSkipsEmptyOnes) {
  auto docs = parseYamlDocuments("a: 1\n---\n---\nb: 2\n---\n", "m.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1]["b"], 2);
}

TEST(YamlDocuments, SyntaxErrorNamesFileAndLine) {
  auto docs = parseYamlDocuments("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("bad.yaml: line"), std::string::npos)
      << docs.status().message();
}

TEST(YamlDocuments, NestingPastTheParsersBoundIsAClearErrorNotACrash) {
  // 100,000 nested flow sequences: the parser refuses them; the message says why.
  const std::string text = "a: " + std::string(100'000, '[') + std::string(100'000, ']') + "\n";
  auto docs = parseYamlDocuments(text, "job.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("job.yaml: line 1: nested too deeply"), std::string::npos)
      << docs.status().message();
}

TEST(YamlDocuments, AnAliasInsideTheNodeItNamesIsAnErrorNotAStackOverflow) {
  // Found by fuzzing: converting this node to JSON recursed until the stack ran out.
  for (const char* text : {"kind: Namespace\nmetadata:\n  name: &anchor {alias: *anchor}\n",
                           "kind: List\nitems: &self [1, *self]\n"}) {
    auto docs = parseYamlDocuments(text, "self.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_EQ(docs.status().message(),
              "self.yaml (document 1): nested deeper than 1000 levels (a YAML alias inside the "
              "node it names?)");
  }
}

TEST(YamlDocuments, AliasesOfAliasesCannotMultiplyASmallTextIntoBillionsOfValues) {
  // Nine levels of ten aliases each name 10^9 strings in a few hundred bytes.
  std::string text = "kind: ConfigMap\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + prev;
    text += "]\n";
  }
  auto docs = parseYamlDocuments(text, "laughs.yaml");
  ASSERT_FALSE(docs.ok());
  // The bound: 8 values per byte of text, plus 100,000 for any text.
  EXPECT_EQ(docs.status().message(), "laughs.yaml (document 1): expands to more than " +
                                         std::to_string(8 * text.size() + 100'000) +
                                         " values (YAML aliases of aliases?)");
  // A few aliases, as manifests use them, are fine.
  auto fine = parseYamlDocuments(
      "kind: ConfigMap\nmetadata: {labels: &l {app: a, tier: b}}\nspec: {selector: *l}\n",
      "anchors.yaml");
  ASSERT_TRUE(fine.ok()) << fine.status().toString();
  EXPECT_EQ((*fine)[0]["spec"]["selector"]["tier"], "b");
}

TEST(YamlDocuments, InvalidUtf8IsAnErrorWithItsPlace) {
  // Latin-1 'é' in a value: sending the document as JSON would fail (found by fuzzing).
  auto docs = parseYamlDocuments("kind: ConfigMap\ndata: {a: caf\xe9}\n", "latin1.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "latin1.yaml: line 2, column 14: invalid UTF-8 (byte 0xe9)");
  auto first = parseYamlDocuments("\xff", "x.yaml");
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().message(), "x.yaml: line 1, column 1: invalid UTF-8 (byte 0xff)");
}

TEST(YamlDocuments, AStrayCommaIsAnErrorNotAnEndlessStreamOfDocuments) {
  // yaml-cpp's LoadAll alone never returns on these (found by fuzzing).
  for (const char* text : {",", "a: 1\n---\n,\n", "---\n,"}) {
    auto docs = parseYamlDocuments(text, "comma.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("comma.yaml: line "), std::string::npos)
        << docs.status().message();
  }
}

TEST(YamlDocuments, TextThatDecodesToInvalidUtf8IsAnErrorNotAThrowLater) {
  // Found by fuzzing: yaml-cpp decoded these bytes into a string that could not be sent as JSON.
  const std::string text("i\x01\x1dl:s sfinag\0t: \x01\0N]a N\n", 25);
  auto docs = parseYamlDocuments(text, "job.yaml");
  if (docs.ok()) {
    for (const auto& doc : *docs) EXPECT_NO_THROW((void)doc.dump());
  }
}

TEST(YamlDocuments, DocumentThatIsNotAMappingIsRejected) {
  auto docs = parseYamlDocuments("- a\n- b\n", "list.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("list.yaml (document 1): not a mapping"),
            std::string::npos)
      << docs.status().message();
}

TEST(YamlDocuments, MissingFileSaysWhich) {
  auto docs = readYamlDocuments("/nonexistent/job.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("/nonexistent/job.yaml"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::kube
