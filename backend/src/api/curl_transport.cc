#include "curl_transport.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ascii.h"
#include "lizard/workspace/errors.h"
#include "prefault.h"

namespace lizard::api {

namespace internal {

TransportFailure failure_of_curl_code(CURLcode code, bool over_limit) {
  if (over_limit && code == CURLE_WRITE_ERROR) return TransportFailure::kAnswerTooLarge;
  switch (code) {
    case CURLE_OK:
      return TransportFailure::kNone;
    case CURLE_ABORTED_BY_CALLBACK:
      return TransportFailure::kCancelled;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return TransportFailure::kCouldNotConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportFailure::kTimedOut;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return TransportFailure::kConnectionFailed;
    default:
      return TransportFailure::kOther;
  }
}

}  // namespace internal

namespace {

using internal::CurlHeaders;
using internal::CurlPtr;
using internal::CurlSharePtr;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What the callbacks of one transfer collect.
struct Transfer {
  std::stop_token stop;
  const std::function<void(std::string_view)>* on_answer_chunk = nullptr;
  long status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  internal::PrefaultingAppender body_appender{body};  // into `body` reserved at its length
  std::uint64_t max_body = kMaxJsonAnswerBytes;
  bool over_limit = false;
  bool cut_at_max = false;  // HttpRequest::cut_at_max_answer
  bool cut = false;         // a 2xx answer was cut at max_body: a success
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view chunk(data, size * count);
  if (transfer->on_answer_chunk != nullptr && transfer->status >= 200 && transfer->status < 300) {
    (*transfer->on_answer_chunk)(chunk);
    return size * count;
  }
  const std::uint64_t room =
      transfer->max_body - std::min<std::uint64_t>(transfer->max_body, transfer->body.size());
  if (chunk.size() > room) {
    // Anything but the size handed in makes curl stop with CURLE_WRITE_ERROR.
    if (transfer->cut_at_max && transfer->status >= 200 && transfer->status < 300) {
      transfer->body_appender.append(chunk.data(), static_cast<std::size_t>(room));
      transfer->cut = true;
      return 0;
    }
    transfer->over_limit = true;
    return 0;
  }
  transfer->body_appender.append(chunk.data(), chunk.size());
  return size * count;
}

void note_header(Transfer& transfer, std::string_view name_text, std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  const std::string name = internal::ascii_lower(name_text);
  if (name == "content-length") {
    const long long n = std::atoll(std::string(value).c_str());
    // Reads of large files land in one buffer sized once; a length past
    // the cap is not reserved (the body will be refused at the cap).
    if (n > 0 && static_cast<std::uint64_t>(n) <= transfer.max_body) {
      transfer.body.reserve(static_cast<std::size_t>(n));
    }
  }
  transfer.headers[name] = std::string(value);
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.substr(0, 5) == "HTTP/") {
    // A new response (after a 100 Continue or a redirect): forget the last one's headers.
    transfer->headers.clear();
    const auto space = line.find(' ');
    if (space != std::string_view::npos) {
      transfer->status = std::atol(std::string(line.substr(space + 1, 3)).c_str());
    }
    return size * count;
  }
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    note_header(*transfer, line.substr(0, colon), line.substr(colon + 1));
  }
  return size * count;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Transfer*>(user)->stop.stop_requested() ? 1 : 0;
}

CurlHeaders header_list(const HttpRequest& request) {
  CurlHeaders list;
  const auto append = [&](const std::string& line) {
    // Appends at the end; returns the head (the new one for an empty list).
    curl_slist* head = curl_slist_append(list.get(), line.c_str());
    if (head == nullptr) throw workspace::WorkspaceError("curl_slist_append failed");
    if (!list) list.reset(head);
  };
  for (const auto& [name, value] : request.headers) append(name + ": " + value);
  // No "Expect: 100-continue" round trip before large bodies.
  append("Expect:");
  return list;
}

void set_method_and_body(CURL* handle, const HttpRequest& request) {
  if (request.method == "GET") {
    curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(handle, CURLOPT_POST, 1L);
  } else {
    curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!request.body.empty() || request.method == "POST") {
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
}

void set_callbacks(CURL* handle, Transfer& transfer) {
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &transfer);
}

// A pool of easy handles sharing one connection cache and DNS cache.
class CurlTransport final : public HttpTransport {
 public:
  CurlTransport() {
    global_init();
    share_.reset(curl_share_init());
    if (!share_) throw workspace::WorkspaceError("curl_share_init failed");
    curl_share_setopt(share_.get(), CURLSHOPT_LOCKFUNC, &CurlTransport::lock);
    curl_share_setopt(share_.get(), CURLSHOPT_UNLOCKFUNC, &CurlTransport::unlock);
    curl_share_setopt(share_.get(), CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(share_.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  }
  CurlTransport(const CurlTransport&) = delete;  // the share's lock callbacks hold `this`
  CurlTransport& operator=(const CurlTransport&) = delete;

  TransportOutcome send(const HttpRequest& request) override {
    Lease lease(*this);
    CURL* handle = lease.get();
    Transfer transfer;
    transfer.stop = request.stop;
    transfer.on_answer_chunk = request.on_answer_chunk ? &request.on_answer_chunk : nullptr;
    transfer.max_body = request.max_answer_bytes;
    transfer.cut_at_max = request.cut_at_max_answer;
    std::array<char, CURL_ERROR_SIZE> error_text{};
    const CurlHeaders headers = header_list(request);

    curl_easy_setopt(handle, CURLOPT_SHARE, share_.get());
    curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_text.data());
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
    curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
    // HTTP only, and no redirect is followed (CURLOPT_FOLLOWLOCATION is off).
    curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    if (request.fresh_connection) curl_easy_setopt(handle, CURLOPT_FRESH_CONNECT, 1L);
    set_callbacks(handle, transfer);
    set_method_and_body(handle, request);

    CURLcode code = curl_easy_perform(handle);
    if (cut_on_a_stale_connection(handle, code, request, transfer)) {
      // The server closed a kept-alive connection while this request was on
      // its way (its idle timeout racing the reuse): the request never
      // arrived whole, so the server cannot have acted on it. libcurl sends
      // such a request again itself only when the cut shows on a receive;
      // here it showed on a send. Once more, on a new connection.
      transfer.status = 0;
      transfer.headers.clear();
      transfer.body.clear();
      transfer.over_limit = false;
      transfer.cut = false;
      error_text.fill('\0');
      curl_easy_setopt(handle, CURLOPT_FRESH_CONNECT, 1L);
      code = curl_easy_perform(handle);
    }
    return outcome_of(handle, code, error_text.data(), transfer);
  }

 private:
  // An easy handle out of the pool for one transfer; reset and returned after.
  class Lease {
   public:
    explicit Lease(CurlTransport& owner) : owner_(owner), handle_(owner.acquire()) {}
    ~Lease() { owner_.release(std::move(handle_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    CURL* get() const { return handle_.get(); }

   private:
    CurlTransport& owner_;
    CurlPtr handle_;
  };

  // A send that failed on a reused connection before the body was out and
  // before any answer: the server has not seen the request whole.
  static bool cut_on_a_stale_connection(CURL* handle, CURLcode code, const HttpRequest& request,
                                        const Transfer& transfer) {
    if (code != CURLE_SEND_ERROR || request.fresh_connection || request.body.empty() ||
        transfer.status != 0 || !transfer.body.empty())
      return false;
    long new_connections = -1;
    curl_off_t uploaded = -1;
    curl_easy_getinfo(handle, CURLINFO_NUM_CONNECTS, &new_connections);
    curl_easy_getinfo(handle, CURLINFO_SIZE_UPLOAD_T, &uploaded);
    return new_connections == 0 && uploaded >= 0 &&
           static_cast<std::uint64_t>(uploaded) < request.body.size();
  }

  // An HTTP/1 answer with a body but neither Content-Length nor chunked
  // framing ends where the connection closes: a cut cannot be told from the
  // end, and a file read cut short would be taken whole. Such an answer is a
  // malformed reply. (HTTP/2 frames every answer; 204 and 304 have no body;
  // a streamed exec ends with its exit event, or is a failure. An empty body
  // is let through: cpp-httplib, the mock's server, sends an empty file
  // without a length, and a server may well do the same.)
  static bool unframed(CURL* handle, const Transfer& transfer) {
    if (transfer.on_answer_chunk != nullptr || transfer.body.empty() || transfer.status == 204 ||
        transfer.status == 304 || transfer.headers.count("content-length") != 0) {
      return false;
    }
    long version = 0;
    curl_easy_getinfo(handle, CURLINFO_HTTP_VERSION, &version);
    if (version != CURL_HTTP_VERSION_1_0 && version != CURL_HTTP_VERSION_1_1) return false;
    const auto encoding = transfer.headers.find("transfer-encoding");
    return encoding == transfer.headers.end() ||
           internal::ascii_lower(encoding->second).find("chunked") == std::string::npos;
  }

  static TransportOutcome outcome_of(CURL* handle, CURLcode code, const char* error_text,
                                     Transfer& transfer) {
    TransportOutcome outcome;
    outcome.failure = transfer.cut ? TransportFailure::kNone
                                   : internal::failure_of_curl_code(code, transfer.over_limit);
    if (code == CURLE_OK && !transfer.cut && unframed(handle, transfer)) {
      outcome.failure = TransportFailure::kConnectionFailed;
      outcome.detail =
          "the answer had neither Content-Length nor chunked framing, so a cut could not be told "
          "from its end";
    }
    long status = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
    outcome.status = status;
    long request_size = 0;
    curl_easy_getinfo(handle, CURLINFO_REQUEST_SIZE, &request_size);
    outcome.request_sent = request_size > 0;
    if (code != CURLE_OK && !transfer.cut) {
      outcome.detail = *error_text != '\0' ? std::string(error_text) : curl_easy_strerror(code);
    }
    outcome.headers = std::move(transfer.headers);
    outcome.body = std::move(transfer.body);
    if (transfer.over_limit) outcome.answer_limit = transfer.max_body;
    return outcome;
  }

  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<CurlTransport*>(user)->locks_[static_cast<std::size_t>(data) % kLocks].lock();
  }
  static void unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<CurlTransport*>(user)->locks_[static_cast<std::size_t>(data) % kLocks].unlock();
  }

  CurlPtr acquire() {
    {
      std::lock_guard guard(pool_mutex_);
      if (!free_.empty()) {
        CurlPtr handle = std::move(free_.back());
        free_.pop_back();
        return handle;
      }
    }
    CurlPtr handle(curl_easy_init());
    if (!handle) throw workspace::WorkspaceError("curl_easy_init failed");
    return handle;
  }

  void release(CurlPtr handle) {
    curl_easy_reset(handle.get());
    std::lock_guard guard(pool_mutex_);
    free_.push_back(std::move(handle));
  }

  static constexpr std::size_t kLocks = 16;
  // Destroyed in reverse: the handles first, then the share they used, then
  // the locks the share calls.
  std::array<std::mutex, kLocks> locks_;
  CurlSharePtr share_;
  std::mutex pool_mutex_;
  std::vector<CurlPtr> free_;
};

}  // namespace

std::shared_ptr<HttpTransport> make_curl_transport() { return std::make_shared<CurlTransport>(); }

}  // namespace lizard::api
