#include "lizard/conformance/runner.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "lizard/conformance/suite.h"
#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance {

namespace {

using Clock = std::chrono::steady_clock;

bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

struct Slot {
  const RuleInfo* rule = nullptr;
  Clock::time_point start;
  bool done = false;
  RuleResult result;
};

struct Shared {
  std::mutex mutex;
  std::condition_variable cv;
};

RuleResult classify(const RuleInfo& rule, const testing::TestPartResultArray& parts,
                    double seconds) {
  RuleResult result;
  result.id = std::string(rule.id);
  result.seconds = seconds;
  std::string first_failure;
  std::string skip;
  int failures = 0;
  for (int i = 0; i < parts.size(); ++i) {
    const testing::TestPartResult& part = parts.GetTestPartResult(i);
    if (part.failed()) {
      ++failures;
      if (first_failure.empty()) {
        std::string where;
        if (part.file_name() != nullptr) {
          std::string file = part.file_name();
          where = file.substr(file.find_last_of('/') + 1) + ":" +
                  std::to_string(part.line_number()) + ": ";
        }
        first_failure = where + part.message();
      }
    } else if (part.skipped() && skip.empty()) {
      skip = part.message();
    }
  }
  if (failures > 0) {
    result.status = Status::kFail;
    result.reason = internal::one_line(first_failure, 400);
    if (failures > 1) result.reason += " (+" + std::to_string(failures - 1) + " more)";
  } else if (!skip.empty() || parts.size() > 0) {
    bool any_skip = false;
    for (int i = 0; i < parts.size(); ++i) any_skip |= parts.GetTestPartResult(i).skipped();
    result.status = any_skip ? Status::kSkip : Status::kPass;
    result.reason = any_skip ? internal::one_line(skip, 400) : "";
  }
  return result;
}

void print_line(std::ostream* out, std::size_t index, std::size_t total, const RuleResult& r) {
  if (out == nullptr) return;
  std::ostringstream line;
  line << "[" << std::setw(2) << index << "/" << total << "] " << status_name(r.status) << "  "
       << std::left << std::setw(38) << r.id << std::right << std::fixed << std::setprecision(2)
       << std::setw(7) << r.seconds << "s";
  if (!r.reason.empty()) line << "  " << r.reason;
  *out << line.str() << std::endl;
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c < 0x20 && c != '\n' && c != '\t' ? '?' : static_cast<char>(c);
    }
  }
  return out;
}

std::string md_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\";
    out += c;
  }
  return out;
}

std::string fixed(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::kPass:
      return "PASS";
    case Status::kFail:
      return "FAIL";
    case Status::kSkip:
      return "SKIP";
  }
  return "?";
}

int RunReport::count(Status status) const {
  return static_cast<int>(std::count_if(rules.begin(), rules.end(),
                                        [&](const RuleResult& r) { return r.status == status; }));
}

double RunReport::rule_seconds_sum() const {
  double sum = 0;
  for (const auto& r : rules) sum += r.seconds;
  return sum;
}

double RunReport::unavoidable_wait_seconds() const {
  double sum = 0;
  for (const auto& r : rules) sum += r.wait_seconds;
  return sum;
}

const RuleResult* RunReport::find(std::string_view id) const {
  for (const auto& r : rules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

bool filter_matches(std::string_view filter, std::string_view id) {
  if (filter.empty()) return true;
  bool any_positive = false;
  bool included = false;
  std::size_t start = 0;
  while (start <= filter.size()) {
    std::size_t end = filter.find_first_of(":,", start);
    if (end == std::string_view::npos) end = filter.size();
    std::string_view pattern = filter.substr(start, end - start);
    if (!pattern.empty()) {
      if (pattern.front() == '-') {
        if (glob_match(pattern.substr(1), id)) return false;
      } else {
        any_positive = true;
        if (glob_match(pattern, id)) included = true;
      }
    }
    start = end + 1;
  }
  return !any_positive || included;
}

RunReport run_rules(BackendFactory& factory, const RunnerOptions& options) {
  internal::host_canary();
  RunReport report;
  report.suite_version = kSuiteVersion;
  report.backend = factory.name();
  std::deque<const RuleInfo*> pending;
  for (const RuleInfo& rule : all_rules()) {
    if (filter_matches(options.filter, rule.id)) pending.push_back(&rule);
  }
  const std::size_t total = pending.size();
  std::map<std::string_view, RuleResult> results;
  auto shared = std::make_shared<Shared>();
  std::vector<std::shared_ptr<Slot>> active;
  const int jobs = std::max(1, options.jobs);
  const auto run_start = Clock::now();
  std::size_t finished = 0;
  std::unique_lock<std::mutex> lock(shared->mutex);
  while (!pending.empty() || !active.empty()) {
    while (!pending.empty() && static_cast<int>(active.size()) < jobs) {
      auto slot = std::make_shared<Slot>();
      slot->rule = pending.front();
      slot->start = Clock::now();
      pending.pop_front();
      active.push_back(slot);
      BackendFactory* f = &factory;
      std::thread([slot, shared, f] {
        testing::TestPartResultArray parts;
        std::atomic<double> waits{0};
        {
          testing::ScopedFakeTestPartResultReporter reporter(
              testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &parts);
          internal::WaitSinkScope wait_scope(&waits);
          execute_rule(*f, *slot->rule, false);
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - slot->start).count();
        RuleResult result = classify(*slot->rule, parts, seconds);
        result.wait_seconds = waits.load();
        std::lock_guard<std::mutex> guard(shared->mutex);
        slot->result = std::move(result);
        slot->done = true;
        shared->cv.notify_all();
      }).detach();
    }
    auto earliest = Clock::time_point::max();
    for (const auto& slot : active)
      earliest = std::min(earliest, slot->start + options.rule_deadline);
    shared->cv.wait_until(lock, earliest, [&] {
      return std::any_of(active.begin(), active.end(), [](const auto& s) { return s->done; });
    });
    const auto now = Clock::now();
    for (auto it = active.begin(); it != active.end();) {
      auto& slot = *it;
      RuleResult result;
      if (slot->done) {
        result = slot->result;
      } else if (now >= slot->start + options.rule_deadline) {
        result.id = std::string(slot->rule->id);
        result.status = Status::kFail;
        result.seconds = std::chrono::duration<double>(now - slot->start).count();
        result.reason = "did not finish within " + std::to_string(options.rule_deadline.count()) +
                        " s (abandoned)";
      } else {
        ++it;
        continue;
      }
      ++finished;
      print_line(options.out, finished, total, result);
      results[slot->rule->id] = result;
      it = active.erase(it);
    }
  }
  lock.unlock();
  report.wall_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  report.jobs = jobs;
  for (const RuleInfo& rule : all_rules()) {
    auto it = results.find(rule.id);
    if (it != results.end()) report.rules.push_back(it->second);
  }
  report.notes = factory.report_notes();
  return report;
}

void write_summary_table(const RunReport& report, std::ostream& out) {
  out << "\nConformance of " << report.backend << " (suite " << report.suite_version << ")\n\n";
  out << std::left << std::setw(40) << "rule" << std::setw(6) << "result" << std::right
      << std::setw(9) << "seconds"
      << "  reason\n";
  out << std::string(100, '-') << "\n";
  for (const auto& r : report.rules) {
    out << std::left << std::setw(40) << r.id << std::setw(6) << status_name(r.status) << std::right
        << std::setw(9) << fixed(r.seconds, 2) << "  " << internal::one_line(r.reason, 120) << "\n";
  }
  out << std::string(100, '-') << "\n";
  out << report.count(Status::kPass) << " pass, " << report.count(Status::kFail) << " fail, "
      << report.count(Status::kSkip) << " skip, " << report.rules.size() << " rules in "
      << fixed(report.wall_seconds, 1) << " s\n";
  for (const auto& note : report.notes) out << note << "\n";
}

void write_markdown(const RunReport& report, std::ostream& out) {
  out << "# Conformance report: " << md_escape(report.backend) << "\n\n";
  out << "Suite " << report.suite_version << ". " << report.count(Status::kPass) << " pass, "
      << report.count(Status::kFail) << " fail, " << report.count(Status::kSkip) << " skip; "
      << fixed(report.wall_seconds, 1) << " s.\n\n";
  out << "| rule | result | seconds | reason |\n|---|---|---:|---|\n";
  for (const auto& r : report.rules) {
    out << "| `" << r.id << "` | " << status_name(r.status) << " | " << fixed(r.seconds, 2) << " | "
        << md_escape(r.reason) << " |\n";
  }
  if (!report.notes.empty()) {
    out << "\n";
    for (const auto& note : report.notes) out << "- " << md_escape(note) << "\n";
  }
}

void write_json(const RunReport& report, std::ostream& out) {
  out << "{\n  \"suite_version\": \"" << json_escape(report.suite_version) << "\",\n";
  out << "  \"backend\": \"" << json_escape(report.backend) << "\",\n";
  out << "  \"wall_seconds\": " << fixed(report.wall_seconds, 3) << ",\n";
  out << "  \"jobs\": " << report.jobs << ",\n";
  out << "  \"rule_seconds_sum\": " << fixed(report.rule_seconds_sum(), 3) << ",\n";
  out << "  \"unavoidable_wait_seconds\": " << fixed(report.unavoidable_wait_seconds(), 3) << ",\n";
  out << "  \"rules\": [\n";
  for (std::size_t i = 0; i < report.rules.size(); ++i) {
    const auto& r = report.rules[i];
    out << "    {\"id\": \"" << json_escape(r.id) << "\", \"status\": \"" << status_name(r.status)
        << "\", \"seconds\": " << fixed(r.seconds, 3)
        << ", \"wait_seconds\": " << fixed(r.wait_seconds, 3) << ", \"reason\": \""
        << json_escape(r.reason) << "\"}" << (i + 1 < report.rules.size() ? "," : "") << "\n";
  }
  out << "  ],\n";
  out << "  \"summary\": {\"pass\": " << report.count(Status::kPass)
      << ", \"fail\": " << report.count(Status::kFail)
      << ", \"skip\": " << report.count(Status::kSkip) << "},\n";
  out << "  \"notes\": [";
  for (std::size_t i = 0; i < report.notes.size(); ++i) {
    out << (i ? ", " : "") << "\"" << json_escape(report.notes[i]) << "\"";
  }
  out << "]\n}\n";
}

void write_junit(const RunReport& report, std::ostream& out) {
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites tests=\"" << report.rules.size() << "\" failures=\""
      << report.count(Status::kFail) << "\" skipped=\"" << report.count(Status::kSkip)
      << "\" time=\"" << fixed(report.wall_seconds, 3) << "\">\n";
  out << "  <testsuite name=\"conformance." << xml_escape(report.backend) << "\" tests=\""
      << report.rules.size() << "\" failures=\"" << report.count(Status::kFail) << "\" skipped=\""
      << report.count(Status::kSkip) << "\" time=\"" << fixed(report.wall_seconds, 3) << "\">\n";
  for (const auto& r : report.rules) {
    out << "    <testcase classname=\"conformance\" name=\"" << xml_escape(r.id) << "\" time=\""
        << fixed(r.seconds, 3) << "\">";
    if (r.status == Status::kFail) {
      out << "<failure message=\"" << xml_escape(r.reason) << "\"/>";
    } else if (r.status == Status::kSkip) {
      out << "<skipped message=\"" << xml_escape(r.reason) << "\"/>";
    }
    out << "<properties><property name=\"rule\" value=\"" << xml_escape(r.id)
        << "\"/></properties></testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

int run_conformance(BackendFactory& factory, const RunnerOptions& options) {
  try {
    factory.preflight();
  } catch (const std::exception& e) {
    std::cerr << "lizard-conformance: cannot run the suite against " << factory.name() << ": "
              << e.what() << "\n";
    return 2;
  }
  if (options.out) {
    *options.out << "lizard-conformance " << kSuiteVersion << " against " << factory.name() << ", "
                 << options.jobs << " jobs" << std::endl;
  }
  const RunReport report = run_rules(factory, options);
  if (options.out) write_summary_table(report, *options.out);
  int status = report.count(Status::kFail) > 0 ? 1 : 0;
  auto write = [&](const std::string& path, void (*writer)(const RunReport&, std::ostream&)) {
    if (path.empty()) return;
    std::ofstream file(path);
    if (file) writer(report, file);
    if (!file) {
      std::cerr << "lizard-conformance: cannot write " << path << "\n";
      status = 2;
    }
  };
  write(options.report_md, write_markdown);
  write(options.report_json, write_json);
  write(options.junit, write_junit);
  return status;
}

}  // namespace lizard::conformance
