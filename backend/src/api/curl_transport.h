// The libcurl HttpTransport (make_curl_transport(), transport.h) and the
// RAII owners of curl's handles. Private to lizard_sandbox.
#pragma once

#include <curl/curl.h>

#include <memory>

#include "lizard/api/transport.h"

namespace lizard::api::internal {

struct CurlEasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct CurlShareDeleter {
  void operator()(CURLSH* share) const { curl_share_cleanup(share); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

using CurlPtr = std::unique_ptr<CURL, CurlEasyDeleter>;
using CurlSharePtr = std::unique_ptr<CURLSH, CurlShareDeleter>;
using CurlHeaders = std::unique_ptr<curl_slist, CurlSlistDeleter>;

// Which failure a finished transfer's CURLcode is (kNone for CURLE_OK).
// `over_limit`: the write callback refused the answer for its size.
TransportFailure failure_of_curl_code(CURLcode code, bool over_limit);

}  // namespace lizard::api::internal
