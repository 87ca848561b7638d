// Injected faults (POST /_mock/faults, MockServer::add_fault): the rules,
// their matching, and what an action does to an answer.
//
// Thread safety: FaultTable may be used from any thread.
#pragma once

#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/mock/mock_server.h"

namespace httplib {
struct Response;
}

namespace lizard::mock::internal {

// '*' matches within one path segment, '**' across segments.
bool glob_match(std::string_view pattern, std::string_view path);

class FaultTable {
 public:
  void add(const FaultRule& rule);
  void clear();
  // The first rule that matches, has matches left and wins its draw (a
  // match whose draw fails does not count towards `times`).
  std::optional<FaultRule> match(const std::string& method, const std::string& path);
  // True when a rule with matches left could match (draws not made,
  // nothing counted).
  bool may_match(const std::string& method, const std::string& path);

 private:
  struct Entry {
    FaultRule rule;
    int remaining;
    std::mt19937_64 rng;
    std::uniform_real_distribution<double> dist{0.0, 1.0};
  };
  std::mutex mu_;
  std::vector<Entry> entries_;
};

// kCloseAfterHandling: runs a streamed answer to its end into nothing.
void finish_streaming_silently(httplib::Response& res);
// kTruncate: the answer keeps its real length but sends only `at` bytes.
void truncate_response(httplib::Response& res, std::size_t at);

}  // namespace lizard::mock::internal
