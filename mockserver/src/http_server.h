// The mock's HTTP server: cpp-httplib's routing and message handling, with
// the connection handling replaced by one that holds under hostile clients.
//
// httplib 0.11.4 reads a request head of any length and any number of header
// lines, waits for a body that a POST without Content-Length never sends,
// reads chunked bodies without a limit, percent-decodes header values, and
// gives every connection (idle, slow or gone) a thread of a fixed pool
// until a timeout. Here:
//   - a request head is at most `max_head_bytes` and `max_header_lines`
//     (else 431), and must arrive within `head_timeout` (else 408);
//   - a request without Content-Length or Transfer-Encoding has no body;
//   - a body must arrive whole within `body_timeout` of the head's end (a
//     byte now and then, each within `io_timeout`, no longer holds a
//     thread for ever);
//   - no request reads more than the body limit plus framing, chunked or not;
//   - an idle keep-alive connection is closed after `idle_timeout`, and
//     every read and write gives up after `io_timeout` or when the server
//     stops;
//   - threads are made as connections need them, up to `max_threads`, and
//     end when idle (but `min_threads`);
//   - the handler of a request can see the raw auth headers and the socket
//     (current_connection()), to compare keys exactly as sent and to notice
//     a client that went away.
// Binding never shares a port (no SO_REUSEPORT).
//
// Thread safety: as httplib::Server; request_stop() may be called from any
// thread.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace lizard::mock::internal {

struct HttpLimits {
  std::size_t max_head_bytes = 64 * 1024;
  std::size_t max_header_lines = 100;
  std::size_t max_body_bytes = 256u << 20;
  std::chrono::seconds head_timeout{10};
  std::chrono::milliseconds body_timeout{120000};
  std::chrono::seconds idle_timeout{5};
  std::chrono::seconds io_timeout{30};
  std::size_t min_threads = 8;  // kept; more are made on demand and end when idle
  std::size_t max_threads = 1024;
};

// The raw view of the request being handled on this thread.
struct ConnectionInfo {
  int socket = -1;
  // Header values exactly as sent (httplib percent-decodes them); empty
  // when absent.
  std::string api_key;        // X-API-Key
  std::string authorization;  // Authorization
  std::string control_key;    // X-Mock-Control-Key
  // The request's body was refused unread: close gently (the client still
  // sends it; an abrupt close would reset the connection before it reads
  // the answer).
  bool refuse_rest = false;
};

// The connection of the request this thread handles (a default, socket -1,
// outside a request).
ConnectionInfo& current_connection();

// True when the peer of `socket` closed or reset the connection.
bool peer_closed(int socket);

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(const HttpLimits& limits);
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Wakes every connection (idle or reading) so that it ends; then stop().
  void request_stop();

 private:
  bool process_and_close_socket(socket_t sock) override;

  HttpLimits limits_;
  int stop_fd_ = -1;  // an eventfd, readable once stopping
};

}  // namespace lizard::mock::internal
