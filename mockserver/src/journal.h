// The request journal of GET /_mock/requests: every /api request once it is
// answered, bounded so that a client cannot grow it without limit.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/mock/mock_server.h"

namespace lizard::mock::internal {

struct JournalLimits {
  std::size_t max_entries = 10000;           // the oldest go first
  std::size_t max_body_bytes = 1024 * 1024;  // per entry; longer bodies are cut, with a marker
  std::size_t max_total_bytes = 64u << 20;   // bodies together; the oldest go first
};

class Journal {
 public:
  explicit Journal(JournalLimits limits = JournalLimits()) : limits_(limits) {}

  // `body` as an entry keeps it: cut to the per-entry limit, with a marker
  // saying how long it was. Only what is kept is copied (a write's body can
  // be 256 MiB). Taken before a route parses the body in place.
  std::string keep(std::string_view body) const;
  // Keeps `entry`, whose body keep() made.
  void record(JournalEntry entry);
  std::vector<JournalEntry> entries() const;
  void clear();
  // Entries dropped to stay within the limits since the last clear().
  std::uint64_t dropped() const;

 private:
  JournalLimits limits_;
  mutable std::mutex mu_;
  std::deque<JournalEntry> entries_;
  std::size_t total_bytes_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace lizard::mock::internal
