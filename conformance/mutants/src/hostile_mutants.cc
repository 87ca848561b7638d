// Mutants for the rules about what commands and callers really do: the exact
// environment, commands that turn on the backend, arguments the kernel
// refuses, names that look like errors, paths a backend cannot carry and
// crafted refs. Each is a defect a real backend had or would easily have.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "lizard/workspace/errors.h"
#include "lizard/workspace/utf8.h"
#include "mutant_support.h"

namespace lizard::conformance::mutants {

namespace {

namespace fs = std::filesystem;
using workspace::Argv;
using workspace::Shell;
using workspace::WorkspaceError;

// Runs an argv with env through `sh -c 'exec "$@"'`: the shell drops the
// variables whose names are not identifiers and resets IFS.
class EnvThroughShell : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (c.is_shell() || o.env.empty()) return ForwardingBackend::run(c, o);
    std::vector<std::string> argv = {"sh", "-c", "exec \"$@\"", "sh"};
    argv.insert(argv.end(), c.argv().begin(), c.argv().end());
    return ForwardingBackend::run(Argv{argv}, o);
  }
};

// Runs a shell string under a helper shell whose argv holds the script and
// which reports the exit status on a last line; without that line (the
// helper was killed) the outcome is "unknown".
class HelperArgvHoldsCommand : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (!c.is_shell()) return ForwardingBackend::run(c, o);
    auto r = ForwardingBackend::run(
        Argv{{"sh", "-c", "sh -c \"$1\"; echo \"lz-rc=$?\"", "lz-helper", c.script()}}, o);
    const auto at = r.out.rfind("lz-rc=");
    if (at == std::string::npos || r.out.back() != '\n') {
      throw WorkspaceError("the command's outcome is unknown: its helper is gone");
    }
    r.exit_code = std::stoi(r.out.substr(at + 6));
    r.out.erase(at);
    return r;
  }
};

// Keeps a shell command's output in files under /tmp and reads them back
// when it ends: a command that empties /tmp takes them away.
class StateInTmp : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (!c.is_shell()) return ForwardingBackend::run(c, o);
    const std::string script =
        "mkdir -p /tmp/.lz-state || exit 125\n"
        "(\n" +
        c.script() +
        "\n) >/tmp/.lz-state/$$.out 2>/tmp/.lz-state/$$.err\n"
        "rc=$?\n"
        "cat /tmp/.lz-state/$$.out && cat /tmp/.lz-state/$$.err >&2 || exit 125\n"
        "rm -f /tmp/.lz-state/$$.out /tmp/.lz-state/$$.err\n"
        "exit $rc\n";
    auto r = ForwardingBackend::run(Shell{script}, o);
    if (r.exit_code == 125) throw WorkspaceError("the command's result files are gone");
    return r;
  }
};

// Retries what the kernel refused with E2BIG, then calls it unknown.
class E2bigAsUnknown : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  CommandResult run(const Command& c, const RunOptions& o) override {
    for (int attempt = 0;; ++attempt) {
      try {
        return ForwardingBackend::run(c, o);
      } catch (const WorkspaceError& e) {
        const std::string message = e.what();
        if (message.find("rgument list too long") == std::string::npos) throw;
        if (attempt == 3) throw WorkspaceError("the command's outcome is unknown");
      }
    }
  }
};

// The errc a message names, read from its text (which holds the path too).
std::errc errc_from_text(const std::string& text, std::errc fallback) {
  const std::pair<const char*, std::errc> kTexts[] = {
      {"File exists", std::errc::file_exists},
      {"Too many levels of symbolic links", std::errc::too_many_symbolic_link_levels},
      {"Not a directory", std::errc::not_a_directory},
      {"No such file or directory", std::errc::no_such_file_or_directory},
      {"Is a directory", std::errc::is_a_directory},
  };
  for (const auto& [needle, code] : kTexts) {
    if (text.find(needle) != std::string::npos) return code;
  }
  return fallback;
}

// Calls `f`, re-raising a path error with the errc its message text names.
template <typename F>
auto classified_by_text(const std::string& path, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const fs::filesystem_error& e) {
    const auto code = static_cast<std::errc>(e.code().value());
    throw workspace::make_path_error("operation", path, errc_from_text(e.what(), code));
  }
}

bool odd_ref_shape(const std::string& id) {
  return id.empty() || id == "." || id == ".." || id.find_first_of("/?#%") != std::string::npos;
}

// Decorates every file call: a path that is not UTF-8 fails as the HTTP 400
// a JSON parser answers to it, not as std::invalid_argument.
FileEdits generic_error_for_bad_bytes() {
  auto guard = [](const std::string& p) {
    if (!workspace::is_valid_utf8(p)) throw WorkspaceError("HTTP 400: Malformed JSON");
  };
  FileEdits e;
  e.read = [guard](ForwardingBackend& b, const std::string& p) {
    guard(p);
    return b.read_bytes(p);
  };
  e.write = [guard](ForwardingBackend& b, const std::string& p, const std::string& d) {
    guard(p);
    b.write_bytes(p, d);
  };
  e.stat = [guard](ForwardingBackend& b, const std::string& p) {
    guard(p);
    return b.stat(p);
  };
  e.exists = [guard](ForwardingBackend& b, const std::string& p) {
    guard(p);
    return b.exists(p);
  };
  return e;
}

FileEdits errors_from_text() {
  FileEdits e;
  e.read = [](ForwardingBackend& b, const std::string& p) {
    return classified_by_text(p, [&] { return b.read_bytes(p); });
  };
  e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
    classified_by_text(p, [&] { b.write_bytes(p, d); });
  };
  e.make_dir = [](ForwardingBackend& b, const std::string& p) {
    classified_by_text(p, [&] { b.make_dir(p); });
  };
  e.stat = [](ForwardingBackend& b, const std::string& p) {
    return classified_by_text(p, [&] { return b.stat(p); });
  };
  e.list = [](ForwardingBackend& b, const std::string& p) {
    return classified_by_text(p, [&] { return b.list_dir(p); });
  };
  return e;
}

}  // namespace

void add_hostile_mutants(std::vector<Mutant>& out) {
  out.push_back(local_mutant(
      "env-through-a-shell",
      "an argv run with env goes through sh -c 'exec \"$@\"', which drops names that are not "
      "identifiers and resets IFS",
      {"cmd.env-exact"}, plain<EnvThroughShell>()));
  out.push_back(local_mutant(
      "helper-argv-holds-command",
      "a shell command runs under a helper whose argv holds its text; when the command kills "
      "what matches its text, the helper dies and the outcome is unknown",
      {"cmd.command-cannot-break-the-backend"}, plain<HelperArgvHoldsCommand>()));
  out.push_back(lizard_mutant(
      "state-in-tmp",
      "a shell command's output is kept in files under /tmp, which the command may empty",
      {"cmd.command-cannot-break-the-backend"}, plain<StateInTmp>()));
  out.push_back(local_mutant(
      "e2big-as-outcome-unknown",
      "an argument list the kernel refuses is retried and then reported as an unknown outcome",
      {"cmd.argument-list-too-long"}, plain<E2bigAsUnknown>()));
  out.push_back(
      local_mutant("errors-from-message-text",
                   "path errors are classified by the text of their message, which holds the path",
                   {"fs.names-that-look-like-errors"}, file_editor(errors_from_text())));
  out.push_back(
      lizard_mutant("path-bytes-as-http-400",
                    "a path that is not UTF-8 is sent as it is and fails as a generic HTTP 400",
                    {"fs.unrepresentable-paths"}, file_editor(generic_error_for_bad_bytes())));
  {
    MutantSpec spec;
    spec.overrides = [](BackendOverrides& o, const Origin&) {
      if (o.ref && odd_ref_shape(o.ref->id)) o.ref.reset();
    };
    out.push_back(lizard_mutant(
        "ignores-malformed-ref",
        "a ref whose id cannot name a sandbox is ignored: the backend creates a new sandbox",
        {"lizard.ref-shapes"}, spec));
  }
}

}  // namespace lizard::conformance::mutants
