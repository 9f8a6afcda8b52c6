#include "ringmaster/http/get.h"

#include <curl/curl.h>

#include <memory>

#include "ringmaster/http/curl_support.h"

namespace ringmaster::http {
namespace {

struct Sink {
  Response* response;
  size_t max_body;
};

size_t keepBody(char* data, size_t size, size_t count, void* user) {
  Sink* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  std::string& body = sink->response->body;
  const size_t room = sink->max_body > body.size() ? sink->max_body - body.size() : 0;
  body.append(data, std::min(n, room));
  if (n > room) sink->response->truncated = true;
  return n;  // all of it consumed: dropping the rest is not an error
}

}  // namespace

std::string url(const std::string& host, int port, const std::string& path) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + path;
}

core::Result<Response> get(const std::string& target, const GetOptions& options) {
  initCurl();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return core::internalError("GET " + target + ": curl_easy_init failed");
  CURL* c = curl.get();
  Response response;
  Sink sink{&response, options.max_body};
  char detail[CURL_ERROR_SIZE] = {};
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  for (const std::string& h : options.headers) {
    curl_slist* more = curl_slist_append(headers.get(), h.c_str());
    if (more == nullptr) return core::internalError("GET " + target + ": out of memory");
    headers.release();
    headers.reset(more);
  }
  if (curl_easy_setopt(c, CURLOPT_URL, target.c_str()) != CURLE_OK) {
    return core::invalidArgument("GET " + target + ": not a URL libcurl accepts");
  }
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM from resolver timeouts in threads
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keepBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  const CURLcode code = curl_easy_perform(c);
  if (code != CURLE_OK)
    return core::unavailable("GET " + target + ": " + curlFailure(c, code, detail));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace ringmaster::http
