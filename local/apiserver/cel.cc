#include "local/apiserver/cel.h"

#include <re2/re2.h>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

// Internal control flow only: both are caught in evaluateCel().
struct CelError {
  std::string message;
};
struct CelUnsupported {
  std::string message;
};

// ---------------------------------------------------------------- lexer

struct Token {
  enum Kind { kInt, kDouble, kString, kIdent, kOp, kEnd };
  Kind kind = kEnd;
  std::string text;
  int64_t i = 0;
  double d = 0;
};

std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    if (isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_double = false;
      if (c == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        j = i + 2;
        while (j < s.size() && isxdigit(static_cast<unsigned char>(s[j]))) ++j;
        t.kind = Token::kInt;
        t.i = std::stoll(s.substr(i + 2, j - i - 2), nullptr, 16);
      } else {
        while (j < s.size() && isdigit(static_cast<unsigned char>(s[j]))) ++j;
        if (j + 1 < s.size() && s[j] == '.' && isdigit(static_cast<unsigned char>(s[j + 1]))) {
          is_double = true;
          ++j;
          while (j < s.size() && isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
        if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
          is_double = true;
          ++j;
          if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
          while (j < s.size() && isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
        const std::string num = s.substr(i, j - i);
        if (is_double) {
          t.kind = Token::kDouble;
          t.d = std::stod(num);
        } else {
          t.kind = Token::kInt;
          errno = 0;
          t.i = std::strtoll(num.c_str(), nullptr, 10);
          if (errno == ERANGE) throw CelUnsupported{"integer literal out of range"};
        }
      }
      if (j < s.size() && (s[j] == 'u' || s[j] == 'U')) ++j;  // uint literal: used as int
      i = j;
      out.push_back(t);
      continue;
    }
    if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      const std::string word = s.substr(i, j - i);
      // Raw and bytes string prefixes.
      if ((word == "r" || word == "R" || word == "b" || word == "B") && j < s.size() &&
          (s[j] == '"' || s[j] == '\'')) {
        throw CelUnsupported{"raw/bytes string literals"};
      }
      t.kind = Token::kIdent;
      t.text = word;
      i = j;
      out.push_back(t);
      continue;
    }
    if (c == '"' || c == '\'') {
      if (s.compare(i, 3, std::string(3, c)) == 0) throw CelUnsupported{"triple-quoted strings"};
      std::string v;
      size_t j = i + 1;
      while (j < s.size() && s[j] != c) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          char e = s[++j];
          switch (e) {
            case 'n':
              v += '\n';
              break;
            case 't':
              v += '\t';
              break;
            case 'r':
              v += '\r';
              break;
            case '\\':
              v += '\\';
              break;
            case '"':
              v += '"';
              break;
            case '\'':
              v += '\'';
              break;
            default:
              throw CelUnsupported{std::string("string escape \\") + e};
          }
          ++j;
          continue;
        }
        v += s[j++];
      }
      if (j >= s.size()) throw CelUnsupported{"unterminated string"};
      t.kind = Token::kString;
      t.text = v;
      i = j + 1;
      out.push_back(t);
      continue;
    }
    static const char* kOps[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/",
                                 "%",  "!",  "?",  ":",  ".",  ",",  "(", ")", "[", "]", "{", "}"};
    bool matched = false;
    for (const char* op : kOps) {
      size_t n = strlen(op);
      if (s.compare(i, n, op) == 0) {
        t.kind = Token::kOp;
        t.text = op;
        i += n;
        matched = true;
        break;
      }
    }
    if (!matched) throw CelUnsupported{std::string("unexpected character '") + c + "'"};
    out.push_back(t);
  }
  out.push_back(Token{});
  return out;
}

// ---------------------------------------------------------------- parser

struct Node {
  enum Type { kLit, kIdent, kSelect, kIndex, kCall, kUnary, kBinary, kCond, kList, kMap };
  Type type = kLit;
  json lit;
  std::string name;     // identifier, field, operator or function
  bool method = false;  // kCall: kids[0] is the receiver
  std::vector<std::unique_ptr<Node>> kids;
};
using NodePtr = std::unique_ptr<Node>;

NodePtr make(Node::Type type, std::string name = "") {
  auto n = std::make_unique<Node>();
  n->type = type;
  n->name = std::move(name);
  return n;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  NodePtr parseAll() {
    NodePtr n = expr();
    if (peek().kind != Token::kEnd) throw CelUnsupported{"unexpected '" + peek().text + "'"};
    return n;
  }

 private:
  const Token& peek() const { return t_[pos_]; }
  bool isOp(const char* op) const { return peek().kind == Token::kOp && peek().text == op; }
  bool accept(const char* op) {
    if (!isOp(op)) return false;
    ++pos_;
    return true;
  }
  void expect(const char* op) {
    if (!accept(op)) throw CelUnsupported{std::string("expected '") + op + "'"};
  }

  NodePtr expr() {
    NodePtr c = orExpr();
    if (!accept("?")) return c;
    auto n = make(Node::kCond);
    n->kids.push_back(std::move(c));
    n->kids.push_back(orExpr());
    expect(":");
    n->kids.push_back(expr());
    return n;
  }
  NodePtr binary(NodePtr l, const std::string& op, NodePtr r) {
    auto n = make(Node::kBinary, op);
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }
  NodePtr orExpr() {
    NodePtr l = andExpr();
    while (accept("||")) l = binary(std::move(l), "||", andExpr());
    return l;
  }
  NodePtr andExpr() {
    NodePtr l = relExpr();
    while (accept("&&")) l = binary(std::move(l), "&&", relExpr());
    return l;
  }
  NodePtr relExpr() {
    NodePtr l = addExpr();
    for (;;) {
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (isOp(o)) op = o;
      }
      if (op.empty() && peek().kind == Token::kIdent && peek().text == "in") op = "in";
      if (op.empty()) return l;
      ++pos_;
      l = binary(std::move(l), op, addExpr());
    }
  }
  NodePtr addExpr() {
    NodePtr l = mulExpr();
    for (;;) {
      if (accept("+")) {
        l = binary(std::move(l), "+", mulExpr());
      } else if (accept("-")) {
        l = binary(std::move(l), "-", mulExpr());
      } else {
        return l;
      }
    }
  }
  NodePtr mulExpr() {
    NodePtr l = unary();
    for (;;) {
      std::string op;
      for (const char* o : {"*", "/", "%"}) {
        if (isOp(o)) op = o;
      }
      if (op.empty()) return l;
      ++pos_;
      l = binary(std::move(l), op, unary());
    }
  }
  NodePtr unary() {
    for (const char* op : {"!", "-"}) {
      if (accept(op)) {
        auto n = make(Node::kUnary, op);
        n->kids.push_back(unary());
        return n;
      }
    }
    return postfix();
  }
  void args(Node& call) {
    if (accept(")")) return;
    do {
      call.kids.push_back(expr());
    } while (accept(","));
    expect(")");
  }
  NodePtr postfix() {
    NodePtr n = primary();
    for (;;) {
      if (accept(".")) {
        if (peek().kind != Token::kIdent) throw CelUnsupported{"expected a field name"};
        std::string field = t_[pos_++].text;
        if (accept("(")) {
          auto call = make(Node::kCall, field);
          call->method = true;
          call->kids.push_back(std::move(n));
          args(*call);
          n = std::move(call);
        } else {
          auto sel = make(Node::kSelect, field);
          sel->kids.push_back(std::move(n));
          n = std::move(sel);
        }
      } else if (accept("[")) {
        auto idx = make(Node::kIndex);
        idx->kids.push_back(std::move(n));
        idx->kids.push_back(expr());
        expect("]");
        n = std::move(idx);
      } else {
        return n;
      }
    }
  }
  NodePtr primary() {
    const Token tok = peek();
    ++pos_;
    switch (tok.kind) {
      case Token::kInt: {
        auto n = make(Node::kLit);
        n->lit = tok.i;
        return n;
      }
      case Token::kDouble: {
        auto n = make(Node::kLit);
        n->lit = tok.d;
        return n;
      }
      case Token::kString: {
        auto n = make(Node::kLit);
        n->lit = tok.text;
        return n;
      }
      case Token::kIdent: {
        if (tok.text == "true" || tok.text == "false") {
          auto n = make(Node::kLit);
          n->lit = tok.text == "true";
          return n;
        }
        if (tok.text == "null") return make(Node::kLit);
        if (accept("(")) {
          auto call = make(Node::kCall, tok.text);
          args(*call);
          return call;
        }
        return make(Node::kIdent, tok.text);
      }
      case Token::kOp:
        if (tok.text == "(") {
          NodePtr n = expr();
          expect(")");
          return n;
        }
        if (tok.text == "[") {
          auto n = make(Node::kList);
          if (!accept("]")) {
            do {
              n->kids.push_back(expr());
            } while (accept(","));
            expect("]");
          }
          return n;
        }
        if (tok.text == "{") {
          auto n = make(Node::kMap);
          if (!accept("}")) {
            do {
              n->kids.push_back(expr());
              expect(":");
              n->kids.push_back(expr());
            } while (accept(","));
            expect("}");
          }
          return n;
        }
        break;
      case Token::kEnd:
        break;
    }
    throw CelUnsupported{"unexpected '" + tok.text + "'"};
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------- evaluator

const char* typeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null_type";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int";
    case json::value_t::number_float:
      return "double";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "map";
    default:
      return "unknown";
  }
}

bool isInt(const json& v) { return v.is_number_integer(); }

[[noreturn]] void noOverload(const std::string& op, const json& a, const json* b = nullptr) {
  std::string sig = std::string(typeName(a)) + (b ? std::string(", ") + typeName(*b) : "");
  throw CelError{"no such overload: " + op + "(" + sig + ")"};
}

int64_t utf8Length(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

using Scopes = std::vector<std::pair<std::string, const json*>>;

// Binds a macro's variable for as long as it lives.
class ScopedVariable {
 public:
  ScopedVariable(Scopes& scopes, const std::string& name, const json* value) : scopes_(scopes) {
    scopes_.push_back({name, value});
  }
  ~ScopedVariable() { scopes_.pop_back(); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  Scopes& scopes_;
};

class Evaluator {
 public:
  Evaluator(const json& self, const json* old_self) {
    scopes_.push_back({"self", &self});
    if (old_self) scopes_.push_back({"oldSelf", old_self});
  }

  json eval(const Node& n) {
    switch (n.type) {
      case Node::kLit:
        return n.lit;
      case Node::kIdent:
        for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
          if (it->first == n.name) return *it->second;
        }
        throw CelUnsupported{"undeclared reference to '" + n.name + "'"};
      case Node::kSelect: {
        json base = eval(*n.kids[0]);
        if (!base.is_object()) noOverload("_." + n.name, base);
        auto it = base.find(n.name);
        if (it == base.end()) throw CelError{"no such key: " + n.name};
        return *it;
      }
      case Node::kIndex: {
        json base = eval(*n.kids[0]);
        json key = eval(*n.kids[1]);
        if (base.is_array() && isInt(key)) {
          int64_t i = key.get<int64_t>();
          if (i < 0 || i >= static_cast<int64_t>(base.size())) {
            throw CelError{"index out of bounds: " + std::to_string(i)};
          }
          return base[static_cast<size_t>(i)];
        }
        if (base.is_object() && key.is_string()) {
          auto it = base.find(key.get<std::string>());
          if (it == base.end()) throw CelError{"no such key: " + key.get<std::string>()};
          return *it;
        }
        noOverload("_[_]", base, &key);
      }
      case Node::kList: {
        json out = json::array();
        for (const auto& k : n.kids) out.push_back(eval(*k));
        return out;
      }
      case Node::kMap: {
        json out = json::object();
        for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
          json k = eval(*n.kids[i]);
          if (!k.is_string()) throw CelUnsupported{"non-string map keys"};
          out[k.get<std::string>()] = eval(*n.kids[i + 1]);
        }
        return out;
      }
      case Node::kCond: {
        json c = eval(*n.kids[0]);
        if (!c.is_boolean()) noOverload("_?_:_", c);
        return eval(*n.kids[c.get<bool>() ? 1 : 2]);
      }
      case Node::kUnary: {
        json v = eval(*n.kids[0]);
        if (n.name == "!") {
          if (!v.is_boolean()) noOverload("!_", v);
          return !v.get<bool>();
        }
        if (isInt(v)) {
          int64_t i = v.get<int64_t>();
          if (i == std::numeric_limits<int64_t>::min()) throw CelError{"integer overflow"};
          return -i;
        }
        if (v.is_number_float()) return -v.get<double>();
        noOverload("-_", v);
      }
      case Node::kBinary:
        return binary(n);
      case Node::kCall:
        return call(n);
    }
    throw CelUnsupported{"unknown node"};
  }

 private:
  bool truth(const Node& n, const char* op) {
    json v = eval(n);
    if (!v.is_boolean()) noOverload(op, v);
    return v.get<bool>();
  }

  json binary(const Node& n) {
    const std::string& op = n.name;
    if (op == "&&" || op == "||") {
      // CEL's commutative logic: an error on one side is absorbed when the other decides.
      const bool decisive = op == "||";
      std::optional<CelError> first_error;
      for (const auto& k : n.kids) {
        try {
          if (truth(*k, op.c_str()) == decisive) return decisive;
        } catch (const CelError& e) {
          if (!first_error) first_error = e;
        }
      }
      if (first_error) throw *first_error;
      return !decisive;
    }
    json a = eval(*n.kids[0]);
    json b = eval(*n.kids[1]);
    if (op == "==") return a == b;
    if (op == "!=") return a != b;
    if (op == "in") {
      if (b.is_array()) {
        for (const auto& e : b) {
          if (e == a) return true;
        }
        return false;
      }
      if (b.is_object() && a.is_string()) return b.contains(a.get<std::string>());
      noOverload("@in", a, &b);
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int cmp = 0;
      if (a.is_number() && b.is_number()) {
        if (isInt(a) && isInt(b)) {
          int64_t x = a.get<int64_t>(), y = b.get<int64_t>();
          cmp = x < y ? -1 : x > y ? 1 : 0;
        } else {
          double x = a.get<double>(), y = b.get<double>();
          cmp = x < y ? -1 : x > y ? 1 : 0;
        }
      } else if (a.is_string() && b.is_string()) {
        cmp = a.get<std::string>().compare(b.get<std::string>());
        cmp = cmp < 0 ? -1 : cmp > 0 ? 1 : 0;
      } else if (a.is_boolean() && b.is_boolean()) {
        cmp = static_cast<int>(a.get<bool>()) - static_cast<int>(b.get<bool>());
      } else {
        noOverload(op, a, &b);
      }
      if (op == "<") return cmp < 0;
      if (op == "<=") return cmp <= 0;
      if (op == ">") return cmp > 0;
      return cmp >= 0;
    }
    if (isInt(a) && isInt(b)) {
      int64_t x = a.get<int64_t>(), y = b.get<int64_t>(), r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      if (op == "/" || op == "%") {
        if (y == 0) throw CelError{op == "/" ? "division by zero" : "modulus by zero"};
        if (x == std::numeric_limits<int64_t>::min() && y == -1)
          overflow = true;
        else
          r = op == "/" ? x / y : x % y;
      }
      if (overflow) throw CelError{"integer overflow"};
      return r;
    }
    if (a.is_number_float() && b.is_number_float()) {
      double x = a.get<double>(), y = b.get<double>();
      if (op == "+") return x + y;
      if (op == "-") return x - y;
      if (op == "*") return x * y;
      if (op == "/") return x / y;
    }
    if (op == "+" && a.is_string() && b.is_string()) {
      return a.get<std::string>() + b.get<std::string>();
    }
    if (op == "+" && a.is_array() && b.is_array()) {
      json out = a;
      for (const auto& e : b) out.push_back(e);
      return out;
    }
    noOverload(op, a, &b);
  }

  json macro(const Node& n, const json& target) {
    if (n.kids.size() != 3 || n.kids[1]->type != Node::kIdent) {
      throw CelUnsupported{n.name + "() with this shape"};
    }
    const std::string var = n.kids[1]->name;
    std::vector<json> elems;
    if (target.is_array()) {
      elems.assign(target.begin(), target.end());
    } else if (target.is_object()) {
      for (auto it = target.begin(); it != target.end(); ++it) elems.emplace_back(it.key());
    } else {
      noOverload(n.name, target);
    }
    json out = json::array();
    int64_t count = 0;
    std::optional<CelError> error;
    for (const auto& e : elems) {
      json r;
      try {
        // The variable is in scope only while the body evaluates; the guard pops it however
        // the body ends (a second pop on a throw used to corrupt the scope stack).
        ScopedVariable bound(scopes_, var, &e);
        r = eval(*n.kids[2]);
        if (n.name != "map" && !r.is_boolean()) noOverload(n.name, r);
      } catch (const CelError& err) {
        if (n.name == "map" || n.name == "filter" || n.name == "exists_one") throw;
        if (!error) error = err;
        continue;
      }
      if (n.name == "map") {
        out.push_back(std::move(r));
        continue;
      }
      bool b = r.get<bool>();
      if (n.name == "all" && !b) return false;
      if (n.name == "exists" && b) return true;
      if (n.name == "exists_one" && b) ++count;
      if (n.name == "filter" && b) out.push_back(e);
    }
    if (error) throw *error;
    if (n.name == "all") return true;
    if (n.name == "exists") return false;
    if (n.name == "exists_one") return count == 1;
    return out;
  }

  json call(const Node& n) {
    const std::string& f = n.name;
    if (!n.method && f == "has") {
      if (n.kids.size() != 1 || n.kids[0]->type != Node::kSelect) {
        throw CelUnsupported{"has() needs a field selection"};
      }
      json base = eval(*n.kids[0]->kids[0]);
      if (!base.is_object()) noOverload("has", base);
      return base.contains(n.kids[0]->name);
    }
    if (n.method &&
        (f == "all" || f == "exists" || f == "exists_one" || f == "filter" || f == "map")) {
      return macro(n, eval(*n.kids[0]));
    }
    std::vector<json> a;
    for (const auto& k : n.kids) a.push_back(eval(*k));
    const size_t argc = a.size() - (n.method ? 1 : 0);
    if (f == "size" && ((n.method && argc == 0) || (!n.method && argc == 1))) {
      const json& v = a[0];
      if (v.is_string()) return utf8Length(v.get<std::string>());
      if (v.is_array() || v.is_object()) return static_cast<int64_t>(v.size());
      noOverload("size", v);
    }
    if (!n.method && argc == 1 && (f == "int" || f == "double" || f == "string")) {
      const json& v = a[0];
      if (f == "int") {
        if (isInt(v)) return v;
        if (v.is_number_float()) {
          double d = v.get<double>();
          if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) throw CelError{"range error"};
          return static_cast<int64_t>(d);
        }
        if (v.is_string()) {
          errno = 0;
          char* end = nullptr;
          const std::string s = v.get<std::string>();
          long long r = std::strtoll(s.c_str(), &end, 10);
          if (s.empty() || *end || errno) throw CelError{"cannot convert to int: " + s};
          return static_cast<int64_t>(r);
        }
      } else if (f == "double") {
        if (v.is_number()) return v.get<double>();
      } else {
        if (v.is_string()) return v;
        if (isInt(v)) return std::to_string(v.get<int64_t>());
        if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
        if (v.is_number_float()) return v.dump();
      }
      noOverload(f, v);
    }
    if (n.method && argc == 1 && a[0].is_string() && a[1].is_string()) {
      const std::string s = a[0].get<std::string>(), x = a[1].get<std::string>();
      if (f == "startsWith") return s.rfind(x, 0) == 0;
      if (f == "endsWith")
        return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
      if (f == "contains") return s.find(x) != std::string::npos;
      if (f == "matches") {
        auto m = regexSearch(x, s);
        if (!m) throw CelUnsupported{"regular expression " + x};
        return *m;
      }
    }
    if (n.method && argc == 0 && a[0].is_string() && (f == "lowerAscii" || f == "upperAscii")) {
      std::string s = a[0].get<std::string>();
      for (auto& c : s) {
        c = static_cast<char>(f == "lowerAscii" ? tolower(static_cast<unsigned char>(c))
                                                : toupper(static_cast<unsigned char>(c)));
      }
      return s;
    }
    throw CelUnsupported{"function " + f + "()"};
  }

  Scopes scopes_;
};

}  // namespace

std::optional<bool> regexSearch(const std::string& pattern, const std::string& text) {
  RE2::Options options;
  options.set_log_errors(false);  // a bad pattern is the caller's error to report, not a log line
  const RE2 re(pattern, options);
  if (!re.ok()) return std::nullopt;
  return RE2::PartialMatch(text, re);
}

bool celUsesOldSelf(const std::string& expression) {
  return expression.find("oldSelf") != std::string::npos;
}

CelResult evaluateCel(const std::string& expression, const json& self, const json* old_self) {
  CelResult result;
  try {
    NodePtr ast = Parser(lex(expression)).parseAll();
    Evaluator ev(self, old_self);
    result.value = ev.eval(*ast);
  } catch (const CelError& e) {
    result.kind = CelResult::kError;
    result.message = e.message;
  } catch (const CelUnsupported& e) {
    result.kind = CelResult::kUnsupported;
    result.message = e.message;
  } catch (const std::exception& e) {  // std::stoll and friends on odd literals
    result.kind = CelResult::kUnsupported;
    result.message = e.what();
  }
  return result;
}

}  // namespace ringmaster::local
