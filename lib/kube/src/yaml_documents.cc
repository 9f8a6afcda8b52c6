#include "ringmaster/kube/yaml_documents.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "ringmaster/core/utf8.h"

namespace ringmaster::kube {
namespace {

bool allOf(std::string_view s, std::string_view allowed) {
  return !s.empty() && s.find_first_not_of(allowed) == std::string_view::npos;
}

// YAML 1.2 core schema for plain scalars (no std::regex: GCC 12 warns inside it under the
// sanitizers).
nlohmann::json plainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const std::string_view body =
      s[0] == '-' || s[0] == '+' ? std::string_view(s).substr(1) : std::string_view(s);
  try {
    if (allOf(body, "0123456789")) return std::stoll(s);
    if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && allOf(s.substr(2), "01234567"))
      return std::stoll(s.substr(2), nullptr, 8);
    if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && allOf(s.substr(2), "0123456789abcdefABCDEF"))
      return std::stoll(s.substr(2), nullptr, 16);
  } catch (const std::out_of_range&) {
    return s;  // too large for int64: keep the text rather than lose digits
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF") return s[0] == '-' ? -INFINITY : INFINITY;
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return NAN;
  // [-+]( .digits | digits[.digits] )([eE][-+]digits)
  if (allOf(body, "0123456789.eE+-") && body.find_first_of("0123456789") < body.size() &&
      body[0] != 'e' && body[0] != 'E') {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size()) return v;
  }
  return s;
}

// What aliases may make of a text. A node holding an alias of itself converts forever (found by
// fuzzing: `name: &a {alias: *a}` overflowed the stack), and aliases of aliases multiply: a few
// lines can name a billion values. Nesting deeper than the parser allows can only come from the
// first, and more values than a few per byte of text only from the second.
constexpr int kMaxDepth = 1000;
constexpr size_t kValuesPerByte = 8;
constexpr size_t kValuesAnyText = 100'000;  // a short text may still name this many

class Converter {
 public:
  Converter(std::string document, size_t text_bytes)
      : document_(std::move(document)),
        limit_(kValuesPerByte * text_bytes + kValuesAnyText),
        budget_(limit_) {}

  core::Result<nlohmann::json> toJson(const YAML::Node& node, const std::string& where,
                                      int depth = 0) {
    if (depth > kMaxDepth) {
      return core::invalidArgument(document_ + ": nested deeper than " + std::to_string(kMaxDepth) +
                                   " levels (a YAML alias inside the node it names?)");
    }
    if (budget_ == 0) {
      return core::invalidArgument(document_ + ": expands to more than " + std::to_string(limit_) +
                                   " values (YAML aliases of aliases?)");
    }
    --budget_;
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nlohmann::json(nullptr);
      case YAML::NodeType::Scalar:
        // yaml-cpp tags plain scalars "?" and quoted ones "!".
        return node.Tag() == "!" ? nlohmann::json(node.Scalar()) : plainScalar(node.Scalar());
      case YAML::NodeType::Sequence: {
        nlohmann::json out = nlohmann::json::array();
        size_t i = 0;
        for (const auto& item : node) {
          RM_ASSIGN_OR_RETURN(auto v,
                              toJson(item, where + "[" + std::to_string(i++) + "]", depth + 1));
          out.push_back(std::move(v));
        }
        return out;
      }
      case YAML::NodeType::Map: {
        nlohmann::json out = nlohmann::json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            return core::invalidArgument(where + ": a mapping key must be a scalar (line " +
                                         std::to_string(kv.first.Mark().line + 1) + ")");
          }
          const std::string key = kv.first.Scalar();
          RM_ASSIGN_OR_RETURN(
              auto v, toJson(kv.second, where.empty() ? key : where + "." + key, depth + 1));
          out[key] = std::move(v);
        }
        return out;
      }
    }
    return nlohmann::json(nullptr);
  }

 private:
  std::string document_;  // "<source> (document N)", for the errors that have no path
  size_t limit_;          // values a document of this text may have
  size_t budget_;         // values left to convert
};

// yaml-cpp 0.7's LoadAll never returns on some malformed streams: a stray ',' at the top level
// yields empty documents forever without being consumed. A first pass that only watches where
// each document starts turns that into a parse error before LoadAll runs.
class DocumentProgress : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (last_ && last_->pos == mark.pos) {
      throw YAML::ParserException(mark, "unexpected character: the parser cannot go on here");
    }
    last_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::optional<YAML::Mark> last_;
};

void checkDocumentsAdvance(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentProgress progress;
  while (parser.HandleNextDocument(progress)) {
  }
}

}  // namespace

core::Result<std::vector<nlohmann::json>> parseYamlDocuments(const std::string& text,
                                                             const std::string& source) {
  // YAML is Unicode text and every document becomes a JSON body, which must be UTF-8: refuse
  // other bytes here, with their place, as kubectl does (serializing them would throw later).
  if (const size_t bad = core::utf8InvalidOffset(text); bad != std::string::npos) {
    const size_t line_start = bad == 0 ? std::string::npos : text.rfind('\n', bad - 1);
    const size_t column = line_start == std::string::npos ? bad : bad - line_start - 1;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[bad]));
    return core::invalidArgument(
        source + ": line " +
        std::to_string(std::count(text.begin(), text.begin() + bad, '\n') + 1) + ", column " +
        std::to_string(column + 1) + ": invalid UTF-8 (byte " + byte + ")");
  }
  std::vector<YAML::Node> nodes;
  try {
    checkDocumentsAdvance(text);
    nodes = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own bound (its message reads "bad file"): say what happened.
    return core::invalidArgument(source + ": line " + std::to_string(e.mark.line + 1) +
                                 ": nested too deeply (the YAML parser stops at recursion depth " +
                                 std::to_string(e.depth()) + ")");
  } catch (const YAML::Exception& e) {
    return core::invalidArgument(source + ": line " + std::to_string(e.mark.line + 1) +
                                 ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  std::vector<nlohmann::json> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].IsNull()) continue;
    const std::string where = source + " (document " + std::to_string(i + 1) + ")";
    if (!nodes[i].IsMap()) return core::invalidArgument(where + ": not a mapping");
    RM_ASSIGN_OR_RETURN(auto doc, Converter(where, text.size()).toJson(nodes[i], ""));
    // yaml-cpp may decode a byte stream it takes for UTF-16/32, or escapes, into text that is not
    // UTF-8; the document would then fail only when sent. nlohmann reports it by exception only.
    try {
      (void)doc.dump().size();
    } catch (const nlohmann::json::exception&) {
      return core::invalidArgument(where + ": a value is not valid UTF-8 after YAML decoding");
    }
    out.push_back(std::move(doc));
  }
  return out;
}

core::Result<std::vector<nlohmann::json>> readYamlDocuments(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return core::notFound("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return parseYamlDocuments(text.str(), path.string());
}

}  // namespace ringmaster::kube
