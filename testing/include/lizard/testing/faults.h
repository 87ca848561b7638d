// Builders of the embedded mock's fault rules, so a test says what fails:
//
//   server_.add_fault(fault::respond("POST", "/api/sandboxes", 503).times(1));
//   server_.add_fault(fault::close("POST", "/api/sandboxes/*/exec"));
//
// A Builder converts to lizard::mock::FaultRule. Paths are the mock's globs
// ('*' within one segment, '**' across segments). respond() answers a
// status, close() hangs up unanswered, close_after_handling() hangs up after
// the route ran, delay() waits first, truncate() cuts the answer's body;
// .times(n), .probability(p, seed) and .body(text, type) refine any of them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "lizard/mock/mock_server.h"

namespace lizard::testing::fault {

class Builder {
 public:
  using Action = mock::FaultRule::Action;
  Builder(std::string method, std::string path_pattern, Action action) {
    rule_.method = std::move(method);
    rule_.path_pattern = std::move(path_pattern);
    rule_.action = action;
  }
  // Only the next `n` matching requests (default: every one).
  Builder& times(int n) {
    rule_.times = n;
    return *this;
  }
  // Each match fails with this probability, from a generator seeded with `seed`.
  Builder& probability(double p, std::uint64_t seed = 1) {
    rule_.probability = p;
    rule_.seed = seed;
    return *this;
  }
  // The answer of respond().
  Builder& body(std::string body, std::string content_type = "application/json") {
    rule_.body = std::move(body);
    rule_.content_type = std::move(content_type);
    return *this;
  }
  const mock::FaultRule& rule() const { return rule_; }
  // NOLINTNEXTLINE(google-explicit-constructor): a builder stands where a rule is expected.
  operator mock::FaultRule() const& { return rule_; }
  // From a builder that ends here, the rule (and a large body) is moved out.
  operator mock::FaultRule() && { return std::move(rule_); }  // NOLINT(google-explicit-constructor)

 private:
  friend Builder respond(std::string, std::string, int);
  friend Builder delay(std::string, std::string, std::chrono::milliseconds);
  friend Builder truncate(std::string, std::string, std::size_t);
  mock::FaultRule rule_;
};

// Answers `status` (body {"error":"injected fault"} unless set) without running the route.
inline Builder respond(std::string method, std::string path, int status) {
  Builder b(std::move(method), std::move(path), Builder::Action::kRespond);
  b.rule_.status = status;
  return b;
}

// Closes the connection without an answer; the route does not run.
inline Builder close(std::string method, std::string path) {
  return {std::move(method), std::move(path), Builder::Action::kClose};
}

// Runs the route (its side effects happen), then closes without an answer.
inline Builder close_after_handling(std::string method, std::string path) {
  return {std::move(method), std::move(path), Builder::Action::kCloseAfterHandling};
}

// Waits `by`, then handles the request normally.
inline Builder delay(std::string method, std::string path, std::chrono::milliseconds by) {
  Builder b(std::move(method), std::move(path), Builder::Action::kDelay);
  b.rule_.delay = by;
  return b;
}

// Handles the request, then sends only the first `at` bytes of the body.
inline Builder truncate(std::string method, std::string path, std::size_t at) {
  Builder b(std::move(method), std::move(path), Builder::Action::kTruncate);
  b.rule_.truncate_at = at;
  return b;
}

}  // namespace lizard::testing::fault
