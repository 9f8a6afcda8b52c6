#pragma once
// What every libcurl user in the repository shares: the one-time global initialisation and the
// wording of a failed transfer. For the .cc files that drive libcurl themselves (lib/http's GET,
// lib/kube's API client); they link CURL::libcurl as well.

#include <curl/curl.h>

#include <string>

namespace ringmaster::http {

// curl_global_init, once per process, before the first handle (it is not thread-safe in every
// libcurl build). Call it before curl_easy_init; later calls do nothing.
void initCurl();

// Why a transfer failed, in the words of the layer that failed: the OS's errno for a refused or
// unreachable connection, libcurl's text otherwise, with the error buffer's detail when it has any.
std::string curlFailure(CURL* curl, CURLcode code, const char* detail);

}  // namespace ringmaster::http
