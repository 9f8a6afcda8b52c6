#include "local/https/http_message.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace ringmaster::local {

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string toLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits `s` at `sep` outside double-quoted strings.
std::vector<std::string_view> splitUnquoted(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == '\\' && quoted) ++i;
    if (!quoted && i < s.size() && s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace

bool isHttpToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

void Headers::add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

void Headers::set(std::string name, std::string value) {
  remove(name);
  add(std::move(name), std::move(value));
}

void Headers::remove(std::string_view name) {
  std::erase_if(entries_, [&](const Entry& e) { return equalsIgnoreCase(e.first, name); });
}

const std::string* Headers::find(std::string_view name) const {
  for (const auto& [key, value] : entries_) {
    if (equalsIgnoreCase(key, name)) return &value;
  }
  return nullptr;
}

std::string Headers::get(std::string_view name) const {
  const std::string* value = find(name);
  return value ? *value : std::string();
}

const std::string* Request::queryParam(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::optional<std::string> percentDecode(std::string_view in, bool plus_as_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = hexValue(in[i + 1]);
      int lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '\0') return std::nullopt;
      out.push_back(decoded);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string percentEncode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : in) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::optional<QueryParams> parseQuery(std::string_view raw) {
  QueryParams params;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view piece = raw.substr(start, end - start);
    if (!piece.empty()) {
      size_t eq = piece.find('=');
      auto key = percentDecode(piece.substr(0, eq), true);
      auto value = eq == std::string_view::npos ? std::optional<std::string>("")
                                                : percentDecode(piece.substr(eq + 1), true);
      if (!key || !value) return std::nullopt;
      params.emplace_back(std::move(*key), std::move(*value));
    }
    start = end + 1;
  }
  return params;
}

const std::string* MediaType::param(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (equalsIgnoreCase(key, name)) return &value;
  }
  return nullptr;
}

bool MediaType::accepts(std::string_view essence) const {
  size_t slash = essence.find('/');
  std::string_view want_type = essence.substr(0, slash);
  std::string_view want_sub = slash == std::string_view::npos ? "" : essence.substr(slash + 1);
  if (type == "*") return true;
  if (!equalsIgnoreCase(type, want_type)) return false;
  return subtype == "*" || equalsIgnoreCase(subtype, want_sub);
}

std::optional<MediaType> parseMediaType(std::string_view text) {
  std::vector<std::string_view> parts = splitUnquoted(text, ';');
  std::string_view essence = trimOws(parts[0]);
  size_t slash = essence.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  MediaType media;
  media.type = toLower(trimOws(essence.substr(0, slash)));
  media.subtype = toLower(trimOws(essence.substr(slash + 1)));
  if (!isHttpToken(media.type) || !isHttpToken(media.subtype)) return std::nullopt;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view param = trimOws(parts[i]);
    if (param.empty()) continue;
    size_t eq = param.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string name = toLower(trimOws(param.substr(0, eq)));
    std::string_view value = trimOws(param.substr(eq + 1));
    if (!isHttpToken(name)) return std::nullopt;
    std::string unquoted;
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      for (size_t j = 1; j + 1 < value.size(); ++j) {
        if (value[j] == '\\' && j + 2 < value.size()) ++j;
        unquoted.push_back(value[j]);
      }
    } else {
      unquoted = std::string(value);
    }
    if (name == "q") {
      char* end = nullptr;
      double q = std::strtod(unquoted.c_str(), &end);
      if (end == unquoted.c_str() || *end != '\0' || q < 0 || q > 1) return std::nullopt;
      media.quality = q;
    } else {
      media.params.emplace_back(std::move(name), std::move(unquoted));
    }
  }
  return media;
}

std::vector<MediaType> parseAccept(std::string_view header) {
  std::vector<MediaType> ranges;
  if (trimOws(header).empty()) {
    ranges.push_back(MediaType{"*", "*", {}, 1.0});
    return ranges;
  }
  for (std::string_view part : splitUnquoted(header, ',')) {
    if (trimOws(part).empty()) continue;
    if (auto media = parseMediaType(part)) ranges.push_back(std::move(*media));
  }
  return ranges;
}

std::string contentTypeEssence(const Request& request) {
  const std::string* value = request.headers.find("Content-Type");
  if (value == nullptr) return "";
  auto media = parseMediaType(*value);
  return media ? media->essence() : "";
}

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace ringmaster::local
