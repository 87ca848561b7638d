// Filling large buffers without a page fault per 4 KiB. A fresh buffer of
// 64 MiB takes 16,384 page faults as it is written; where a page fault is
// slow (in virtual machines, where each one exits to the hypervisor) they
// cost more than the copy itself. madvise(MADV_POPULATE_WRITE) (Linux 5.14)
// makes the same pages present in one system call: a 10 x 85 MiB fill took
// 1.8 s of CPU instead of 3.1 s on the project's VM (bench/performance-notes.md).
// Where the call is missing it fails and the pages fault in as before.
// Used by the client (curl_transport.cc, wire_codec.cc) and the mock
// (mock_server.cc). Header-only; thread-compatible.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace lizard::api::internal {

// Makes the whole pages within [data, data + size) present and writable.
inline void prefault(const char* data, std::size_t size) {
#ifdef MADV_POPULATE_WRITE
  constexpr std::uintptr_t kPage = 4096;
  const auto first = (reinterpret_cast<std::uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const auto last = (reinterpret_cast<std::uintptr_t>(data) + size) & ~(kPage - 1);
  if (last > first) {
    (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
  }
#else
  (void)data;
  (void)size;
#endif
}

// Appends to a string reserved for a large body (its announced length),
// making its pages present up to a MiB ahead of the data: memory still
// grows only as the data comes, so a peer that announces much and sends
// little costs little. Below 1 MiB of capacity it only appends.
class PrefaultingAppender {
 public:
  explicit PrefaultingAppender(std::string& out) : out_(out) {}

  void append(const char* data, std::size_t n) {
    const std::size_t end = out_.size() + n;
    if (end <= out_.capacity() && out_.capacity() >= kAhead) {
      if (out_.data() != base_) {  // reserved (again) since the last call
        base_ = out_.data();
        present_ = out_.size();
      }
      if (end > present_) {
        const std::size_t to = std::min(out_.capacity(), std::max(end, present_ + kAhead));
        prefault(base_ + present_, to - present_);
        present_ = to;
      }
    }
    out_.append(data, n);
  }

 private:
  static constexpr std::size_t kAhead = std::size_t{1} << 20;
  std::string& out_;
  const char* base_ = nullptr;
  std::size_t present_ = 0;
};

}  // namespace lizard::api::internal
