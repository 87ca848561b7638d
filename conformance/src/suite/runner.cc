// The parallel runner: selects the rules (filter, shard), runs each on a
// worker thread with its assertions captured, applies expectations as
// results arrive, and writes the reports.
#include "lizard/conformance/runner.h"

#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "lizard/conformance/expectations.h"
#include "lizard/conformance/suite.h"
#include "report_text.h"
#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance {

namespace internal {

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

}  // namespace internal

namespace {

using Clock = std::chrono::steady_clock;
using internal::glob_match;

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
  if (r.expected && r.verdict() != Verdict::kAsExpected) {
    line << "  " << verdict_name(r.verdict());
    if (r.status == Status::kPass) line << " (expected " << status_name(*r.expected) << ")";
  } else if (r.expected && r.status != Status::kPass) {
    line << "  (expected)";
  }
  if (!r.reason.empty()) line << "  " << r.reason;
  *out << line.str() << std::endl;
}

// A result decided without running the rule (a SKIP for another profile, a
// FAIL once the budget is spent).
RuleResult decided(const RuleInfo& rule, Status status, std::string reason) {
  RuleResult result;
  result.id = std::string(rule.id);
  result.status = status;
  result.reason = std::move(reason);
  return result;
}

// What the runner can decide before opening a session, or nullopt: a rule
// of another profile SKIPs (the reason execute_rule would give), and once the
// factory's budget is spent every rule not yet started FAILs.
std::optional<RuleResult> decide_without_session(BackendFactory& factory, const RuleInfo& rule) {
  if (!rule.profile.empty() && factory.profile() != rule.profile) {
    return decided(rule, Status::kSkip,
                   "a rule of the '" + std::string(rule.profile) +
                       "' profile; this backend's profile is '" + factory.profile() + "'");
  }
  std::string budget = factory.exhausted_budget();
  if (!budget.empty()) return decided(rule, Status::kFail, std::move(budget));
  return std::nullopt;
}

// Starts the rule of `slot` on a detached thread that reports into it.
void start_rule(BackendFactory& factory, const std::shared_ptr<Slot>& slot,
                const std::shared_ptr<Shared>& shared) {
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

// One run's bookkeeping: the rules waiting and running, and the results.
class Scheduler {
 public:
  // Two lanes. The rules that wait by design (a timeout, a sleep: their
  // wait_seconds) start longest wait first, so that the long waits overlap
  // each other instead of ending the run; but while rules that do not wait
  // are left, waiting rules hold at most half the slots (rounded up), so
  // that the CPUs work through the busy rules during the waits. (All four
  // slots of --jobs 4 held by the four longest waits left the CPUs idle for
  // their 5 s.) The rules that do not wait start in table order.
  Scheduler(BackendFactory& factory, const RunnerOptions& options,
            std::vector<const RuleInfo*> rules)
      : factory_(factory),
        options_(options),
        total_(rules.size()),
        jobs_(std::max(1, options.jobs)),
        waiting_slots_((jobs_ + 1) / 2) {
    std::stable_sort(rules.begin(), rules.end(), [](const RuleInfo* a, const RuleInfo* b) {
      return a->wait_seconds > b->wait_seconds;
    });
    for (const RuleInfo* rule : rules) (waits(*rule) ? waiting_ : busy_).push_back(rule);
  }

  std::map<std::string_view, RuleResult> run() {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    while (!waiting_.empty() || !busy_.empty() || !active_.empty()) {
      fill();
      if (active_.empty()) continue;  // every rule left was decided without a session
      auto earliest = Clock::time_point::max();
      for (const auto& slot : active_) {
        earliest = std::min(earliest, slot->start + options_.rule_deadline);
      }
      shared_->cv.wait_until(lock, earliest, [&] {
        return std::any_of(active_.begin(), active_.end(), [](const auto& s) { return s->done; });
      });
      collect();
    }
    return std::move(results_);
  }

  int jobs() const { return jobs_; }

 private:
  static bool waits(const RuleInfo& rule) { return rule.wait_seconds > 0; }

  // Starts rules while slots are free; rules decided without a session end at once.
  void fill() {
    while ((!waiting_.empty() || !busy_.empty()) && static_cast<int>(active_.size()) < jobs_) {
      const auto waiting_now = std::count_if(active_.begin(), active_.end(),
                                             [](const auto& s) { return waits(*s->rule); });
      auto& lane =
          !waiting_.empty() && (busy_.empty() || waiting_now < waiting_slots_) ? waiting_ : busy_;
      const RuleInfo* rule = lane.front();
      lane.pop_front();
      if (auto result = decide_without_session(factory_, *rule)) {
        finish(*rule, std::move(*result));
        continue;
      }
      auto slot = std::make_shared<Slot>();
      slot->rule = rule;
      slot->start = Clock::now();
      active_.push_back(slot);
      start_rule(factory_, slot, shared_);
    }
  }

  // Takes the results of rules that ended or ran past their deadline.
  void collect() {
    const auto now = Clock::now();
    for (auto it = active_.begin(); it != active_.end();) {
      auto& slot = *it;
      RuleResult result;
      if (slot->done) {
        result = slot->result;
      } else if (now >= slot->start + options_.rule_deadline) {
        result = decided(*slot->rule, Status::kFail,
                         "did not finish within " + std::to_string(options_.rule_deadline.count()) +
                             " s (abandoned)");
        result.seconds = std::chrono::duration<double>(now - slot->start).count();
      } else {
        ++it;
        continue;
      }
      finish(*slot->rule, std::move(result));
      it = active_.erase(it);
    }
  }

  void finish(const RuleInfo& rule, RuleResult result) {
    if (options_.expectations != nullptr) options_.expectations->apply(result);
    print_line(options_.out, ++finished_, total_, result);
    results_[rule.id] = std::move(result);
  }

  BackendFactory& factory_;
  const RunnerOptions& options_;
  std::deque<const RuleInfo*> waiting_;  // rules with a wait, longest first
  std::deque<const RuleInfo*> busy_;     // the others, in table order
  std::size_t total_;
  int jobs_;
  long waiting_slots_;
  std::size_t finished_ = 0;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::vector<std::shared_ptr<Slot>> active_;
  std::map<std::string_view, RuleResult> results_;
};

// Can `path` be written? Opens it for appending (so an existing file keeps
// its content) and removes it again when this call created it.
std::string check_writable(const std::string& option, const std::string& path) {
  if (path.empty()) return "";
  struct stat st {};
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) return option + " " + path + ": is a directory";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return option + " " + path + ": " + std::strerror(errno);
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
  return "";
}

}  // namespace

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

std::vector<const RuleInfo*> select_rules(std::string_view filter, ShardSpec shard) {
  std::vector<const RuleInfo*> selected;
  int position = 0;
  const int count = std::max(1, shard.count);
  for (const RuleInfo& rule : all_rules()) {
    if (!filter_matches(filter, rule.id)) continue;
    if (position++ % count == shard.index) selected.push_back(&rule);
  }
  return selected;
}

RunReport run_rules(BackendFactory& factory, const RunnerOptions& options) {
  internal::host_canary();
  RunReport report;
  report.suite_version = kSuiteVersion;
  report.backend = factory.name();
  report.shard = options.shard;
  if (options.expectations != nullptr) {
    report.expectations =
        options.expectations->source().empty() ? "(given)" : options.expectations->source();
  }
  const auto run_start = Clock::now();
  Scheduler scheduler(factory, options, select_rules(options.filter, options.shard));
  auto results = scheduler.run();
  report.wall_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  report.jobs = scheduler.jobs();
  for (const RuleInfo& rule : all_rules()) {
    auto it = results.find(rule.id);
    if (it != results.end()) report.rules.push_back(it->second);
  }
  report.notes = factory.report_notes();
  return report;
}

std::vector<std::string> unwritable_outputs(const RunnerOptions& options) {
  std::vector<std::string> problems;
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--report-md", &options.report_md},
      {"--report-json", &options.report_json},
      {"--junit", &options.junit},
      {"--write-expectations", &options.write_expectations}};
  std::map<std::string, const char*> seen;  // a file's identity -> the option that names it
  for (const auto& [option, path] : outputs) {
    std::string problem = check_writable(option, *path);
    if (!problem.empty()) problems.push_back("cannot write " + problem);
    if (path->empty()) continue;
    // Two outputs on one file: the second would replace the first (by
    // device and inode when it exists, else by its absolute, normal path).
    struct stat st {};
    std::error_code ec;
    const std::string identity =
        ::stat(path->c_str(), &st) == 0
            ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)
            : std::filesystem::absolute(*path, ec).lexically_normal().string();
    const auto [it, fresh] = seen.emplace(identity, option);
    if (!fresh)
      problems.push_back(std::string(it->second) + " and " + option + " name one file, " + *path);
  }
  return problems;
}

void remove_earlier_reports(const RunnerOptions& options) {
  for (const std::string* path : {&options.report_md, &options.report_json, &options.junit}) {
    struct stat st {};
    if (!path->empty() && ::lstat(path->c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      ::unlink(path->c_str());
    }
  }
}

int run_conformance(BackendFactory& factory, const RunnerOptions& options) {
  std::ostream& err = options.err != nullptr ? *options.err : std::cerr;
  const auto problems = unwritable_outputs(options);
  for (const auto& p : problems) err << "lizard-conformance: " << p << " (nothing was run)\n";
  if (!problems.empty()) return 2;
  try {
    factory.preflight();
  } catch (const std::exception& e) {
    err << "lizard-conformance: cannot run the suite against " << factory.name() << ": " << e.what()
        << "\n";
    return 2;
  }
  remove_earlier_reports(options);
  if (options.out) {
    *options.out << "lizard-conformance " << kSuiteVersion << " against " << factory.name() << ", "
                 << options.jobs << " jobs";
    if (options.shard.sharded()) {
      *options.out << ", shard " << options.shard.index << " of " << options.shard.count;
    }
    *options.out << std::endl;
  }
  RunReport report = run_rules(factory, options);
  if (options.compare_with != nullptr) {
    compare_reports(report, *options.compare_with, options.compare_source);
  }
  if (options.out) {
    write_summary_table(report, *options.out);
    write_comparison(report, *options.out);
  }
  const int status = report.exit_status();
  return write_report_files(report, options, err) ? status : 2;
}

}  // namespace lizard::conformance
