// A descriptor closed on scope exit, for the mock's sandbox code.
// Not thread-safe (one owner); movable, not copyable.
#pragma once

#include <unistd.h>

namespace lizard::mock::internal {

// Closes `fd` when it is open and marks it closed (-1).
inline void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() { close_fd(fd_); }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  // Moving hands the descriptor over; the target closes the one it held.
  ScopedFd(ScopedFd&& o) noexcept : fd_(o.release()) {}
  ScopedFd& operator=(ScopedFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  int get() const { return fd_; }
  // Gives the descriptor up to the caller (it is no longer closed here).
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    close_fd(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

}  // namespace lizard::mock::internal
