#include "line_writer.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "wire.h"

namespace lizard::conformance::protocol {

namespace {
iovec part(std::string_view text) { return {const_cast<char*>(text.data()), text.size()}; }
}  // namespace

void LineWriter::write(std::string_view head, std::string_view body, std::string_view tail) {
  iovec parts[3] = {part(head), part(body), part(tail)};
  std::lock_guard<std::mutex> lock(mutex_);
  write_all(parts, 3);
}

void LineWriter::write_base64(std::string_view head, std::string_view bytes,
                              std::string_view tail) {
  std::unique_ptr<char[]> piece(new char[base64_size(kPieceBytes)]);
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t at = 0;
  do {
    const std::string_view chunk = bytes.substr(at, kPieceBytes);
    base64_encode_to(chunk, piece.get());
    const bool first = at == 0;
    at += chunk.size();
    const bool last = at == bytes.size();
    iovec parts[3];
    int count = 0;
    if (first) parts[count++] = part(head);
    parts[count++] = {piece.get(), base64_size(chunk.size())};
    if (last) parts[count++] = part(tail);
    if (!write_all(parts, count)) return;
  } while (at < bytes.size());
}

bool LineWriter::write_all(iovec* part, int count) {
  if (broken_) return false;
  while (count > 0) {
    const ssize_t n = ::writev(fd_, part, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // the reader is gone
      broken_ = true;
      return false;
    }
    auto written = static_cast<std::size_t>(n);
    while (count > 0 && written >= part->iov_len) {
      written -= part->iov_len;
      ++part;
      --count;
    }
    if (count > 0) {
      part->iov_base = static_cast<char*>(part->iov_base) + written;
      part->iov_len -= written;
    }
  }
  return true;
}

}  // namespace lizard::conformance::protocol
