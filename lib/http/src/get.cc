#include "ringmaster/http/get.h"

#include <curl/curl.h>

#include <cstring>
#include <memory>
#include <mutex>

namespace ringmaster::http {
namespace {

// curl_global_init is not thread-safe in every libcurl build: once, before the first handle.
void initOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

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

// The cause in the words of the layer that failed: the OS's errno for a refused or unreachable
// connection, curl's text otherwise.
std::string cause(CURL* curl, CURLcode code, const char* detail) {
  long os_errno = 0;
  curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
  if (code == CURLE_COULDNT_CONNECT && os_errno != 0) {
    return std::string("connect: ") + std::strerror(static_cast<int>(os_errno));
  }
  std::string text = curl_easy_strerror(code);
  if (detail != nullptr && detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

}  // namespace

std::string url(const std::string& host, int port, const std::string& path) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + path;
}

core::Result<Response> get(const std::string& target, const GetOptions& options) {
  initOnce();
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
  if (code != CURLE_OK) return core::unavailable("GET " + target + ": " + cause(c, code, detail));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace ringmaster::http
