#include "ringmaster/http/curl_support.h"

#include <cstring>
#include <mutex>

namespace ringmaster::http {

void initCurl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string curlFailure(CURL* curl, CURLcode code, const char* detail) {
  long os_errno = 0;
  curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
  if (code == CURLE_COULDNT_CONNECT && os_errno != 0) {
    return std::string("connect: ") + std::strerror(static_cast<int>(os_errno));
  }
  std::string text = curl_easy_strerror(code);
  if (detail != nullptr && detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

}  // namespace ringmaster::http
