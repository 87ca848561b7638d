// Encodings the Lizard client needs: base64 (file writes, guest output) and a
// Server-Sent Events parser (streaming exec). Pure; thread-safe except that
// one SseParser instance belongs to one stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lizard::api {

// Standard base64 with padding.
std::string base64_encode(std::string_view bytes);
// Appends the encoding to `out` (which the caller may have reserved).
void base64_encode_append(std::string_view bytes, std::string& out);
inline std::size_t base64_encoded_size(std::size_t n) { return (n + 2) / 3 * 4; }
// Decodes standard base64; whitespace is skipped, padding is optional.
// Throws std::invalid_argument on any other character.
std::string base64_decode(std::string_view text);

// Incremental SSE parser (the WHATWG event-stream format): feed() bytes in any
// chunking; every complete event is handed to the callback with its event
// name ("message" when none) and its data lines joined by "\n". Comment lines
// (":...") and unknown fields are ignored; CR, LF and CRLF end lines.
class SseParser {
 public:
  using Callback = std::function<void(const std::string& event, const std::string& data)>;
  // A line, or an event's data, longer than this is not kept (a server that
  // sends one without end must not grow this without bound): the rest of it
  // is dropped, the event is not dispatched, and overflowed() says so.
  static constexpr std::size_t kMaxEventBytes = 16u << 20;

  explicit SseParser(Callback callback) : callback_(std::move(callback)) {}
  void feed(std::string_view bytes);
  // Ends the stream: a pending, not yet dispatched event is discarded (as the
  // format requires).
  void finish();
  bool overflowed() const { return overflowed_; }

 private:
  void line(std::string_view text);

  Callback callback_;
  std::string buffer_;
  std::string event_;
  std::string data_;
  bool has_data_ = false;
  bool skip_lf_ = false;
  bool overflowed_ = false;
  bool dropping_line_ = false;   // the current line passed kMaxEventBytes
  bool dropping_event_ = false;  // the current event's data did
};

}  // namespace lizard::api
