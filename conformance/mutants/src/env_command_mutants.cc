// Mutants of LocalWorkspaceBackend for the environment-and-ref and command
// rules. Each class breaks exactly one behaviour a rule names; the catalogue
// entries at the end say which rules must FAIL.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "lizard/workspace/checks.h"
#include "lizard/workspace/local_workspace_backend.h"
#include "lizard/workspace/utf8.h"
#include "mutant_support.h"

extern char** environ;

namespace lizard::conformance::mutants {

namespace {

namespace fs = std::filesystem;
using workspace::Argv;
using workspace::Command;
using workspace::CommandResult;
using workspace::FileEntry;
using workspace::RunOptions;
using workspace::Seconds;
using workspace::Shell;

// --- Environment and ref ----------------------------------------------------

// The ref is a placeholder until the first operation, then the real one.
class RefSetLate : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::optional<WorkspaceRef> ref() const override {
    if (!used_) return WorkspaceRef{"local", "pending"};
    return ForwardingBackend::ref();
  }
  CommandResult run(const Command& c, const RunOptions& o) override {
    used_ = true;
    return ForwardingBackend::run(c, o);
  }
  std::string read_bytes(const std::string& p) override {
    used_ = true;
    return ForwardingBackend::read_bytes(p);
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    used_ = true;
    ForwardingBackend::write_bytes(p, d);
  }
  FileEntry stat(const std::string& p) override {
    used_ = true;
    return ForwardingBackend::stat(p);
  }
  std::vector<FileEntry> list_dir(const std::string& p) override {
    used_ = true;
    return ForwardingBackend::list_dir(p);
  }
  void make_dir(const std::string& p) override {
    used_ = true;
    ForwardingBackend::make_dir(p);
  }
  void remove(const std::string& p) override {
    used_ = true;
    ForwardingBackend::remove(p);
  }
  bool exists(const std::string& p) override {
    used_ = true;
    return ForwardingBackend::exists(p);
  }
  std::string realpath(const std::string& p) override {
    used_ = true;
    return ForwardingBackend::realpath(p);
  }

 private:
  std::atomic<bool> used_{false};
};

// Reports the environment through a symlink next to it (like /tmp on macOS).
class WorkingDirThroughLink : public ForwardingBackend {
 public:
  explicit WorkingDirThroughLink(std::unique_ptr<WorkspaceBackend> inner)
      : ForwardingBackend(std::move(inner)) {
    const std::string real = ForwardingBackend::working_dir();
    link_ = real + ".link";
    std::error_code ignored;
    fs::create_directory_symlink(real, link_, ignored);
  }
  std::string working_dir() const override { return link_; }

 private:
  std::string link_;
};

// A command of a destroyed environment "exits" 137 instead of raising.
class DestroyedRunAsExit : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  CommandResult run(const Command& c, const RunOptions& o) override {
    try {
      return ForwardingBackend::run(c, o);
    } catch (const workspace::WorkspaceUnavailableError&) {
      return {137, "", ""};
    }
  }
};

// An attached backend whose directory is gone makes it again.
class RecreatesDestroyed : public RecoversFromUnavailable {
 public:
  using RecoversFromUnavailable::RecoversFromUnavailable;

 protected:
  bool recover() override {
    const auto ref = original()->ref();
    if (!ref) return false;
    workspace::LocalOptions options;
    options.root = ref->id;
    replace(std::make_shared<workspace::LocalWorkspaceBackend>(options));
    return true;
  }
};

// --- Commands -----------------------------------------------------------------

// A decorator that edits the command, the options or the result of run().
class RunEditor : public ForwardingBackend {
 public:
  using Edit =
      std::function<CommandResult(WorkspaceBackend& inner, const Command&, const RunOptions&)>;
  RunEditor(std::unique_ptr<WorkspaceBackend> inner, Edit edit)
      : ForwardingBackend(std::move(inner)), edit_(std::move(edit)) {}
  CommandResult run(const Command& c, const RunOptions& o) override { return edit_(inner(), c, o); }

 private:
  Edit edit_;
};

CommandResult forward(WorkspaceBackend& b, const Command& c, const RunOptions& o) {
  return b.commands()->run(c, o);
}

Decorator run_editor(RunEditor::Edit edit) {
  return [edit](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
    return std::make_unique<RunEditor>(std::move(b), edit);
  };
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : " ") + item;
  return text;
}

// Re-repairs already valid output 4 KiB at a time, splitting characters that
// straddle a chunk boundary (a stream decoder without utf8_complete_prefix).
std::string repair_per_chunk(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4096) {
    out += workspace::repair_utf8(std::string_view(text).substr(i, 4096));
  }
  return out;
}

std::string mangle_high_bytes(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  }
  return text;
}

// Runs the command on a thread of its own, on the original backend (which
// the thread keeps alive), so that the mutant can stop waiting for it.
class Abandoning : public ForwardingBackend {
 public:
  explicit Abandoning(std::unique_ptr<WorkspaceBackend> inner)
      : ForwardingBackend(std::shared_ptr<WorkspaceBackend>(std::move(inner))) {}

 protected:
  std::future<CommandResult> start(const Command& c, const RunOptions& o) {
    auto promise = std::make_shared<std::promise<CommandResult>>();
    auto future = promise->get_future();
    std::thread([keep = original(), c, o, promise] {
      try {
        promise->set_value(keep->commands()->run(c, o));
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    }).detach();
    return future;
  }
};

// On a timeout, stops waiting but leaves the command running.
class AbandonsOnTimeout : public Abandoning {
 public:
  using Abandoning::Abandoning;
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (!o.timeout) return ForwardingBackend::run(c, o);
    workspace::validate_run(c, o);
    RunOptions untimed = o;
    // A backstop so the abandoned command cannot outlive the run for long.
    untimed.timeout = *o.timeout + Seconds(30);
    auto future = start(c, untimed);
    if (future.wait_for(*o.timeout) == std::future_status::ready) return future.get();
    throw workspace::WorkspaceTimeoutError("the command timed out", "", "", *o.timeout);
  }
};

// On a stop request, raises the cancellation error at once but leaves the
// command and its group running.
class AbandonsOnStop : public Abandoning {
 public:
  using Abandoning::Abandoning;
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (!o.stop.stop_possible()) return ForwardingBackend::run(c, o);
    workspace::validate_run(c, o);
    RunOptions unstoppable = o;
    unstoppable.stop = {};
    // A backstop so the abandoned command cannot outlive the run for long.
    if (!unstoppable.timeout) unstoppable.timeout = Seconds(60);
    auto future = start(c, unstoppable);
    while (future.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
      if (o.stop.stop_requested()) {
        throw workspace::WorkspaceCancelledError("the run was cancelled");
      }
    }
    return future.get();
  }
};

// Concurrent runs share one in-flight call: whoever comes while a command
// runs gets that command's result (a single-flight cache keyed on nothing).
class CoalescesConcurrentRuns : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  CommandResult run(const Command& c, const RunOptions& o) override {
    std::shared_future<CommandResult> flight;
    bool leader = false;
    std::promise<CommandResult> promise;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (in_flight_.valid()) {
        flight = in_flight_;
      } else {
        in_flight_ = promise.get_future().share();
        flight = in_flight_;
        leader = true;
      }
    }
    if (!leader) return flight.get();
    try {
      promise.set_value(ForwardingBackend::run(c, o));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_ = {};
    }
    return flight.get();
  }

 private:
  std::mutex mutex_;
  std::shared_future<CommandResult> in_flight_;
};

}  // namespace

void add_env_and_command_mutants(std::vector<Mutant>& out) {
  using workspace::WorkspaceOutputLimitError;
  using workspace::WorkspaceTimeoutError;
  // Environment and ref.
  out.push_back(local_mutant("ref-set-late",
                             "ref() is a placeholder {local, pending} until the first operation",
                             {"env.ref-stable"}, plain<RefSetLate>()));
  out.push_back(
      local_mutant("working-dir-through-link",
                   "working_dir() names a symlink to the environment, not the canonical path",
                   {"env.working-dir-canonical"}, plain<WorkingDirThroughLink>()));
  {
    MutantSpec spec;
    spec.attach = [](BackendSession& session, const WorkspaceRef&) { return session.make(); };
    out.push_back(
        local_mutant("attach-makes-fresh",
                     "attach(ref) ignores the ref and returns a backend of a new environment",
                     {"env.attach-by-ref"}, spec));
  }
  out.push_back(local_mutant(
      "attach-recreates-destroyed",
      "an attached backend whose environment is gone makes a new, empty one at the same place",
      {"env.attach-destroyed-unavailable"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.attached) return b;
        return std::make_unique<RecreatesDestroyed>(
            std::shared_ptr<WorkspaceBackend>(std::move(b)));
      }));
  out.push_back(local_mutant("destroyed-run-as-exit-137",
                             "a command whose environment is destroyed under it returns exit 137 "
                             "instead of raising WorkspaceUnavailableError",
                             {"env.destroy-during-command"}, plain<DestroyedRunAsExit>()));
  out.push_back(local_mutant("destroys-on-drop",
                             "the backend's destructor calls destroy(), ending the environment",
                             {"env.outlives-backend-object"}, plain<DestroysOnDrop>()));

  // Commands.
  out.push_back(local_mutant(
      "drops-stderr", "run() returns stderr empty", {"cmd.result-fields", "cmd.streams-separate"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        auto r = forward(b, c, o);
        r.err.clear();
        return r;
      })));
  out.push_back(local_mutant(
      "stdin-not-at-eof", "shell commands get a line on stdin instead of EOF", {"cmd.stdin-at-eof"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        if (!c.is_shell()) return forward(b, c, o);
        return forward(b, Shell{"printf 'leaked\\n' | {\n" + c.script() + "\n}"}, o);
      })));
  out.push_back(
      local_mutant("missing-program-exit-0", "an argv whose program is missing returns exit 0",
                   {"cmd.missing-program-127"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     auto r = forward(b, c, o);
                     if (!c.is_shell() && r.exit_code == 127) r.exit_code = 0;
                     return r;
                   })));
  out.push_back(local_mutant(
      "runs-non-executable", "an argv naming a non-executable file is run with /bin/sh instead",
      {"cmd.not-executable-126"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        auto r = forward(b, c, o);
        if (c.is_shell() || r.exit_code != 126) return r;
        std::vector<std::string> items = {"sh"};
        items.insert(items.end(), c.argv().begin(), c.argv().end());
        return forward(b, Argv{items}, o);
      })));
  out.push_back(
      local_mutant("signal-as-negative", "a command killed by signal N returns -N, not 128+N",
                   {"cmd.signal-exit-code"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     auto r = forward(b, c, o);
                     if (r.exit_code > 128 && r.exit_code < 128 + 65)
                       r.exit_code = 128 - r.exit_code;
                     return r;
                   })));
  out.push_back(
      local_mutant("argv-through-shell", "an argv is joined with spaces and run by /bin/sh -c",
                   {"cmd.argv-literal"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     if (c.is_shell()) return forward(b, c, o);
                     return forward(b, Shell{join(c.argv())}, o);
                   })));
  out.push_back(local_mutant(
      "mangles-high-bytes", "every output byte >= 0x80 becomes '?'", {"cmd.utf8-replacement"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        auto r = forward(b, c, o);
        r.out = mangle_high_bytes(r.out);
        r.err = mangle_high_bytes(r.err);
        return r;
      })));
  out.push_back(local_mutant(
      "utf8-repaired-per-chunk",
      "output is repaired in independent 4 KiB chunks, so characters across a boundary become "
      "U+FFFD",
      {"cmd.utf8-replacement"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        auto r = forward(b, c, o);
        r.out = repair_per_chunk(r.out);
        r.err = repair_per_chunk(r.err);
        return r;
      })));
  out.push_back(
      local_mutant("cuts-at-nul", "output is cut at the first NUL byte (C-string handling)",
                   {"cmd.nul-preserved"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     auto r = forward(b, c, o);
                     r.out = r.out.c_str();
                     r.err = r.err.c_str();
                     return r;
                   })));
  out.push_back(
      local_mutant("merges-stderr", "stderr is appended to stdout (2>&1) and returned empty",
                   {"cmd.streams-separate", "cmd.result-fields"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     auto r = forward(b, c, o);
                     r.out += r.err;
                     r.err.clear();
                     return r;
                   })));
  out.push_back(local_mutant(
      "truncates-at-512k", "each stream is cut to 512 KiB and the command reported successful",
      {"cmd.output-complete", "cmd.output-limit"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        auto r = forward(b, c, o);
        constexpr std::size_t kCap = 512 * 1024;
        if (r.out.size() > kCap) r.out = std::string(workspace::utf8_truncate(r.out, kCap));
        if (r.err.size() > kCap) r.err = std::string(workspace::utf8_truncate(r.err, kCap));
        return r;
      })));
  out.push_back(local_mutant(
      "limit-as-truncated-success",
      "output over the limit returns the 64 KiB heads as a successful result", {"cmd.output-limit"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        try {
          return forward(b, c, o);
        } catch (const WorkspaceOutputLimitError& e) {
          return CommandResult{0, e.out_head(), e.err_head()};
        }
      })));
  out.push_back(
      local_mutant("waits-for-background",
                   "shell commands end with `wait`, so a background child holds the result",
                   {"cmd.background-child-does-not-hold"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     if (!c.is_shell()) return forward(b, c, o);
                     return forward(b, Shell{c.script() + "\nwait"}, o);
                   })));
  out.push_back(local_mutant(
      "ignores-timeout", "options.timeout is dropped; commands run to their end", {"cmd.timeout"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        RunOptions untimed = o;
        untimed.timeout.reset();
        return forward(b, c, untimed);
      })));
  out.push_back(
      local_mutant("timeout-loses-output", "the timeout error carries no partial output",
                   {"cmd.timeout-partial-output"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     try {
                       return forward(b, c, o);
                     } catch (const WorkspaceTimeoutError& e) {
                       throw WorkspaceTimeoutError(e.what(), "", "", e.timeout());
                     }
                   })));
  out.push_back(local_mutant("abandons-on-timeout",
                             "on timeout run() stops waiting but leaves the command and its group "
                             "running",
                             {"cmd.timeout-stops-group"}, plain<AbandonsOnTimeout>()));
  out.push_back(local_mutant(
      "accepts-invalid-timeout", "a zero, negative, NaN or infinite timeout means no timeout",
      {"cmd.timeout-invalid"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        RunOptions fixed = o;
        if (o.timeout && !(o.timeout->count() > 0 && std::isfinite(o.timeout->count()))) {
          fixed.timeout.reset();
        }
        return forward(b, c, fixed);
      })));
  out.push_back(local_mutant(
      "ignores-stop-token", "the cancellation token is not passed on", {"cmd.cancellation"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        RunOptions unstoppable = o;
        unstoppable.stop = {};
        return forward(b, c, unstoppable);
      })));
  out.push_back(local_mutant("abandons-on-stop",
                             "on a stop request run() raises the cancellation error but leaves "
                             "the command and its group running",
                             {"cmd.cancellation"}, plain<AbandonsOnStop>()));
  out.push_back(
      local_mutant("drops-call-env", "the per-call env is not passed on", {"cmd.env-added"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     RunOptions bare = o;
                     bare.env.clear();
                     return forward(b, c, bare);
                   })));
  out.push_back(local_mutant(
      "passes-host-env", "every variable of the host process is added to each command's env",
      {"cmd.env-not-inherited"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        RunOptions leaky = o;
        for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
          const std::string entry = *e;
          const auto eq = entry.find('=');
          if (eq == std::string::npos || eq == 0) continue;
          leaky.env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
        }
        return forward(b, c, leaky);
      })));
  out.push_back(
      local_mutant("starts-in-tmp", "commands start in /tmp instead of the working directory",
                   {"cmd.starts-in-working-dir"},
                   run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                     if (c.is_shell())
                       return forward(b, Shell{"cd /tmp || exit 1\n" + c.script()}, o);
                     std::vector<std::string> items = {"sh", "-c", "cd /tmp && exec \"$@\"", "sh"};
                     items.insert(items.end(), c.argv().begin(), c.argv().end());
                     return forward(b, Argv{items}, o);
                   })));
  out.push_back(local_mutant("coalesces-concurrent-runs",
                             "a run() that starts while another runs gets the other's result",
                             {"cmd.concurrent"}, plain<CoalescesConcurrentRuns>()));
}

}  // namespace lizard::conformance::mutants
