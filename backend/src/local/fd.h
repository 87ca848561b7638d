// Owns one file descriptor of the local backend (closed on destruction or
// reset). Not thread-safe; one owner.
#pragma once

#include <unistd.h>

namespace lizard::workspace::internal {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace lizard::workspace::internal
