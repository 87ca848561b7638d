#include "rule_context.h"

#include <gtest/gtest.h>

#include <cxxabi.h>
#include <condition_variable>
#include <random>
#include <set>
#include <thread>
#include <typeinfo>
#include <utility>

namespace lizard::conformance::internal {

namespace {

struct Shared {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;
};

std::string demangled_current_exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "unknown";
  int status = 0;
  char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string result = status == 0 && name != nullptr ? name : type->name();
  std::free(name);
  return result;
}

}  // namespace

bool run_with_deadline(std::function<void()> fn, Seconds limit) {
  // The helper owns only `shared` and `fn`; everything it hands back goes
  // through `shared` under its mutex. The exception is moved, never copied:
  // exception_ptr counts references inside libstdc++, which ThreadSanitizer
  // does not see, so the object must have one owner at a time (the helper
  // until the hand-over, the waiter after it), and an abandoned helper frees
  // its own exception with `shared` instead of the caller's copy.
  auto shared = std::make_shared<Shared>();
  std::thread([shared, fn = std::move(fn)]() mutable {
    std::exception_ptr error;
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    // Release what the call captured (backends) before the waiter goes on,
    // so that a rule dropping its last reference really drops the backend.
    fn = nullptr;
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->done = true;
    shared->error = std::move(error);
    shared->done_cv.notify_all();
  }).detach();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(shared->mutex);
    if (!shared->done_cv.wait_for(lock, limit, [&] { return shared->done; })) return false;
    error = std::move(shared->error);
  }
  if (error) std::rethrow_exception(std::move(error));
  return true;
}

bool wait_until(const std::function<bool()>& condition, Seconds limit,
                std::chrono::milliseconds poll) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit);
  while (true) {
    if (condition()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

std::string random_hex(std::size_t chars) {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < chars; ++i) text += kDigits[engine() % 16];
  return text;
}

std::string sh_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string one_line(const std::string& text, std::size_t max) {
  std::string line;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
    if (space) line += ' ';
    space = false;
    line += c;
  }
  if (line.size() > max) {
    // Cut on a character boundary so the reason stays valid UTF-8.
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line = line.substr(0, cut) + "...";
  }
  return line;
}

std::string errc_name(std::errc code) {
  switch (code) {
    case std::errc::no_such_file_or_directory:
      return "no_such_file_or_directory";
    case std::errc::is_a_directory:
      return "is_a_directory";
    case std::errc::not_a_directory:
      return "not_a_directory";
    case std::errc::permission_denied:
      return "permission_denied";
    case std::errc::file_exists:
      return "file_exists";
    case std::errc::too_many_symbolic_link_levels:
      return "too_many_symbolic_link_levels";
    default:
      return std::make_error_code(code).message();
  }
}

std::string describe_throw(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return demangled_current_exception_type() + ": " + e.what();
  } catch (...) {
    return demangled_current_exception_type();
  }
  return "none";
}

struct RuleContext::Tracker {
  std::mutex mutex;
  std::vector<WorkspaceRef> refs;
  void add(const WorkspaceRef& ref) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& known : refs) {
      if (known == ref) return;
    }
    refs.push_back(ref);
  }
};

namespace {
thread_local std::atomic<double>* t_wait_sink = nullptr;
}  // namespace

WaitSinkScope::WaitSinkScope(std::atomic<double>* sink) : previous_(t_wait_sink) {
  t_wait_sink = sink;
}

WaitSinkScope::~WaitSinkScope() { t_wait_sink = previous_; }

RuleContext::RuleContext(const RuleInfo& rule, BackendSession& session)
    : rule_(rule),
      session_(session),
      tracker_(std::make_shared<Tracker>()),
      wait_sink_(t_wait_sink) {}

void RuleContext::note_wait(Seconds seconds) {
  if (wait_sink_ != nullptr && seconds.count() > 0) wait_sink_->fetch_add(seconds.count());
}

RuleContext::~RuleContext() {
  std::vector<std::pair<BackendPtr, std::string>> scratch;
  std::vector<std::weak_ptr<WorkspaceBackend>> backends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    scratch.swap(scratch_);
    backends.swap(backends_);
  }
  for (auto& [backend, path] : scratch) {
    // Best effort and bounded: a broken backend must not hang the cleanup.
    auto b = backend;
    auto p = path;
    try {
      const bool finished = run_with_deadline(
          [b, p] {
            if (auto* c = b->commands()) {
              RunOptions options;
              options.timeout = Seconds(20);
              c->run(Shell{"chmod -R u+rwx " + sh_quote(p) + " 2>/dev/null; rm -rf " + sh_quote(p)},
                     options);
            } else if (auto* f = b->filesystem()) {
              f->remove(p);
            }
          },
          Seconds(25));
      // The helper still uses the backend, which may depend on the session.
      if (!finished) abandoned_ = true;
    } catch (...) {
    }
  }
  scratch.clear();
  for (auto& weak : backends) {
    if (auto b = weak.lock()) {
      if (auto ref = b->ref()) tracker_->add(*ref);
    }
  }
  std::vector<WorkspaceRef> refs;
  {
    std::lock_guard<std::mutex> lock(tracker_->mutex);
    refs = tracker_->refs;
  }
  for (const auto& ref : refs) {
    try {
      BackendSession* session = &session_;
      if (!run_with_deadline([session, ref] { session->destroy_environment(ref); }, Seconds(30))) {
        abandoned_ = true;
      }
    } catch (...) {
    }
  }
}

BackendPtr RuleContext::adopt(std::unique_ptr<WorkspaceBackend> backend) {
  if (!backend) throw RuleAbort("the session returned no backend");
  auto tracker = tracker_;
  BackendPtr shared(backend.release(), [tracker](WorkspaceBackend* b) {
    // ref() never does I/O, so asking in a deleter is safe.
    try {
      if (auto ref = b->ref()) tracker->add(*ref);
    } catch (...) {
    }
    delete b;
  });
  const Capabilities declared = session_.capabilities();
  const Capabilities actual = shared->capabilities();
  struct Check {
    Capability cap;
    const char* name;
    bool present;
  };
  const Check checks[] = {
      {Capability::kCommands, "commands", shared->commands() != nullptr},
      {Capability::kFilesystem, "filesystem", shared->filesystem() != nullptr},
      {Capability::kRealpath, "realpath", shared->realpath_support() != nullptr},
  };
  for (const auto& check : checks) {
    if (actual.has(check.cap) != check.present) {
      throw RuleAbort(std::string("the backend's capabilities() ") +
                      (check.present ? "omits" : "lists") + " '" + check.name + "' but its " +
                      check.name + " accessor returns " +
                      (check.present ? "an interface" : "null"));
    }
    if (declared.has(check.cap) && !actual.has(check.cap)) {
      throw RuleAbort(std::string("the factory declares capability '") + check.name +
                      "' but the backend does not offer it");
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  backends_.push_back(shared);
  return shared;
}

BackendPtr RuleContext::make() { return adopt(session_.make()); }

BackendPtr RuleContext::attach(const WorkspaceRef& ref) {
  auto backend = session_.attach(ref);
  if (!backend) throw RuleAbort("the session cannot attach by ref");
  return adopt(std::move(backend));
}

void RuleContext::track(const WorkspaceRef& ref) { tracker_->add(ref); }

workspace::SupportsCommands& RuleContext::cmd(WorkspaceBackend& b) {
  auto* c = b.commands();
  if (c == nullptr) throw RuleAbort("commands() is null although the rule needs commands");
  return *c;
}

workspace::SupportsFilesystem& RuleContext::fs(WorkspaceBackend& b) {
  auto* f = b.filesystem();
  if (f == nullptr) throw RuleAbort("filesystem() is null although the rule needs a filesystem");
  return *f;
}

workspace::SupportsRealpath& RuleContext::rp(WorkspaceBackend& b) {
  auto* r = b.realpath_support();
  if (r == nullptr) throw RuleAbort("realpath_support() is null although the rule needs realpath");
  return *r;
}

std::string RuleContext::scratch(const BackendPtr& b) {
  const std::string path = b->working_dir() + "/lc-" + gtest_name(rule_.id) + "-" + random_hex(8);
  if (auto* f = b->filesystem()) {
    guarded([f, path] { f->make_dir(path); }, Seconds(60), "make_dir of a scratch directory");
  } else {
    sh(b, "mkdir -p " + sh_quote(path));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  scratch_.emplace_back(b, path);
  return path;
}

void RuleContext::guarded(const std::function<void()>& fn, Seconds limit, const std::string& what) {
  guarded(fn, limit, [&what] { return what; });
}

void RuleContext::guarded(const std::function<void()>& fn, Seconds limit,
                          const std::function<std::string()>& what) {
  if (!run_with_deadline(fn, limit)) {
    abandoned_ = true;
    throw RuleAbort(what() + " did not return within " + std::to_string(limit.count()) + " s");
  }
}

CommandResult RuleContext::run(const BackendPtr& b, const Command& command,
                               const RunOptions& options, Seconds limit) {
  auto* c = &cmd(*b);
  auto result = std::make_shared<CommandResult>();
  // The call's thread may outlive this frame (an abandoned call), so it owns
  // one copy of the command and options, shared: the closure itself is
  // copied on its way into the thread, and an argv or environment of
  // megabytes costs page faults per copy (cmd.argument-list-too-long).
  auto call = std::make_shared<const std::pair<Command, RunOptions>>(command, options);
  guarded([keep = b, c, call, result] { *result = c->run(call->first, call->second); }, limit,
          [&command] { return "run(" + one_line(command.describe(), 80) + ")"; });
  return *result;
}

std::string RuleContext::sh(const BackendPtr& b, const std::string& script) {
  CommandResult result = run(b, Shell{script});
  if (result.exit_code != 0) {
    throw RuleAbort("setup command failed (exit " + std::to_string(result.exit_code) +
                    "): " + one_line(script, 120) + ": " + one_line(result.err, 200));
  }
  return result.out;
}

bool RuleContext::path_exists(const BackendPtr& b, const std::string& path) {
  if (auto* f = b->filesystem()) {
    auto found = std::make_shared<bool>(false);
    guarded([keep = b, f, path, found] { *found = f->exists(path); }, Seconds(60), "exists()");
    return *found;
  }
  return run(b, Shell{"test -e " + sh_quote(path) + " || test -L " + sh_quote(path)}).exit_code ==
         0;
}

}  // namespace lizard::conformance::internal
