#include "sweep.h"

#include "lizard/workspace/lizard_sandbox_backend.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace lizard::sweep {

namespace {

// `count` decimal digits of `text` from `at` into `out`; false when any is
// not a digit.
bool digits(const std::string& text, std::size_t at, int count, int& out) {
  if (at + count > text.size()) return false;
  out = 0;
  for (int i = 0; i < count; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> parse_time(const std::string& text) {
  // YYYY-MM-DDTHH:MM:SS, each separator exactly where RFC 3339 puts it.
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, 0, 4, year) || text.size() < 19 || text[4] != '-' ||
      !digits(text, 5, 2, month) || text[7] != '-' || !digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !digits(text, 11, 2, hour) || text[13] != ':' ||
      !digits(text, 14, 2, minute) || text[16] != ':' || !digits(text, 17, 2, second)) {
    return std::nullopt;
  }
  std::size_t at = 19;
  int millis = 0;
  if (at < text.size() && text[at] == '.') {
    int count = 0;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, ++count) {
      if (count < 3) millis = millis * 10 + (text[at] - '0');
    }
    if (count == 0) return std::nullopt;
    for (; count < 3; ++count) millis *= 10;
  }
  // The offset: Z, or +HH:MM / -HH:MM (the local time is that far ahead of UTC).
  int offset_minutes = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    int oh = 0, om = 0;
    if (!digits(text, at + 1, 2, oh) || at + 3 >= text.size() || text[at + 3] != ':' ||
        !digits(text, at + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = (text[at] == '+' ? 1 : -1) * (oh * 60 + om);
    at += 6;
  } else {
    return std::nullopt;  // no offset: local time of an unknown zone
  }
  if (at != text.size()) return std::nullopt;
  // Years a time_point of nanoseconds holds without overflow, with margin
  // (libstdc++'s system_clock spans 1678 to 2262).
  if (year < 1970 || year > 2200 || month < 1 || month > 12 || day < 1 || hour > 23 ||
      minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = std::min(second, 59);  // a leap second counts as the one before it
  const std::time_t secs = ::timegm(&tm);
  // timegm normalises 31 February into March: such a date is malformed.
  if (secs == static_cast<std::time_t>(-1) || tm.tm_mday != day || tm.tm_mon != month - 1) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(secs) + std::chrono::milliseconds(millis) -
         std::chrono::minutes(offset_minutes);
}

namespace {

constexpr int kAttempts = 4;

// `call`, again after a transient failure (429, 5xx, a connection lost):
// up to kAttempts in all, after the Retry-After the server asked for (at
// most 10 s) or 1, 2 and 4 s. Only for what may be repeated: reading a file,
// deleting a sandbox (a delete that went through answers 404 the next time).
template <typename Call>
auto with_retries(Call&& call) -> decltype(call()) {
  for (int attempt = 1;; ++attempt) {
    try {
      return call();
    } catch (const workspace::WorkspaceTransientError& e) {
      if (attempt == kAttempts) throw;
      auto pause = std::chrono::seconds(1 << (attempt - 1));
      if (e.retry_after()) pause = std::min(*e.retry_after(), std::chrono::seconds(10));
      std::this_thread::sleep_for(pause);
    }
  }
}

// What a sandbox's tags say, or why they could not be read.
struct Tags {
  std::map<std::string, std::string> values;
  std::string unreadable;  // non-empty: the reason; the sandbox is left alone and reported
};

// The sandbox's tags: its metadata when it has any (a platform that keeps
// metadata, so a file inside cannot make an untagged sandbox tagged), else
// the tags file the backend writes inside it. Absent (404): no tags. Any
// other failure, after retries: unreadable.
Tags tags_of(api::Client& client, const api::SandboxInfo& info) {
  Tags tags;
  if (!info.metadata.empty()) {
    tags.values = info.metadata;
    return tags;
  }
  std::string text;
  try {
    text = with_retries([&] {
      return client.read_file(info.sandbox_id, workspace::kTagsFile, {.max_answer_bytes = 65536});
    });
  } catch (const api::NotFoundError&) {
    return tags;
  } catch (const std::exception& e) {
    tags.unreadable = e.what();
    return tags;
  }
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const auto eq = line.find('=');
    if (eq != std::string::npos && eq > 0) tags.values[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  return tags;
}

std::string tag(const std::map<std::string, std::string>& tags, const char* key) {
  auto it = tags.find(key);
  return it == tags.end() ? "" : it->second;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  static constexpr const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

namespace {

void describe(std::ostream* log, const char* verb, const SweptSandbox& s, const std::string& why) {
  if (log == nullptr) return;
  *log << verb << " " << printable(s.id) << " (";
  if (!s.run.empty()) *log << "run " << printable(s.run) << ", ";
  if (!s.rule.empty()) *log << "rule " << printable(s.rule) << ", ";
  if (s.age) *log << "age " << s.age->count() << " min";
  if (s.age && !why.empty()) *log << ", ";
  *log << why << ")\n";
}

}  // namespace

SweepResult sweep(const SweepOptions& options, std::ostream* log) {
  api::Client client(options.client);
  std::optional<std::string> project;
  if (!options.client.project.empty()) project = client.resolve_project(options.client.project);
  SweepResult result;
  for (const auto& info : client.list_sandboxes(project)) {
    SweptSandbox s;
    s.id = info.sandbox_id;
    Tags tags;
    try {
      tags = tags_of(client, info);
    } catch (const std::invalid_argument& e) {
      tags.unreadable = e.what();  // an ID that names no sandbox route
    }
    if (!tags.unreadable.empty()) {
      result.unchecked.push_back(s);
      describe(log, "COULD NOT CHECK", s, "its tags: " + printable(tags.unreadable, 400));
      continue;
    }
    s.run = tag(tags.values, kRunTag);
    s.rule = tag(tags.values, "lizard-conformance-rule");
    if (s.run.empty()) {
      ++result.untagged;
      continue;
    }
    if (!options.run_id.empty() && s.run != options.run_id) {
      ++result.other_runs;
      continue;
    }
    const auto started = parse_time(info.started_at);
    if (!started) {
      // Without a start time its age is unknown: keep it rather than guess.
      result.kept_young.push_back(s);
      describe(log, "kept", s, "start time unknown: '" + printable(info.started_at) + "'");
      continue;
    }
    s.age = std::chrono::floor<std::chrono::minutes>(options.now - *started);
    if (options.now - *started < options.older_than) {
      result.kept_young.push_back(s);
      describe(log, "kept", s,
               "younger than " + std::to_string(options.older_than.count()) + " min");
      continue;
    }
    if (options.dry_run) {
      result.deleted.push_back(s);
      describe(log, "would delete", s, "dry run");
      continue;
    }
    try {
      const bool existed = with_retries([&] { return client.kill_sandbox(s.id); });
      result.deleted.push_back(s);
      describe(log, "deleted", s, existed ? "" : "already gone");
    } catch (const std::exception& e) {
      result.failed.push_back(s);
      describe(log, "FAILED to delete", s, printable(e.what(), 400));
    }
  }
  if (log != nullptr) {
    *log << (options.dry_run ? "would delete " : "deleted ") << result.deleted.size() << ", kept "
         << result.kept_young.size() << " younger, failed " << result.failed.size()
         << ", could not check " << result.unchecked.size() << ", left " << result.untagged
         << " untagged";
    if (!options.run_id.empty()) *log << " and " << result.other_runs << " of other runs";
    *log << "\n";
  }
  return result;
}

}  // namespace lizard::sweep
