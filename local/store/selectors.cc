#include "local/store/selectors.h"

#include <algorithm>
#include <cctype>

#include "local/store/labels.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::local {
namespace {

// ---- label selector lexer/parser (after k8s.io/apimachinery/pkg/labels/selector.go) ----

enum class Tok {
  kIdentifier,
  kDoesNotExist,  // !
  kEquals,        // =
  kDoubleEquals,  // ==
  kNotEquals,     // !=
  kIn,
  kNotIn,
  kOpenPar,
  kClosedPar,
  kComma,
  kGreater,
  kLess,
  kEnd,
  kError
};

struct Token {
  Tok tok;
  std::string lit;
};

bool isSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (isSpecial(c)) {
      if (c == '!' && i + 1 < s.size() && s[i + 1] == '=') {
        out.push_back({Tok::kNotEquals, "!="});
        i += 2;
      } else if (c == '=' && i + 1 < s.size() && s[i + 1] == '=') {
        out.push_back({Tok::kDoubleEquals, "=="});
        i += 2;
      } else {
        Tok t = c == '!'   ? Tok::kDoesNotExist
                : c == '=' ? Tok::kEquals
                : c == '(' ? Tok::kOpenPar
                : c == ')' ? Tok::kClosedPar
                : c == ',' ? Tok::kComma
                : c == '>' ? Tok::kGreater
                           : Tok::kLess;
        out.push_back({t, std::string(1, c)});
        ++i;
      }
      continue;
    }
    size_t j = i;
    while (j < s.size() && !isSpecial(s[j]) && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    std::string lit(s.substr(i, j - i));
    Tok t = lit == "in" ? Tok::kIn : lit == "notin" ? Tok::kNotIn : Tok::kIdentifier;
    out.push_back({t, lit});
    i = j;
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

std::optional<std::string> validateKey(const std::string& key) {
  const std::vector<std::string> problems = kube::labelKeyProblems(key);
  if (problems.empty()) return std::nullopt;
  return "key: Invalid value: \"" + key + "\": " + problems.front();
}

std::optional<std::string> validateValue(const std::string& key, size_t index,
                                         const std::string& v) {
  const std::vector<std::string> problems = kube::labelValueProblems(v);
  if (problems.empty()) return std::nullopt;
  return "values[" + std::to_string(index) + "][" + key + "]: Invalid value: \"" + v +
         "\": " + problems.front();
}

class LabelParser {
 public:
  explicit LabelParser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  // Returns an error message or nullopt.
  std::optional<std::string> parse(std::vector<LabelSelector::Requirement>* out) {
    while (true) {
      const Token& t = peekValue();
      if (t.tok == Tok::kEnd) return std::nullopt;
      if (t.tok != Tok::kIdentifier && t.tok != Tok::kDoesNotExist) {
        return "found '" + t.lit + "', expected: !, identifier, or 'end of string'";
      }
      LabelSelector::Requirement r;
      if (auto err = parseRequirement(&r)) return "unable to parse requirement: " + *err;
      out->push_back(std::move(r));
      Token next = consumeValue();
      if (next.tok == Tok::kEnd) return std::nullopt;
      if (next.tok != Tok::kComma) {
        return "found '" + next.lit + "', expected: ',' or 'end of string'";
      }
      const Token& after = peekValue();
      if (after.tok != Tok::kIdentifier && after.tok != Tok::kDoesNotExist) {
        return "found '" + after.lit + "', expected: identifier after ','";
      }
    }
  }

 private:
  // In "values" mode the keywords in/notin are plain identifiers.
  Token peekValue() const {
    Token t = toks_[pos_];
    if (t.tok == Tok::kIn || t.tok == Tok::kNotIn) t.tok = Tok::kIdentifier;
    return t;
  }
  Token consumeValue() {
    Token t = peekValue();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  Token consumeOp() {
    Token t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }

  std::optional<std::string> parseRequirement(LabelSelector::Requirement* r) {
    bool not_exists = false;
    Token t = consumeValue();
    if (t.tok == Tok::kDoesNotExist) {
      not_exists = true;
      t = consumeValue();
    }
    if (t.tok != Tok::kIdentifier) return "found '" + t.lit + "', expected: identifier";
    if (auto err = validateKey(t.lit)) return err;
    r->key = t.lit;
    Tok next = peekValue().tok;
    if (next == Tok::kEnd || next == Tok::kComma) {
      r->op = not_exists ? LabelSelector::Op::kDoesNotExist : LabelSelector::Op::kExists;
      return std::nullopt;
    }
    if (not_exists) {
      return "found '" + peekValue().lit + "', expected: ',' or 'end of string'";
    }
    Token op = consumeOp();
    switch (op.tok) {
      case Tok::kEquals:
      case Tok::kDoubleEquals:
        r->op = LabelSelector::Op::kEquals;
        break;
      case Tok::kNotEquals:
        r->op = LabelSelector::Op::kNotEquals;
        break;
      case Tok::kIn:
        r->op = LabelSelector::Op::kIn;
        break;
      case Tok::kNotIn:
        r->op = LabelSelector::Op::kNotIn;
        break;
      default:
        return "found '" + op.lit + "', expected: in, notin, =, ==, !=, gt, lt";
    }
    if (r->op == LabelSelector::Op::kIn || r->op == LabelSelector::Op::kNotIn) {
      Token open = consumeValue();
      if (open.tok != Tok::kOpenPar) return "found '" + open.lit + "', expected: '('";
      while (true) {
        Token v = consumeValue();
        if (v.tok == Tok::kClosedPar) break;
        if (v.tok == Tok::kIdentifier) {
          r->values.push_back(v.lit);
          Token sep = consumeValue();
          if (sep.tok == Tok::kClosedPar) break;
          if (sep.tok == Tok::kComma) continue;
          return "found '" + sep.lit + "', expected: ',' or ')'";
        }
        if (v.tok == Tok::kComma) {
          r->values.emplace_back();
          continue;
        }
        return "found '" + v.lit + "', expected: ',', ')' or identifier";
      }
      if (r->values.empty()) {
        return "for 'in', 'notin' operators, values set can't be empty";
      }
    } else {
      Tok n = peekValue().tok;
      if (n == Tok::kEnd || n == Tok::kComma) {
        r->values.emplace_back();
      } else {
        Token v = consumeValue();
        if (v.tok != Tok::kIdentifier) return "found '" + v.lit + "', expected: identifier";
        r->values.push_back(v.lit);
      }
    }
    for (size_t i = 0; i < r->values.size(); ++i) {
      if (auto err = validateValue(r->key, i, r->values[i])) return err;
    }
    return std::nullopt;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
};

}  // namespace

ApiResult<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector sel;
  LabelParser parser(lex(text));
  if (auto err = parser.parse(&sel.requirements_)) return badRequestError(*err);
  return sel;
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  for (const auto& r : requirements_) {
    const std::string* value = nullptr;
    if (labels.is_object()) {
      auto it = labels.find(r.key);
      if (it != labels.end() && it->is_string()) value = it->get_ptr<const std::string*>();
    }
    auto in_set = [&] {
      return value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
    };
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        if (!in_set()) return false;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        if (in_set()) return false;
        break;
      case Op::kExists:
        if (!value) return false;
        break;
      case Op::kDoesNotExist:
        if (value) return false;
        break;
    }
  }
  return true;
}

namespace {

// Splits on unescaped commas (fields.splitTerms).
std::vector<std::string> splitTerms(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool escaped = false;
  for (char c : s) {
    if (escaped) {
      cur.push_back('\\');
      cur.push_back(c);
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (escaped) cur.push_back('\\');
  out.push_back(std::move(cur));
  return out;
}

std::optional<std::string> unescapeValue(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      if (s[i] == '=' || s[i] == ',') return std::nullopt;
      out.push_back(s[i]);
      continue;
    }
    if (i + 1 >= s.size()) return std::nullopt;
    char n = s[++i];
    if (n != '\\' && n != ',' && n != '=') return std::nullopt;
    out.push_back(n);
  }
  return out;
}

}  // namespace

ApiResult<FieldSelector> FieldSelector::parse(std::string_view text, const ResourceType& type) {
  FieldSelector sel;
  for (const std::string& term : splitTerms(text)) {
    if (term.empty()) continue;
    Requirement r;
    bool found = false;
    for (size_t i = 0; i < term.size() && !found; ++i) {
      if (i > 0 && term[i - 1] == '\\') continue;
      for (std::string_view op : {"!=", "==", "="}) {
        if (term.compare(i, op.size(), op) == 0) {
          r.field = term.substr(0, i);
          r.equals = op != "!=";
          auto value = unescapeValue(term.substr(i + op.size()));
          if (!value) {
            return badRequestError("invalid field selector: invalid escape sequence in '" +
                                   term.substr(i + op.size()) + "'");
          }
          r.value = *value;
          found = true;
          break;
        }
      }
    }
    if (!found) {
      return badRequestError("invalid selector: '" + std::string(text) + "'; can't understand '" +
                             term + "'");
    }
    bool known = r.field == "metadata.name" || r.field == "metadata.namespace" ||
                 std::find(type.selectable_fields.begin(), type.selectable_fields.end(), r.field) !=
                     type.selectable_fields.end();
    if (!known) {
      if (type.builtin && type.selectable_fields.empty()) {
        return badRequestError("\"" + r.field +
                               "\" is not a known field selector: only \"metadata.name\", "
                               "\"metadata.namespace\"");
      }
      return badRequestError("field label not supported: " + r.field);
    }
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

std::string FieldSelector::fieldValue(const nlohmann::json& object, std::string_view field) {
  // Events: the `source` field label selects source.component (upstream's event field set).
  if (field == "source") field = "source.component";
  const nlohmann::json* cur = &object;
  size_t start = 0;
  while (start <= field.size()) {
    size_t dot = field.find('.', start);
    std::string part(field.substr(start, dot == std::string_view::npos ? field.npos : dot - start));
    if (!cur->is_object()) return "";
    auto it = cur->find(part);
    if (it == cur->end()) return "";
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  if (cur->is_boolean()) return cur->get<bool>() ? "true" : "false";
  return cur->dump();
}

bool FieldSelector::matches(const nlohmann::json& object) const {
  for (const auto& r : requirements_) {
    bool eq = fieldValue(object, r.field) == r.value;
    if (eq != r.equals) return false;
  }
  return true;
}

}  // namespace ringmaster::local
