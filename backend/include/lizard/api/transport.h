// The HTTP transport under lizard::api::Client: one small interface, so that
// tests can hand the client a scripted transport and exercise every route
// without a socket; make_curl_transport() is the default (libcurl).
//
// A transport reports what happened as a value: an HTTP answer of any status,
// or a TransportFailure saying why there is none. It never throws for either;
// the client maps both to exceptions in one place (throw_transport_error,
// errors.h).
//
// Thread safety: send() may be called from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lizard::api {

// The largest answer body the client buffers, per exchange. JSON answers are
// small (an exec answer is at most about 1 MiB: two 512 KiB streams), so a
// larger one is a broken or hostile server, not data.
inline constexpr std::uint64_t kMaxJsonAnswerBytes = 64u * 1024 * 1024;
// Raw file reads (read_file) return the whole file in memory; larger files
// are refused rather than exhausting it.
inline constexpr std::uint64_t kMaxFileReadBytes = 1024u * 1024 * 1024;

struct HttpRequest {
  std::string method;  // "GET", "POST", "DELETE"
  std::string url;     // absolute, the query included
  // Sent as they are, in this order (the client adds X-API-Key, Accept and,
  // with a body, Content-Type).
  std::vector<std::pair<std::string, std::string>> headers;
  // Sent when not empty, and always for POST (an empty POST has Content-Length: 0).
  // Valid for the duration of send().
  std::string_view body;
  std::chrono::milliseconds timeout{0};  // the whole exchange; must be positive
  std::stop_token stop;                  // a stop request aborts the exchange (kCancelled)
  // Send on a new connection, never on a reused keep-alive one (CallOptions::no_replay).
  bool fresh_connection = false;
  // The most answer bytes buffered; past it the transfer stops (kAnswerTooLarge).
  std::uint64_t max_answer_bytes = kMaxJsonAnswerBytes;
  // With it, a 2xx answer longer than max_answer_bytes is cut there instead:
  // its first max_answer_bytes bytes are the body, the transfer is stopped
  // (the connection closed) and the outcome is the answer (kNone).
  bool cut_at_max_answer = false;
  // When set, the body of a 2xx answer goes here chunk by chunk as it arrives
  // (on the calling thread, not buffered, not counted) instead of into the
  // outcome. Must not throw.
  std::function<void(std::string_view)> on_answer_chunk;
};

// Why an exchange has no (complete) HTTP answer.
enum class TransportFailure {
  kNone,              // an HTTP answer arrived (any status)
  kCancelled,         // the stop token was triggered
  kCouldNotConnect,   // name resolution, connect or TLS handshake failed
  kTimedOut,          // the deadline passed
  kConnectionFailed,  // send/receive failed, the server hung up, a malformed reply
  kAnswerTooLarge,    // the answer passed max_answer_bytes; the transfer was stopped
  kOther,             // anything else (a malformed URL, out of memory, ...)
};

// Everything known about one exchange.
struct TransportOutcome {
  TransportFailure failure = TransportFailure::kNone;
  // The transport's own words about a failure (for the message; redacted there).
  std::string detail;
  // True when any byte of the request went out: the server may have acted on it.
  bool request_sent = false;
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;
  // kAnswerTooLarge: the limit that was passed.
  std::uint64_t answer_limit = 0;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One exchange. Reports failures in the outcome; throws only when it
  // cannot try at all (std::bad_alloc, workspace::WorkspaceError).
  virtual TransportOutcome send(const HttpRequest& request) = 0;
};

// libcurl: a pool of easy handles sharing one connection cache and DNS cache,
// so requests reuse keep-alive connections; the stop token is checked by
// curl's progress callback.
std::shared_ptr<HttpTransport> make_curl_transport();

}  // namespace lizard::api
