// A scripted lizard::api::HttpTransport for socket-free client tests: it
// hands out the answers and failures queued with answer()/fail(), in order,
// and records every request the client sent. A 2xx answer to a streaming
// request goes to its on_answer_chunk in small chunks, as a network would
// deliver it. Thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lizard/api/transport.h"

namespace lizard::api::scripted {

// The API key the client tests give their clients (and look for in what
// must not hold it).
inline constexpr const char* kSecret = "liz_secret_key_123";

// A request as the transport saw it (copied: the client's views end with send()).
struct SentRequest {
  std::string method;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{0};
  bool stoppable = false;
  bool fresh_connection = false;
  std::uint64_t max_answer_bytes = 0;
  bool streaming = false;

  // The value of header `name` (case-insensitive); nullopt when absent.
  std::optional<std::string> header(std::string_view name) const {
    const auto same = [&](const std::string& candidate) {
      return std::equal(candidate.begin(), candidate.end(), name.begin(), name.end(),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) ==
                                 std::tolower(static_cast<unsigned char>(b));
                        });
    };
    for (const auto& [key, value] : headers) {
      if (same(key)) return value;
    }
    return std::nullopt;
  }
};

class ScriptedTransport : public HttpTransport {
 public:
  // Queues an HTTP answer.
  ScriptedTransport& answer(long status, std::string body,
                            std::map<std::string, std::string> headers = {}) {
    TransportOutcome outcome;
    outcome.status = status;
    outcome.body = std::move(body);
    outcome.headers = std::move(headers);
    outcome.request_sent = true;
    return queue(std::move(outcome));
  }

  // Queues a failure without an answer (`request_sent`: whether the request went out).
  ScriptedTransport& fail(TransportFailure failure, bool request_sent,
                          std::string detail = "scripted failure") {
    TransportOutcome outcome;
    outcome.failure = failure;
    outcome.request_sent = request_sent;
    outcome.detail = std::move(detail);
    if (failure == TransportFailure::kAnswerTooLarge) outcome.answer_limit = 4096;
    return queue(std::move(outcome));
  }

  TransportOutcome send(const HttpRequest& request) override {
    std::lock_guard lock(mutex_);
    sent_.push_back(SentRequest{request.method, request.url, request.headers,
                                std::string(request.body), request.timeout,
                                request.stop.stop_possible(), request.fresh_connection,
                                request.max_answer_bytes, bool(request.on_answer_chunk)});
    if (script_.empty()) {
      ADD_FAILURE() << "no scripted answer for " << request.method << " " << request.url;
      TransportOutcome none;
      none.failure = TransportFailure::kOther;
      none.detail = "no scripted answer";
      return none;
    }
    TransportOutcome outcome = std::move(script_.front());
    script_.pop_front();
    const bool answered_2xx =
        outcome.failure == TransportFailure::kNone && outcome.status >= 200 && outcome.status < 300;
    if (request.on_answer_chunk && answered_2xx) {
      constexpr std::size_t kChunk = 7;  // events split anywhere
      for (std::size_t at = 0; at < outcome.body.size(); at += kChunk) {
        request.on_answer_chunk(std::string_view(outcome.body).substr(at, kChunk));
      }
      outcome.body.clear();
    }
    return outcome;
  }

  std::vector<SentRequest> sent() const {
    std::lock_guard lock(mutex_);
    return sent_;
  }
  SentRequest last() const {
    std::lock_guard lock(mutex_);
    if (sent_.empty()) throw std::logic_error("nothing was sent");
    return sent_.back();
  }
  std::size_t unused() const {
    std::lock_guard lock(mutex_);
    return script_.size();
  }

 private:
  ScriptedTransport& queue(TransportOutcome outcome) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(outcome));
    return *this;
  }

  mutable std::mutex mutex_;
  std::deque<TransportOutcome> script_;
  std::vector<SentRequest> sent_;
};

}  // namespace lizard::api::scripted
