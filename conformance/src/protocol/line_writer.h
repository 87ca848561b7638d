// serve_protocol's answers on its output (server.cc): each line written whole
// before the next begins, and nothing written after a failed write (part of
// a line may be out, and what followed would read as garbage).
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string_view>

struct iovec;

namespace lizard::conformance::protocol {

class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}

  // head + body + tail, with one writev.
  void write(std::string_view head, std::string_view body, std::string_view tail);

  // head + the base64 of `bytes` + tail, encoded and written 48 KiB of bytes
  // at a time: the reader takes the first pieces while the next are encoded,
  // where one write of the whole line made it wait for the encoding and for
  // the first 1 MiB to fill the pipe (on 2 CPUs, 0.5 ms of a 1 MiB read's
  // 1.3 ms; docs/performance.md). Pieces of whole 3-byte groups encode to
  // the base64 of the whole.
  void write_base64(std::string_view head, std::string_view bytes, std::string_view tail);

  // True once a write failed (the reader is gone): nothing more is written.
  bool broken() {
    std::lock_guard<std::mutex> lock(mutex_);
    return broken_;
  }

 private:
  static constexpr std::size_t kPieceBytes = 48 * 1024;
  static_assert(kPieceBytes % 3 == 0, "a piece must be whole 3-byte groups");

  bool write_all(iovec* part, int count);  // under mutex_

  const int fd_;
  std::mutex mutex_;
  bool broken_ = false;  // under mutex_: a write failed
};

}  // namespace lizard::conformance::protocol
