#pragma once
// HTTP/1.1 message pieces shared by the server and its handlers: header lists with
// case-insensitive lookup, the parsed Request, percent-decoding, query strings, media types
// (Content-Type and Accept, including Kubernetes' parameters such as
// `application/json;as=Table;v=v1;g=meta.k8s.io`) and reason phrases.
//
// Thread-safety: value types and pure functions. Failure: parsers return std::nullopt on
// malformed input; nothing throws.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringmaster::local {

bool equalsIgnoreCase(std::string_view a, std::string_view b);
// An RFC 9110 token (a method, a header name, a media type's parts): one or more of
// ALPHA, DIGIT and !#$%&'*+-.^_`|~.
bool isHttpToken(std::string_view s);
// `s` without leading and trailing optional whitespace (spaces and tabs).
std::string_view trimOws(std::string_view s);

// Header fields in arrival order; names compare case-insensitively.
class Headers {
 public:
  using Entry = std::pair<std::string, std::string>;

  void add(std::string name, std::string value);
  // Replaces every field called `name` with one field.
  void set(std::string name, std::string value);
  void remove(std::string_view name);
  // The first field called `name`, or nullptr.
  const std::string* find(std::string_view name) const;
  // The first field called `name`, or "" when absent.
  std::string get(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
};

using QueryParams = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;     // "GET"
  std::string target;     // as sent: "/api/v1/namespaces/a%20b/pods?watch=true"
  std::string path;       // percent-decoded path: "/api/v1/namespaces/a b/pods"
  std::string raw_query;  // after '?', undecoded: "watch=true"
  QueryParams query;      // decoded pairs in order; a bare key has an empty value
  int version_minor = 1;  // HTTP/1.<minor>
  Headers headers;
  std::string body;            // de-chunked
  std::string remote_address;  // "127.0.0.1:54321"
  // Set by the server's authentication: "ringmaster-local-admin" for the bearer token,
  // "system:anonymous" for a request without credentials on a public path.
  std::string user;

  // The first value of query parameter `name`, or nullptr.
  const std::string* queryParam(std::string_view name) const;
  bool hasQueryParam(std::string_view name) const { return queryParam(name) != nullptr; }
};

// Decodes %XX escapes (and '+' as a space when `plus_as_space`, for query strings). Returns
// nullopt for a malformed escape or an encoded NUL.
std::optional<std::string> percentDecode(std::string_view in, bool plus_as_space);
// Escapes everything except RFC 3986 unreserved characters.
std::string percentEncode(std::string_view in);
// "a=1&b=x%20y&c" -> {{"a","1"},{"b","x y"},{"c",""}}; empty pieces are skipped.
std::optional<QueryParams> parseQuery(std::string_view raw);

// One media type or media range: `type/subtype;name=value;...`. Type, subtype and parameter
// names are lowercased; parameter values keep their case (quotes removed). `q` goes to quality.
struct MediaType {
  std::string type;
  std::string subtype;
  std::vector<std::pair<std::string, std::string>> params;
  double quality = 1.0;

  std::string essence() const { return type + "/" + subtype; }
  const std::string* param(std::string_view name) const;
  // Whether this (possibly wildcard) range accepts `essence` ("application/json").
  bool accepts(std::string_view essence) const;
};

std::optional<MediaType> parseMediaType(std::string_view text);
// An Accept header split into ranges in the order sent (malformed ranges are skipped). An
// empty header means "*/*".
std::vector<MediaType> parseAccept(std::string_view header);
// The essence of a Content-Type value ("application/json; charset=utf-8" -> "application/json"),
// or "" when absent or malformed.
std::string contentTypeEssence(const Request& request);

std::string_view reasonPhrase(int status);

}  // namespace ringmaster::local
