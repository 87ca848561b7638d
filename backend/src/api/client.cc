// The client's core: options, the one path every exchange takes (send),
// and the raw request(). The endpoints are in projects.cc, sandboxes.cc,
// processes.cc, files.cc and volumes.cc.
#include "lizard/api/client.h"

#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "ascii.h"
#include "wire_codec.h"

namespace lizard::api {

ClientOptions ClientOptions::from_environment() {
  ClientOptions options;
  if (const char* v = std::getenv("LIZARD_API_KEY")) options.api_key = v;
  if (const char* v = std::getenv("LIZARD_PROJECT_ID")) options.project = v;
  if (const char* v = std::getenv("LIZARD_API_URL"); v != nullptr && *v != '\0') {
    options.api_url = v;
  }
  return options;
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  if (options_.api_url.empty()) throw std::invalid_argument("the Lizard API URL is empty");
  // The key travels in a header: only over HTTP (a mistyped scheme would
  // have libcurl speak another protocol to whatever answers).
  const std::string scheme = internal::ascii_lower(options_.api_url.substr(0, 8));
  if (scheme.rfind("https://", 0) != 0 && scheme.rfind("http://", 0) != 0) {
    throw std::invalid_argument("the Lizard API URL must start with https:// or http://");
  }
  while (!options_.api_url.empty() && options_.api_url.back() == '/') options_.api_url.pop_back();
  transport_ = options_.transport ? options_.transport : make_curl_transport();
}

Client::~Client() = default;

std::string Client::encode_query(
    const std::vector<std::pair<std::string, std::string>>& parameters) {
  std::string out;
  for (const auto& [key, value] : parameters) {
    if (!out.empty()) out += '&';
    out += internal::escape_segment(key);
    out += '=';
    out += internal::escape_segment(value);
  }
  return out;
}

std::string Client::operation(const Exchange& exchange) {
  return std::string(exchange.method) + " " + exchange.path;
}

TransportOutcome Client::send(const Exchange& exchange, const CallOptions& call, bool require_2xx) {
  HttpRequest request;
  request.method = std::string(exchange.method);
  request.url = options_.api_url + exchange.path;
  if (!exchange.query.empty()) request.url += "?" + exchange.query;
  request.headers.emplace_back("X-API-Key", options_.api_key);
  if (!exchange.body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("Accept", std::string(exchange.accept));
  request.body = exchange.body;
  request.timeout = call.timeout.count() > 0 ? call.timeout : options_.request_timeout;
  request.stop = call.stop;
  request.fresh_connection = call.no_replay;
  if (call.max_answer_bytes > 0) request.max_answer_bytes = call.max_answer_bytes;
  request.cut_at_max_answer = call.cut_at_max_answer && call.max_answer_bytes > 0;
  request.on_answer_chunk = exchange.on_answer_chunk;

  const auto start = std::chrono::steady_clock::now();
  TransportOutcome outcome = transport_->send(request);
  if (options_.log) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    const std::string result = outcome.failure != TransportFailure::kNone
                                   ? "transport failure (" + outcome.detail + ")"
                                   : std::to_string(outcome.status);
    options_.log(redact(operation(exchange) + " -> " + result + " " + std::to_string(ms) + " ms",
                        options_.api_key));
  }
  const bool answered_2xx = outcome.status >= 200 && outcome.status < 300;
  if (outcome.failure != TransportFailure::kNone || (require_2xx && !answered_2xx)) {
    throw_transport_error(outcome, operation(exchange), options_.api_key);
  }
  return outcome;
}

Response Client::checked(const Exchange& exchange, const CallOptions& call) {
  TransportOutcome outcome = send(exchange, call, true);
  return Response{outcome.status, std::move(outcome.headers), std::move(outcome.body)};
}

Response Client::request(std::string_view method, std::string_view path, std::string_view query,
                         std::string_view body, const CallOptions& call, std::string_view accept) {
  Exchange exchange{.method = method,
                    .path = std::string(path),
                    .query = std::string(query),
                    .body = body,
                    .accept = accept.empty() ? std::string_view("application/json") : accept};
  TransportOutcome outcome = send(exchange, call, false);
  return Response{outcome.status, std::move(outcome.headers), std::move(outcome.body)};
}

}  // namespace lizard::api
