#include "sweep.h"

#include "lizard/workspace/lizard_sandbox_backend.h"

#include <ctime>
#include <map>
#include <ostream>

namespace lizard::sweep {

std::optional<std::chrono::system_clock::time_point> parse_time(const std::string& text) {
  std::tm tm{};
  int millis = 0;
  char tail[8] = {0};
  const int fields =
      std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%7s", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, tail);
  if (fields < 6) return std::nullopt;
  std::string rest = fields == 7 ? tail : "";
  if (!rest.empty() && rest[0] == '.') {
    std::size_t i = 1;
    int digits = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      if (digits < 3) millis = millis * 10 + (rest[i] - '0');
      ++digits;
      ++i;
    }
    for (; digits < 3; ++digits) millis *= 10;
    rest = rest.substr(i);
  }
  if (rest != "Z" && !rest.empty()) return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t secs = ::timegm(&tm);
  if (secs == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(secs) + std::chrono::milliseconds(millis);
}

namespace {

// The sandbox's tags: its metadata when that holds the run tag, else the
// tags file inside it (absent or unreadable: none).
std::map<std::string, std::string> tags_of(api::Client& client, const api::SandboxInfo& info) {
  if (info.metadata.count(kRunTag)) return info.metadata;
  std::map<std::string, std::string> tags;
  std::string text;
  try {
    text = client.read_file(info.sandbox_id, workspace::kTagsFile, {.max_answer_bytes = 65536});
  } catch (const std::exception&) {
    return tags;
  }
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const auto eq = line.find('=');
    if (eq != std::string::npos && eq > 0) tags[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  return tags;
}

std::string tag(const std::map<std::string, std::string>& tags, const char* key) {
  auto it = tags.find(key);
  return it == tags.end() ? "" : it->second;
}

void describe(std::ostream* log, const char* verb, const SweptSandbox& s, const std::string& why) {
  if (log == nullptr) return;
  *log << verb << " " << s.id << " (run " << s.run;
  if (!s.rule.empty()) *log << ", rule " << s.rule;
  *log << ", age " << s.age.count() << " min" << (why.empty() ? "" : ", " + why) << ")\n";
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
    const auto tags = tags_of(client, info);
    s.run = tag(tags, kRunTag);
    s.rule = tag(tags, "lizard-conformance-rule");
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
      describe(log, "kept", s, "start time unknown: '" + info.started_at + "'");
      continue;
    }
    s.age = std::chrono::duration_cast<std::chrono::minutes>(options.now - *started);
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
      const bool existed = client.kill_sandbox(s.id);
      result.deleted.push_back(s);
      describe(log, "deleted", s, existed ? "" : "already gone");
    } catch (const std::exception& e) {
      result.failed.push_back(s);
      describe(log, "FAILED to delete", s, e.what());
    }
  }
  if (log != nullptr) {
    *log << (options.dry_run ? "would delete " : "deleted ") << result.deleted.size() << ", kept "
         << result.kept_young.size() << " younger, failed " << result.failed.size() << ", left "
         << result.untagged << " untagged";
    if (!options.run_id.empty()) *log << " and " << result.other_runs << " of other runs";
    *log << "\n";
  }
  return result;
}

}  // namespace lizard::sweep
