// Mutants of LocalWorkspaceBackend for the file and realpath rules. Several
// reach the host filesystem directly: the local backend's paths are host
// paths, and a naive implementation would do just that.
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

}  // namespace

void add_file_and_realpath_mutants(std::vector<Mutant>& out) {
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
    out.push_back(local_mutant("forgets-parents", "write_bytes does not create missing parents",
                               {"fs.bytes-round-trip"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.read = [](ForwardingBackend& b, const std::string& p) {
      return workspace::repair_utf8(b.read_bytes(p));
    };
    out.push_back(local_mutant("reads-files-as-text",
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
    out.push_back(local_mutant("write-appends", "write_bytes to an existing file appends",
                               {"fs.bytes-round-trip", "fs.empty-file"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      if (!d.empty()) b.write_bytes(p, d);
    };
    out.push_back(local_mutant("skips-empty-write", "write_bytes with no data does nothing",
                               {"fs.empty-file"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.read = [](ForwardingBackend& b, const std::string& p) {
      std::string data = b.read_bytes(p);
      if (data.size() > 32u * 1024 * 1024) data.resize(32u * 1024 * 1024);
      return data;
    };
    out.push_back(local_mutant("caps-reads-at-32mib", "read_bytes returns at most 32 MiB",
                               {"fs.large-round-trip"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.exists = [](ForwardingBackend& b, const std::string& p) {
      return b.exists(p) && !b.stat(p).is_dir;
    };
    out.push_back(local_mutant("exists-files-only", "exists() is false for directories",
                               {"fs.exists"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.list = [](ForwardingBackend& b, const std::string& p) {
      auto entries = b.list_dir(p);
      std::reverse(entries.begin(), entries.end());
      return entries;
    };
    out.push_back(local_mutant("list-unsorted", "list_dir returns entries in reverse name order",
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
    out.push_back(local_mutant("make-dir-no-parents", "make_dir does not create missing parents",
                               {"fs.make-dir"}, file_editor(e)));
  }
  out.push_back(local_mutant(
      "files-in-memory", "write_bytes keeps files in the backend's memory; commands never see them",
      {"fs.shared-with-commands"}, plain<FilesInMemory>()));
  {
    FileEdits e;
    e.read = errc_edit(std::errc::no_such_file_or_directory,
                       [](ForwardingBackend&, const std::string&) { return std::string(); });
    out.push_back(local_mutant("missing-reads-empty",
                               "read_bytes of a missing file returns nothing",
                               {"fs.missing-not-found"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.read = errc_edit(std::errc::is_a_directory,
                       [](ForwardingBackend&, const std::string&) { return std::string(); });
    out.push_back(local_mutant("read-dir-empty", "read_bytes of a directory returns nothing",
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
    out.push_back(local_mutant("write-replaces-dir",
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
    out.push_back(local_mutant("list-file-as-entry", "list_dir of a file lists the file itself",
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
        local_mutant("file-parent-enoent",
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
    out.push_back(local_mutant("make-dir-over-file-silent",
                               "make_dir over a file succeeds silently",
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
    out.push_back(local_mutant(
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
    out.push_back(
        local_mutant("blocking-fifo-read",
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
    out.push_back(local_mutant("list-breaks-on-link-loop",
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
    out.push_back(local_mutant("remove-not-recursive", "remove of a non-empty directory fails",
                               {"fs.remove-file-or-tree"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.remove = [](ForwardingBackend& b, const std::string& p) { b.remove(b.realpath(p)); };
    out.push_back(local_mutant("remove-follows-link",
                               "remove resolves links and removes the target",
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
    out.push_back(local_mutant("removes-working-dir", "remove of the working directory removes it",
                               {"fs.remove-refuses-working-dir"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.write = [](ForwardingBackend& b, const std::string& p, const std::string& d) {
      if (b.exists(p)) b.remove(p);
      b.write_bytes(p, d);
    };
    out.push_back(
        local_mutant("write-by-replace",
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
    out.push_back(local_mutant("write-resets-mode", "write_bytes leaves every file with mode 0644",
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
    out.push_back(local_mutant("list-via-ls",
                               "list_dir parses `ls -1A`, splitting names at newlines",
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
    out.push_back(
        local_mutant("relative-from-working-dir",
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
    out.push_back(local_mutant("realpath-lexical", "realpath only normalizes the text; links stay",
                               {"path.realpath"}, file_editor(e)));
  }
  {
    FileEdits e;
    e.realpath = slow_loop_realpath;
    out.push_back(
        local_mutant("realpath-slow-loop",
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
    out.push_back(
        local_mutant("entries-do-not-follow-links",
                     "stat and list_dir describe a link itself (lstat), never as a directory",
                     {"path.entries-follow-links"}, file_editor(e)));
  }
}

}  // namespace lizard::conformance::mutants
