// What a rule body works with: its session, backends that are cleaned up
// when the rule ends, scratch directories, and calls guarded by a deadline so
// that a hanging backend fails the rule instead of hanging the suite.
//
// Rule bodies assert with GoogleTest macros on the rule's own thread only
// (the runner captures assertions per thread); helper threads hand their
// results back through futures. Fatal problems found by helpers are thrown as
// RuleAbort and reported as the rule's failure.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/platform_control.h"
#include "lizard/conformance/rules.h"
#include "lizard/workspace/backend.h"

namespace lizard::conformance::internal {

using workspace::Argv;
using workspace::Command;
using workspace::CommandResult;
using workspace::FileEntry;
using workspace::RunOptions;
using workspace::Seconds;
using workspace::Shell;

// A failure that ends the rule (thrown by helpers, caught by execute_rule).
class RuleAbort : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using BackendPtr = std::shared_ptr<WorkspaceBackend>;
using Clock = std::chrono::steady_clock;

// Runs `fn` on its own detached thread and waits at most `limit`. Returns
// true when it finished (rethrowing what it threw); false when it is still
// running (it is abandoned, keeping alive what it captured). `fn` must own
// (by value or shared_ptr) everything it writes: an abandoned call goes on
// after the caller has returned, so it must not capture the caller's locals
// or the RuleContext by reference. Thread-safe.
bool run_with_deadline(std::function<void()> fn, Seconds limit);

// Waits until `condition` holds, polling, at most `limit`. Returns whether it held.
bool wait_until(const std::function<bool()>& condition, Seconds limit,
                std::chrono::milliseconds poll = std::chrono::milliseconds(50));

// While alive, RuleContexts made on this thread add their note_wait() to
// `sink` (the runner uses one per rule). Nests; not shared across threads.
class WaitSinkScope {
 public:
  explicit WaitSinkScope(std::atomic<double>* sink);
  ~WaitSinkScope();
  WaitSinkScope(const WaitSinkScope&) = delete;
  WaitSinkScope& operator=(const WaitSinkScope&) = delete;

 private:
  std::atomic<double>* previous_;
};

// A random lowercase hex string (thread-safe).
std::string random_hex(std::size_t chars);

// Single-quotes `text` for /bin/sh.
std::string sh_quote(const std::string& text);

// One line, at most `max` characters, for reasons and messages.
std::string one_line(const std::string& text, std::size_t max = 300);

// The std::errc of a filesystem_error, as text, e.g. "no_such_file_or_directory".
std::string errc_name(std::errc code);

// What `fn` threw: "none", or the exception's type and message.
std::string describe_throw(const std::function<void()>& fn);

// "" when `fn` raised an E and `check` finds nothing wrong with it (check
// returns "" or what is wrong), else what happened.
template <typename E, typename Check>
std::string expect_throw(const std::function<void()>& fn, const Check& check) {
  try {
    fn();
  } catch (const E& e) {
    return check(e);
  } catch (const RuleAbort&) {
    throw;
  } catch (const std::exception&) {
    return describe_throw([&] { throw; });
  }
  return "no exception";
}

// "" when `fn` raised an E, else what happened.
template <typename E>
std::string expect_throw(const std::function<void()>& fn) {
  return expect_throw<E>(fn, [](const E&) { return std::string(); });
}

class RuleContext {
 public:
  RuleContext(const RuleInfo& rule, BackendSession& session);
  // Removes scratch directories and destroys every environment the rule
  // made (best effort; never throws).
  ~RuleContext();
  RuleContext(const RuleContext&) = delete;
  RuleContext& operator=(const RuleContext&) = delete;

  const RuleInfo& rule() const { return rule_; }
  BackendSession& session() { return session_; }
  PlatformControl* platform() { return session_.platform(); }
  bool has(Capability c) const { return session_.capabilities().has(c); }

  // A fresh backend whose environment is destroyed when the rule ends.
  // FAILs (RuleAbort) when the backend lacks a declared capability.
  BackendPtr make();
  // A backend attached to `ref` (cleaned up like make()); RuleAbort when
  // the session cannot attach.
  BackendPtr attach(const WorkspaceRef& ref);
  // Wraps a backend made elsewhere (PlatformControl::make_with) the same way.
  BackendPtr adopt(std::unique_ptr<WorkspaceBackend> backend);
  // Remembers an environment to destroy at the end.
  void track(const WorkspaceRef& ref);

  // The capability interfaces; RuleAbort when declared but missing.
  workspace::SupportsCommands& cmd(WorkspaceBackend& b);
  workspace::SupportsFilesystem& fs(WorkspaceBackend& b);
  workspace::SupportsRealpath& rp(WorkspaceBackend& b);

  // A new, uniquely named directory under the backend's working directory,
  // removed when the rule ends. Made with the files API when there is one,
  // else with mkdir.
  std::string scratch(const BackendPtr& b);

  // run() guarded by `limit` (RuleAbort when it does not return in time).
  CommandResult run(const BackendPtr& b, const Command& command, const RunOptions& options = {},
                    Seconds limit = Seconds(90));
  // A shell command that must exit 0; returns its stdout. RuleAbort otherwise.
  std::string sh(const BackendPtr& b, const std::string& script);
  // Any call guarded by `limit`.
  void guarded(const std::function<void()>& fn, Seconds limit, const std::string& what);
  // The same, `what` made only when the call did not return in time.
  void guarded(const std::function<void()>& fn, Seconds limit,
               const std::function<std::string()>& what);

  // Declares a wait the rule cannot avoid (a timeout it sets, a sleep of its
  // command it must outlast, a deliberate pause), so that reports can tell
  // the suite's overhead from its waits. Thread-safe; seconds >= 0.
  void note_wait(Seconds seconds);

  // Does `path` exist? Through the files API when there is one, else `test -e`.
  bool path_exists(const BackendPtr& b, const std::string& path);

  // True when some guarded call was abandoned (the session must then be
  // leaked, since a thread may still use it). Thread-safe: rule bodies may
  // make guarded calls from several threads at once.
  bool abandoned() const { return abandoned_.load(); }
  // Records that a call made with run_with_deadline() was abandoned.
  void note_abandoned() { abandoned_.store(true); }

 private:
  struct Tracker;
  const RuleInfo& rule_;
  BackendSession& session_;
  std::shared_ptr<Tracker> tracker_;
  std::vector<std::weak_ptr<WorkspaceBackend>> backends_;
  std::vector<std::pair<BackendPtr, std::string>> scratch_;
  std::atomic<bool> abandoned_{false};
  std::atomic<double>* wait_sink_ = nullptr;
  std::mutex mutex_;
};

// The body of each rule, by ID (rule_bodies.cc).
using RuleBody = void (*)(RuleContext&);
RuleBody find_body(std::string_view id);

}  // namespace lizard::conformance::internal

// Asserts that `statement` throws a std::filesystem::filesystem_error with
// `errc_value` (a std::errc).
#define LC_EXPECT_ERRC(statement, errc_value)                                              \
  do {                                                                                     \
    std::string lc_got_ = "no exception";                                                  \
    try {                                                                                  \
      statement;                                                                           \
    } catch (const std::filesystem::filesystem_error& lc_e_) {                             \
      lc_got_ = lc_e_.code() == std::make_error_code(errc_value)                           \
                    ? std::string()                                                        \
                    : "filesystem_error " + lc_e_.code().message() + ": " + lc_e_.what();  \
    } catch (const std::exception& lc_e_) {                                                \
      lc_got_ = std::string("another exception: ") + lc_e_.what();                         \
    }                                                                                      \
    EXPECT_TRUE(lc_got_.empty()) << #statement << " should raise "                         \
                                 << ::lizard::conformance::internal::errc_name(errc_value) \
                                 << ", got "                                               \
                                 << ::lizard::conformance::internal::one_line(lc_got_);    \
  } while (false)
