#include "faults.h"

#include <httplib.h>

#include <algorithm>
#include <memory>

namespace lizard::mock::internal {

bool glob_match(std::string_view pat, std::string_view s) {
  if (pat.empty()) return s.empty();
  if (pat.substr(0, 2) == "**") {
    std::string_view rest = pat.substr(2);
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (glob_match(rest, s.substr(i))) return true;
    }
    return false;
  }
  if (pat[0] == '*') {
    std::string_view rest = pat.substr(1);
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (glob_match(rest, s.substr(i))) return true;
      if (i < s.size() && s[i] == '/') break;
    }
    return false;
  }
  return !s.empty() && pat[0] == s[0] && glob_match(pat.substr(1), s.substr(1));
}

void FaultTable::add(const FaultRule& rule) {
  std::lock_guard lock(mu_);
  entries_.push_back(Entry{rule, rule.times, std::mt19937_64(rule.seed)});
}

void FaultTable::clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
}

std::optional<FaultRule> FaultTable::match(const std::string& method, const std::string& path) {
  std::lock_guard lock(mu_);
  for (auto& f : entries_) {
    if (!f.rule.method.empty() && f.rule.method != "*" && f.rule.method != method) continue;
    if (!glob_match(f.rule.path_pattern, path)) continue;
    if (f.remaining == 0) continue;
    if (f.rule.probability < 1.0 && f.dist(f.rng) >= f.rule.probability) continue;
    if (f.remaining > 0) --f.remaining;
    return f.rule;
  }
  return std::nullopt;
}

bool FaultTable::may_match(const std::string& method, const std::string& path) {
  std::lock_guard lock(mu_);
  for (const auto& f : entries_) {
    if (!f.rule.method.empty() && f.rule.method != "*" && f.rule.method != method) continue;
    if (glob_match(f.rule.path_pattern, path) && f.remaining != 0) return true;
  }
  return false;
}

void finish_streaming_silently(httplib::Response& res) {
  if (!res.content_provider_) return;
  httplib::DataSink sink;
  bool done = false;
  sink.write = [](const char*, std::size_t) { return true; };
  sink.is_writable = [] { return true; };
  sink.done = [&done] { done = true; };
  std::size_t offset = 0;
  while (!done && res.content_provider_(offset, 0, sink)) {
  }
  res.content_provider_ = nullptr;
}

void truncate_response(httplib::Response& res, std::size_t at) {
  if (res.content_provider_) {
    // A stream: pass its first `at` bytes, then break the connection.
    auto inner = res.content_provider_;
    auto sent = std::make_shared<std::size_t>(0);
    res.content_provider_ = [inner, sent, at](std::size_t offset, std::size_t length,
                                              httplib::DataSink& outer) {
      httplib::DataSink proxy;
      bool cut = false;
      proxy.write = [&](const char* d, std::size_t n) {
        std::size_t room = at > *sent ? at - *sent : 0;
        std::size_t take = std::min(room, n);
        if (take > 0 && !outer.write(d, take)) return false;
        *sent += take;
        if (take < n) cut = true;
        return !cut;
      };
      proxy.is_writable = [&] { return !cut && outer.is_writable(); };
      proxy.done = [&] { cut = true; };
      inner(offset, length, proxy);
      return false;
    };
    return;
  }
  auto full = std::make_shared<std::string>(std::move(res.body));
  res.body.clear();
  std::string type = res.get_header_value("Content-Type");
  if (type.empty()) type = "application/json";
  res.set_content_provider(
      full->size(), type, [full, at](std::size_t offset, std::size_t, httplib::DataSink& sink) {
        if (offset < at) {
          sink.write(full->data() + offset, std::min(at, full->size()) - offset);
        }
        return false;
      });
}

}  // namespace lizard::mock::internal
