// Mutants of LocalWorkspaceBackend for the rules every backend meets. Each
// class breaks exactly one behaviour a rule names; the catalogue entry at the
// end of the file says which rules must FAIL.
//
// Several mutants reach the host filesystem directly: the local backend's
// paths are host paths, and a naive implementation would do just that.
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
#include "mutant_factory.h"

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

// The errc of a filesystem_error, or none.
bool has_errc(const fs::filesystem_error& e, std::errc code) {
  return e.code() == std::make_error_code(code);
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

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

// On a timeout, stops waiting but leaves the command running.
class AbandonsOnTimeout : public ForwardingBackend {
 public:
  explicit AbandonsOnTimeout(std::unique_ptr<WorkspaceBackend> inner)
      : ForwardingBackend(std::shared_ptr<WorkspaceBackend>(std::move(inner))) {}
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (!o.timeout) return ForwardingBackend::run(c, o);
    workspace::validate_run(c, o);
    RunOptions untimed = o;
    // A backstop so the abandoned command cannot outlive the run for long.
    untimed.timeout = *o.timeout + Seconds(30);
    auto promise = std::make_shared<std::promise<CommandResult>>();
    auto future = promise->get_future();
    std::thread([keep = original(), c, untimed, promise] {
      try {
        promise->set_value(keep->commands()->run(c, untimed));
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    }).detach();
    if (future.wait_for(*o.timeout) == std::future_status::ready) return future.get();
    throw workspace::WorkspaceTimeoutError("the command timed out", "", "", *o.timeout);
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

// --- Files ----------------------------------------------------------------------

// A decorator with every filesystem call overridable by a lambda.
struct FileEdits {
  std::function<std::string(ForwardingBackend&, const std::string&)> read;
  std::function<void(ForwardingBackend&, const std::string&, const std::string&)> write;
  std::function<FileEntry(ForwardingBackend&, const std::string&)> stat;
  std::function<std::vector<FileEntry>(ForwardingBackend&, const std::string&)> list;
  std::function<void(ForwardingBackend&, const std::string&)> make_dir;
  std::function<void(ForwardingBackend&, const std::string&)> remove;
  std::function<bool(ForwardingBackend&, const std::string&)> exists;
  std::function<std::string(ForwardingBackend&, const std::string&)> realpath;
};

// `base` calls go to the wrapped backend; FileEditor forwards to it unless
// an edit is set.
class FileEditor : public ForwardingBackend {
 public:
  FileEditor(std::unique_ptr<WorkspaceBackend> inner, FileEdits edits)
      : ForwardingBackend(std::move(inner)),
        base_(std::make_unique<ForwardingBackend>(std::make_unique<Borrowed>(*this))),
        edits_(std::move(edits)) {}

  std::string read_bytes(const std::string& p) override {
    return edits_.read ? edits_.read(*base_, p) : ForwardingBackend::read_bytes(p);
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    edits_.write ? edits_.write(*base_, p, d) : ForwardingBackend::write_bytes(p, d);
  }
  FileEntry stat(const std::string& p) override {
    return edits_.stat ? edits_.stat(*base_, p) : ForwardingBackend::stat(p);
  }
  std::vector<FileEntry> list_dir(const std::string& p) override {
    return edits_.list ? edits_.list(*base_, p) : ForwardingBackend::list_dir(p);
  }
  void make_dir(const std::string& p) override {
    edits_.make_dir ? edits_.make_dir(*base_, p) : ForwardingBackend::make_dir(p);
  }
  void remove(const std::string& p) override {
    edits_.remove ? edits_.remove(*base_, p) : ForwardingBackend::remove(p);
  }
  bool exists(const std::string& p) override {
    return edits_.exists ? edits_.exists(*base_, p) : ForwardingBackend::exists(p);
  }
  std::string realpath(const std::string& p) override {
    return edits_.realpath ? edits_.realpath(*base_, p) : ForwardingBackend::realpath(p);
  }

 private:
  // The wrapped backend, unedited, for the edits to call.
  class Borrowed : public WorkspaceBackend,
                   public workspace::SupportsCommands,
                   public workspace::SupportsFilesystem,
                   public workspace::SupportsRealpath {
   public:
    explicit Borrowed(FileEditor& owner) : owner_(owner) {}
    Capabilities capabilities() const override { return owner_.inner().capabilities(); }
    workspace::SupportsCommands* commands() override { return this; }
    workspace::SupportsFilesystem* filesystem() override { return this; }
    workspace::SupportsRealpath* realpath_support() override { return this; }
    std::optional<WorkspaceRef> ref() const override { return owner_.inner().ref(); }
    std::string working_dir() const override { return owner_.inner().working_dir(); }
    void destroy() override { owner_.inner().destroy(); }
    CommandResult run(const Command& c, const RunOptions& o) override {
      return owner_.inner().commands()->run(c, o);
    }
    std::string read_bytes(const std::string& p) override { return fs().read_bytes(p); }
    void write_bytes(const std::string& p, const std::string& d) override {
      fs().write_bytes(p, d);
    }
    FileEntry stat(const std::string& p) override { return fs().stat(p); }
    std::vector<FileEntry> list_dir(const std::string& p) override { return fs().list_dir(p); }
    void make_dir(const std::string& p) override { fs().make_dir(p); }
    void remove(const std::string& p) override { fs().remove(p); }
    bool exists(const std::string& p) override { return fs().exists(p); }
    std::string realpath(const std::string& p) override {
      return owner_.inner().realpath_support()->realpath(p);
    }

   private:
    workspace::SupportsFilesystem& fs() { return *owner_.inner().filesystem(); }
    FileEditor& owner_;
  };

  std::unique_ptr<ForwardingBackend> base_;
  FileEdits edits_;
};

Decorator file_editor(FileEdits edits) {
  return [edits](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
    return std::make_unique<FileEditor>(std::move(b), edits);
  };
}

// Files written through the API live in memory; commands never see them.
class FilesInMemory : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void write_bytes(const std::string& p, const std::string& d) override {
    std::lock_guard<std::mutex> lock(mutex_);
    files_[p] = d;
  }
  std::string read_bytes(const std::string& p) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = files_.find(p);
      if (it != files_.end()) return it->second;
    }
    return ForwardingBackend::read_bytes(p);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> files_;
};

// Follows a link chain itself, one hop per (simulated) round trip, with no
// hop limit; gives up only after 30 s.
std::string slow_loop_realpath(ForwardingBackend& b, const std::string& path) {
  try {
    return b.realpath(path);
  } catch (const fs::filesystem_error& e) {
    if (!has_errc(e, std::errc::too_many_symbolic_link_levels)) throw;
  }
  std::string current = path;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    std::error_code ec;
    if (!fs::is_symlink(current, ec)) break;
    const fs::path target = fs::read_symlink(current, ec);
    if (ec) break;
    current = target.is_absolute() ? target.string() : parent_of(current) + "/" + target.string();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw workspace::make_path_error("realpath", path, std::errc::too_many_symbolic_link_levels);
}

FileEntry entry_not_following(FileEntry e) {
  std::error_code ec;
  if (fs::is_symlink(e.path, ec)) {
    e.is_dir = false;
    e.size = 0;
  }
  return e;
}

// --- The catalogue ----------------------------------------------------------------

template <typename T>
Decorator plain() {
  return [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
    return std::make_unique<T>(std::move(b));
  };
}

Mutant local(std::string name, std::string description, std::vector<std::string> targets,
             MutantSpec spec) {
  Mutant m;
  m.name = name;
  m.description = std::move(description);
  m.targets = std::move(targets);
  m.base = "local";
  m.make_factory = [name, spec] { return wrap(local_base(), name, spec); };
  return m;
}

Mutant local(std::string name, std::string description, std::vector<std::string> targets,
             Decorator decorate) {
  MutantSpec spec;
  spec.decorate = std::move(decorate);
  return local(std::move(name), std::move(description), std::move(targets), std::move(spec));
}

}  // namespace

void add_common_mutants(std::vector<Mutant>& out) {
  using workspace::WorkspaceOutputLimitError;
  using workspace::WorkspaceTimeoutError;
  const auto errc_edit = [](std::errc from, auto fallback) {
    return [from, fallback](ForwardingBackend& b, const std::string& p) {
      try {
        return b.read_bytes(p);
      } catch (const fs::filesystem_error& e) {
        if (!has_errc(e, from)) throw;
        return fallback(b, p);
      }
    };
  };

  // Environment and ref.
  out.push_back(local("ref-set-late",
                      "ref() is a placeholder {local, pending} until the first operation",
                      {"env.ref-stable"}, plain<RefSetLate>()));
  out.push_back(local("working-dir-through-link",
                      "working_dir() names a symlink to the environment, not the canonical path",
                      {"env.working-dir-canonical"}, plain<WorkingDirThroughLink>()));
  {
    MutantSpec spec;
    spec.attach = [](BackendSession& session, const WorkspaceRef&) { return session.make(); };
    out.push_back(local("attach-makes-fresh",
                        "attach(ref) ignores the ref and returns a backend of a new environment",
                        {"env.attach-by-ref"}, spec));
  }
  out.push_back(local(
      "attach-recreates-destroyed",
      "an attached backend whose environment is gone makes a new, empty one at the same place",
      {"env.attach-destroyed-unavailable"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.attached) return b;
        return std::make_unique<RecreatesDestroyed>(
            std::shared_ptr<WorkspaceBackend>(std::move(b)));
      }));
  out.push_back(local("destroyed-run-as-exit-137",
                      "a command whose environment is destroyed under it returns exit 137 "
                      "instead of raising WorkspaceUnavailableError",
                      {"env.destroy-during-command"}, plain<DestroyedRunAsExit>()));
  out.push_back(local("destroys-on-drop",
                      "the backend's destructor calls destroy(), ending the environment",
                      {"env.outlives-backend-object"}, plain<DestroysOnDrop>()));

  // Commands.
  out.push_back(local("drops-stderr", "run() returns stderr empty",
                      {"cmd.result-fields", "cmd.streams-separate"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        r.err.clear();
                        return r;
                      })));
  out.push_back(local(
      "stdin-not-at-eof", "shell commands get a line on stdin instead of EOF", {"cmd.stdin-at-eof"},
      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
        if (!c.is_shell()) return forward(b, c, o);
        return forward(b, Shell{"printf 'leaked\\n' | {\n" + c.script() + "\n}"}, o);
      })));
  out.push_back(local("missing-program-exit-0", "an argv whose program is missing returns exit 0",
                      {"cmd.missing-program-127"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        if (!c.is_shell() && r.exit_code == 127) r.exit_code = 0;
                        return r;
                      })));
  out.push_back(local("runs-non-executable",
                      "an argv naming a non-executable file is run with /bin/sh instead",
                      {"cmd.not-executable-126"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        if (c.is_shell() || r.exit_code != 126) return r;
                        std::vector<std::string> items = {"sh"};
                        items.insert(items.end(), c.argv().begin(), c.argv().end());
                        return forward(b, Argv{items}, o);
                      })));
  out.push_back(local("signal-as-negative", "a command killed by signal N returns -N, not 128+N",
                      {"cmd.signal-exit-code"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        if (r.exit_code > 128 && r.exit_code < 128 + 65)
                          r.exit_code = 128 - r.exit_code;
                        return r;
                      })));
  out.push_back(local("argv-through-shell", "an argv is joined with spaces and run by /bin/sh -c",
                      {"cmd.argv-literal"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        if (c.is_shell()) return forward(b, c, o);
                        return forward(b, Shell{join(c.argv())}, o);
                      })));
  out.push_back(local("mangles-high-bytes", "every output byte >= 0x80 becomes '?'",
                      {"cmd.utf8-replacement"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        r.out = mangle_high_bytes(r.out);
                        r.err = mangle_high_bytes(r.err);
                        return r;
                      })));
  out.push_back(local(
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
  out.push_back(local("cuts-at-nul", "output is cut at the first NUL byte (C-string handling)",
                      {"cmd.nul-preserved"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        r.out = r.out.c_str();
                        r.err = r.err.c_str();
                        return r;
                      })));
  out.push_back(local("merges-stderr", "stderr is appended to stdout (2>&1) and returned empty",
                      {"cmd.streams-separate", "cmd.result-fields"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        r.out += r.err;
                        r.err.clear();
                        return r;
                      })));
  out.push_back(local("truncates-at-512k",
                      "each stream is cut to 512 KiB and the command reported successful",
                      {"cmd.output-complete", "cmd.output-limit"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        auto r = forward(b, c, o);
                        constexpr std::size_t kCap = 512 * 1024;
                        if (r.out.size() > kCap)
                          r.out = std::string(workspace::utf8_truncate(r.out, kCap));
                        if (r.err.size() > kCap)
                          r.err = std::string(workspace::utf8_truncate(r.err, kCap));
                        return r;
                      })));
  out.push_back(local("limit-as-truncated-success",
                      "output over the limit returns the 64 KiB heads as a successful result",
                      {"cmd.output-limit"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        try {
                          return forward(b, c, o);
                        } catch (const WorkspaceOutputLimitError& e) {
                          return CommandResult{0, e.out_head(), e.err_head()};
                        }
                      })));
  out.push_back(local("waits-for-background",
                      "shell commands end with `wait`, so a background child holds the result",
                      {"cmd.background-child-does-not-hold"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        if (!c.is_shell()) return forward(b, c, o);
                        return forward(b, Shell{c.script() + "\nwait"}, o);
                      })));
  out.push_back(local("ignores-timeout", "options.timeout is dropped; commands run to their end",
                      {"cmd.timeout"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        RunOptions untimed = o;
                        untimed.timeout.reset();
                        return forward(b, c, untimed);
                      })));
  out.push_back(local("timeout-loses-output", "the timeout error carries no partial output",
                      {"cmd.timeout-partial-output"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        try {
                          return forward(b, c, o);
                        } catch (const WorkspaceTimeoutError& e) {
                          throw WorkspaceTimeoutError(e.what(), "", "", e.timeout());
                        }
                      })));
  out.push_back(local("abandons-on-timeout",
                      "on timeout run() stops waiting but leaves the command and its group "
                      "running",
                      {"cmd.timeout-stops-group"}, plain<AbandonsOnTimeout>()));
  out.push_back(
      local("accepts-invalid-timeout", "a zero, negative, NaN or infinite timeout means no timeout",
            {"cmd.timeout-invalid"},
            run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
              RunOptions fixed = o;
              if (o.timeout && !(o.timeout->count() > 0 && std::isfinite(o.timeout->count()))) {
                fixed.timeout.reset();
              }
              return forward(b, c, fixed);
            })));
  out.push_back(local("ignores-stop-token", "the cancellation token is not passed on",
                      {"cmd.cancellation"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        RunOptions unstoppable = o;
                        unstoppable.stop = {};
                        return forward(b, c, unstoppable);
                      })));
  out.push_back(local("drops-call-env", "the per-call env is not passed on", {"cmd.env-added"},
                      run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
                        RunOptions bare = o;
                        bare.env.clear();
                        return forward(b, c, bare);
                      })));
  out.push_back(local("passes-host-env",
                      "every variable of the host process is added to each command's env",
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
      local("starts-in-tmp", "commands start in /tmp instead of the working directory",
            {"cmd.starts-in-working-dir"},
            run_editor([](WorkspaceBackend& b, const Command& c, const RunOptions& o) {
              if (c.is_shell()) return forward(b, Shell{"cd /tmp || exit 1\n" + c.script()}, o);
              std::vector<std::string> items = {"sh", "-c", "cd /tmp && exec \"$@\"", "sh"};
              items.insert(items.end(), c.argv().begin(), c.argv().end());
              return forward(b, Argv{items}, o);
            })));
  out.push_back(local("coalesces-concurrent-runs",
                      "a run() that starts while another runs gets the other's result",
                      {"cmd.concurrent"}, plain<CoalescesConcurrentRuns>()));

  // Files.
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      workspace::require_absolute_path(p);
      if (!b.exists(parent_of(p))) {
        throw workspace::make_path_error("write_bytes", p, std::errc::no_such_file_or_directory);
      }
      b.write_bytes(p, d);
    };
    out.push_back(local("forgets-parents", "write_bytes does not create missing parents",
                        {"fs.bytes-round-trip"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.read = [](ForwardingBackend& b, const std::string& p) {
      return workspace::repair_utf8(b.read_bytes(p));
    };
    out.push_back(local("reads-files-as-text",
                        "read_bytes decodes files as UTF-8 text, mangling bytes >= 0x80",
                        {"fs.bytes-round-trip", "fs.large-round-trip"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      std::string old;
      try {
        old = b.read_bytes(p);
      } catch (...) {
      }
      b.write_bytes(p, old + d);
    };
    out.push_back(local("write-appends", "write_bytes to an existing file appends",
                        {"fs.bytes-round-trip", "fs.empty-file"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      if (!d.empty()) b.write_bytes(p, d);
    };
    out.push_back(local("skips-empty-write", "write_bytes with no data does nothing",
                        {"fs.empty-file"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.read = [](ForwardingBackend& b, const std::string& p) {
      std::string data = b.read_bytes(p);
      if (data.size() > 32u * 1024 * 1024) data.resize(32u * 1024 * 1024);
      return data;
    };
    out.push_back(local("caps-reads-at-32mib", "read_bytes returns at most 32 MiB",
                        {"fs.large-round-trip"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.exists = [](ForwardingBackend& b, const std::string& p) {
      return b.exists(p) && !b.stat(p).is_dir;
    };
    out.push_back(local("exists-files-only", "exists() is false for directories", {"fs.exists"},
                        file_editor(e)));
  }
  {
    FileEdits e;
    e.list = [](ForwardingBackend& b, const std::string& p) {
      auto entries = b.list_dir(p);
      std::reverse(entries.begin(), entries.end());
      return entries;
    };
    out.push_back(local("list-unsorted", "list_dir returns entries in reverse name order",
                        {"fs.stat-and-list"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.make_dir = [](ForwardingBackend& b, const std::string& p) {
      workspace::require_absolute_path(p);
      if (!b.exists(parent_of(workspace::normalize_path(p)))) {
        throw workspace::make_path_error("make_dir", p, std::errc::no_such_file_or_directory);
      }
      b.make_dir(p);
    };
    out.push_back(local("make-dir-no-parents", "make_dir does not create missing parents",
                        {"fs.make-dir"}, file_editor(e)));
  }
  out.push_back(local("files-in-memory",
                      "write_bytes keeps files in the backend's memory; commands never see them",
                      {"fs.shared-with-commands"}, plain<FilesInMemory>()));
  {
    FileEdits e;
    e.read = errc_edit(std::errc::no_such_file_or_directory,
                       [](ForwardingBackend&, const std::string&) { return std::string(); });
    out.push_back(local("missing-reads-empty", "read_bytes of a missing file returns nothing",
                        {"fs.missing-not-found"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.read = errc_edit(std::errc::is_a_directory,
                       [](ForwardingBackend&, const std::string&) { return std::string(); });
    out.push_back(local("read-dir-empty", "read_bytes of a directory returns nothing",
                        {"fs.read-dir-is-a-directory"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      try {
        b.write_bytes(p, d);
      } catch (const fs::filesystem_error& err) {
        if (!has_errc(err, std::errc::is_a_directory)) throw;
        b.remove(p);
        b.write_bytes(p, d);
      }
    };
    out.push_back(local("write-replaces-dir",
                        "write_bytes to a directory removes the directory and writes a file",
                        {"fs.write-dir-is-a-directory"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.list = [](ForwardingBackend& b, const std::string& p) {
      try {
        return b.list_dir(p);
      } catch (const fs::filesystem_error& err) {
        if (!has_errc(err, std::errc::not_a_directory)) throw;
        return std::vector<FileEntry>{b.stat(p)};
      }
    };
    out.push_back(local("list-file-as-entry", "list_dir of a file lists the file itself",
                        {"fs.list-file-not-a-directory"}, file_editor(e)));
  }
  {
    // Every call maps not_a_directory to no_such_file_or_directory.
    auto remap = [](auto&& call) -> decltype(call()) {
      try {
        return call();
      } catch (const fs::filesystem_error& err) {
        if (!has_errc(err, std::errc::not_a_directory)) throw;
        throw workspace::make_path_error("path", err.path1().string(),
                                         std::errc::no_such_file_or_directory);
      }
    };
    FileEdits e;
    e.read = [remap](ForwardingBackend& b, const std::string& p) {
      return remap([&] { return b.read_bytes(p); });
    };
    e.write = [remap](ForwardingBackend& b, const std::string& p, const std::string& d) {
      remap([&] {
        b.write_bytes(p, d);
        return 0;
      });
    };
    e.stat = [remap](ForwardingBackend& b, const std::string& p) {
      return remap([&] { return b.stat(p); });
    };
    e.list = [remap](ForwardingBackend& b, const std::string& p) {
      return remap([&] { return b.list_dir(p); });
    };
    out.push_back(
        local("file-parent-enoent",
              "a file used as a parent directory is reported as no_such_file_or_directory",
              {"fs.file-as-parent-not-a-directory"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.make_dir = [](ForwardingBackend& b, const std::string& p) {
      try {
        b.make_dir(p);
      } catch (const fs::filesystem_error& err) {
        if (!has_errc(err, std::errc::file_exists)) throw;
      }
    };
    out.push_back(local("make-dir-over-file-silent", "make_dir over a file succeeds silently",
                        {"fs.make-dir-over-file-exists"}, file_editor(e)));
  }
  {
    MutantSpec spec;
    spec.traits = [](SessionTraits& t) { t.deviations.commands_run_as_root = false; };
    FileEdits e;
    e.read = errc_edit(std::errc::permission_denied, [](ForwardingBackend&, const std::string& p) {
      throw workspace::make_path_error("read_bytes", p, std::errc::no_such_file_or_directory);
      return std::string();
    });
    spec.decorate = file_editor(e);
    out.push_back(local(
        "permission-denied-hidden",
        "permission_denied is reported as no_such_file_or_directory, and commands running as root "
        "are not declared (as root, only the undeclared deviation can be caught)",
        {"fs.permission-denied"}, spec));
  }
  {
    FileEdits e;
    e.read = [](ForwardingBackend& b, const std::string& p) {
      std::error_code ec;
      if (fs::status(p, ec).type() != fs::file_type::fifo) return b.read_bytes(p);
      std::ifstream in(p, std::ios::binary);  // blocks until a writer opens the FIFO
      std::ostringstream data;
      data << in.rdbuf();
      return data.str();
    };
    out.push_back(local("blocking-fifo-read",
                        "read_bytes opens special files like regular ones, blocking on a FIFO",
                        {"fs.fifo-read-does-not-hang"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.list = [](ForwardingBackend& b, const std::string& p) {
      auto entries = b.list_dir(p);
      for (auto& entry : entries) entry.is_dir = fs::is_directory(entry.path);  // throws on ELOOP
      return entries;
    };
    out.push_back(local("list-breaks-on-link-loop",
                        "list_dir re-stats every entry and fails on a looping link",
                        {"fs.symlink-loop-listing"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.remove = [](ForwardingBackend& b, const std::string& p) {
      workspace::require_absolute_path(p);
      std::error_code ec;
      if (!fs::is_symlink(p, ec) && b.exists(p) && b.stat(p).is_dir && !b.list_dir(p).empty()) {
        throw workspace::make_path_error("remove", p, std::errc::directory_not_empty);
      }
      b.remove(p);
    };
    out.push_back(local("remove-not-recursive", "remove of a non-empty directory fails",
                        {"fs.remove-file-or-tree"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.remove = [](ForwardingBackend& b, const std::string& p) { b.remove(b.realpath(p)); };
    out.push_back(local("remove-follows-link", "remove resolves links and removes the target",
                        {"fs.remove-link-not-target"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.remove = [](ForwardingBackend& b, const std::string& p) {
      workspace::require_absolute_path(p);
      const std::string wd = b.working_dir();
      if (workspace::normalize_path(p) == wd) {
        // Only the working directory itself: the rule stops at the first path not refused.
        std::error_code ec;
        fs::remove_all(wd, ec);
        return;
      }
      b.remove(p);
    };
    out.push_back(local("removes-working-dir", "remove of the working directory removes it",
                        {"fs.remove-refuses-working-dir"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      if (b.exists(p)) b.remove(p);
      b.write_bytes(p, d);
    };
    out.push_back(local("write-by-replace",
                        "write_bytes removes an existing path and writes a new file (a link is "
                        "replaced, not written through)",
                        {"fs.write-through-symlink"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      b.write_bytes(p, d);
      std::error_code ec;
      fs::permissions(p, fs::perms(0644), ec);
    };
    out.push_back(local("write-resets-mode", "write_bytes leaves every file with mode 0644",
                        {"fs.write-keeps-mode"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.list = [](ForwardingBackend& b, const std::string& p) {
      workspace::require_absolute_path(p);
      auto r = b.run(Argv{{"ls", "-1A", "--", p}}, {});
      std::vector<FileEntry> entries;
      std::istringstream lines(r.out);
      for (std::string name; std::getline(lines, name);) {
        FileEntry entry{name, p + "/" + name, false, std::nullopt};
        try {
          entry = b.stat(entry.path);
        } catch (...) {
        }
        entries.push_back(entry);
      }
      return entries;
    };
    out.push_back(local("list-via-ls", "list_dir parses `ls -1A`, splitting names at newlines",
                        {"fs.odd-names"}, file_editor(e)));
  }
  {
    // Every path call resolves a relative path from the working directory.
    auto absolute = [](ForwardingBackend& b, const std::string& p) {
      return !p.empty() && p[0] == '/' ? p : b.working_dir() + "/" + p;
    };
    FileEdits e;
    e.read = [absolute](ForwardingBackend& b, const std::string& p) {
      return b.read_bytes(absolute(b, p));
    };
    e.write = [absolute](ForwardingBackend& b, const std::string& p, const std::string& d) {
      b.write_bytes(absolute(b, p), d);
    };
    e.stat = [absolute](ForwardingBackend& b, const std::string& p) {
      return b.stat(absolute(b, p));
    };
    e.list = [absolute](ForwardingBackend& b, const std::string& p) {
      return b.list_dir(absolute(b, p));
    };
    e.make_dir = [absolute](ForwardingBackend& b, const std::string& p) {
      b.make_dir(absolute(b, p));
    };
    e.remove = [absolute](ForwardingBackend& b, const std::string& p) { b.remove(absolute(b, p)); };
    e.exists = [absolute](ForwardingBackend& b, const std::string& p) {
      return b.exists(absolute(b, p));
    };
    out.push_back(local("relative-from-working-dir",
                        "relative paths are resolved from the working directory, not rejected",
                        {"fs.relative-path-rejected"}, file_editor(e)));
  }

  // Realpath.
  {
    FileEdits e;
    e.realpath = [](ForwardingBackend&, const std::string& p) {
      workspace::require_absolute_path(p);
      return workspace::normalize_path(p);
    };
    out.push_back(local("realpath-lexical", "realpath only normalizes the text; links stay",
                        {"path.realpath"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.realpath = slow_loop_realpath;
    out.push_back(local("realpath-slow-loop",
                        "a link loop is followed hop by hop with no hop limit (30 s to give up)",
                        {"path.realpath-loop"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.stat = [](ForwardingBackend& b, const std::string& p) {
      return entry_not_following(b.stat(p));
    };
    e.list = [](ForwardingBackend& b, const std::string& p) {
      auto entries = b.list_dir(p);
      for (auto& entry : entries) entry = entry_not_following(entry);
      return entries;
    };
    out.push_back(local("entries-do-not-follow-links",
                        "stat and list_dir describe a link itself (lstat), never as a directory",
                        {"path.entries-follow-links"}, file_editor(e)));
  }
}

}  // namespace lizard::conformance::mutants
