#include "lizard/workspace/local_workspace_backend.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>

#include "lizard/workspace/checks.h"
#include "lizard/workspace/errors.h"
#include "local/local_files.h"
#include "local/local_process.h"

namespace lizard::workspace {

namespace {

constexpr std::string_view kProvider = "local";
// Where commands look for programs: the usual system directories, nothing of
// the host process's PATH.
constexpr std::string_view kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string canonical(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) {
    throw WorkspaceUnavailableError("local environment: cannot resolve " + path + ": " +
                                    std::generic_category().message(errno));
  }
  return buffer;
}

std::string create_root(const std::string& requested) {
  if (requested.empty()) {
    // temp_directory_path() honours TMPDIR, so no environment variable is read here.
    std::string pattern = (std::filesystem::temp_directory_path() / "lizard-local-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw WorkspaceUnavailableError("local environment: cannot create a directory under " +
                                      std::filesystem::temp_directory_path().string() + ": " +
                                      std::generic_category().message(errno));
    }
    return canonical(pattern);
  }
  const std::string absolute = std::filesystem::absolute(requested).string();
  try {
    internal::make_directories(absolute);
  } catch (const std::filesystem::filesystem_error& error) {
    throw WorkspaceUnavailableError("local environment: cannot create " + absolute + ": " +
                                    error.code().message());
  }
  return canonical(absolute);
}

std::string join(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (out.back() != '/') out += '/';
  out += name;
  return out;
}

// Owns the eventfd through which stop requests and destroy() wake a run.
class EventFd {
 public:
  EventFd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) {
      throw WorkspaceError("local backend: eventfd: " + std::generic_category().message(errno));
    }
  }
  ~EventFd() { ::close(fd_); }
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

class LocalWorkspaceBackend::Impl {
 public:
  explicit Impl(LocalOptions options) : options_(std::move(options)) {
    validate_env(options_.env, "LocalOptions::env");
    if (options_.ref) {
      if (options_.ref->provider != kProvider) {
        throw std::invalid_argument("a local backend attaches only to refs of provider \"local\"");
      }
      require_absolute_path(options_.ref->id);
      // Attaching does no I/O: a missing directory is reported on first use.
      root_ = normalize_path(options_.ref->id);
      ref_ = *options_.ref;
    } else {
      root_ = create_root(options_.root);
      ref_ = WorkspaceRef{std::string(kProvider), root_};
    }
  }

  const std::string& root() const { return root_; }
  const WorkspaceRef& ref() const { return ref_; }

  void ensure_available() const {
    if (destroyed_.load()) throw WorkspaceUnavailableError("the local environment was destroyed");
    struct stat st {};
    if (::stat(root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw WorkspaceUnavailableError("the local environment " + root_ + " no longer exists");
    }
  }

  CommandResult run(const Command& command, const RunOptions& options) {
    validate_run(command, options);
    ensure_available();
    if (options.stop.stop_requested()) {
      throw WorkspaceCancelledError("the command was cancelled before it started");
    }

    // Views into the options: a value is copied once, into spec.env (an
    // environment of megabytes is copied as few times as it can be).
    std::map<std::string_view, std::string_view> env{
        {"PATH", kDefaultPath}, {"HOME", root_}, {"LANG", "C.UTF-8"}};
    for (const auto& [name, value] : options_.env) env[name] = value;
    for (const auto& [name, value] : options.env) env[name] = value;
    internal::ProcessSpec spec;
    spec.cwd = root_;
    spec.env.reserve(env.size());
    for (const auto& [name, value] : env) {
      std::string& entry = spec.env.emplace_back();
      entry.reserve(name.size() + 1 + value.size());
      entry.append(name).append("=").append(value);
    }

    EventFd wake;
    const std::uint64_t id = enter(wake.get());
    struct Leave {
      Impl* impl;
      std::uint64_t id;
      ~Leave() { impl->leave(id); }
    } leave{this, id};

    internal::ProcessControl control;
    control.timeout = options.timeout;
    control.stop = options.stop;
    control.wake_fd = wake.get();
    control.started = [this, id](pid_t group) { return started(id, group); };
    control.destroyed = [this] { return destroyed_.load(); };

    std::optional<internal::ProcessOutcome> outcome;
    int spawn_error = 0;
    if (command.is_shell()) {
      spec.program = "/bin/sh";
      spec.argv = {"sh", "-c", command.script()};
      outcome = internal::run_process(spec, control, &spawn_error);
      if (!outcome) return not_run(spec.argv[0], spawn_error);
    } else {
      outcome = run_argv(command.argv(), std::string(env["PATH"]), spec, control, &spawn_error);
      if (!outcome) return not_run(command.argv().front(), spawn_error);
    }

    if (outcome->group_lingers) {
      auto members = internal::own_group_members(outcome->group);
      const std::lock_guard lock(mutex_);
      if (!members.empty()) lingering_[outcome->group] = std::move(members);
    }
    if (destroyed_.load()) {
      throw WorkspaceUnavailableError("the local environment was destroyed while the command ran");
    }
    return std::move(outcome->result);
  }

  void destroy() {
    {
      const std::lock_guard lock(mutex_);
      if (destroyed_.exchange(true)) return;
      for (const auto& [id, running] : running_) {
        // The leader is not reaped yet, so its group id cannot have been reused.
        if (running.group > 0) ::kill(-running.group, SIGKILL);
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(running.wake_fd, &one, sizeof one);
      }
      for (const auto& [group, members] : lingering_) {
        internal::signal_group_of(group, members, SIGKILL);
      }
      lingering_.clear();
    }
    // Killed processes may still be finishing a write into the tree; a few
    // attempts outlast them.
    for (int attempt = 0;; ++attempt) {
      try {
        internal::remove_path(root_, /*force=*/true);
        return;
      } catch (const std::filesystem::filesystem_error& error) {
        if (error.code() == std::errc::no_such_file_or_directory) return;
        if (attempt >= 50) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  struct Running {
    int wake_fd = -1;
    pid_t group = 0;
  };

  std::uint64_t enter(int wake_fd) {
    const std::lock_guard lock(mutex_);
    if (destroyed_.load()) throw WorkspaceUnavailableError("the local environment was destroyed");
    const std::uint64_t id = next_id_++;
    running_[id] = Running{wake_fd, 0};
    return id;
  }

  void leave(std::uint64_t id) {
    const std::lock_guard lock(mutex_);
    running_.erase(id);
  }

  bool started(std::uint64_t id, pid_t group) {
    const std::lock_guard lock(mutex_);
    if (destroyed_.load()) return false;
    running_[id].group = group;
    return true;
  }

  // Like execvp: a program name without '/' is searched on the command's
  // PATH; a file that is found but cannot be executed makes 126 unless a
  // later directory has an executable one; a script without "#!" runs with sh.
  std::optional<internal::ProcessOutcome> run_argv(const std::vector<std::string>& argv,
                                                   const std::string& path_value,
                                                   internal::ProcessSpec& spec,
                                                   const internal::ProcessControl& control,
                                                   int* spawn_error) {
    spec.argv = argv;
    const std::string& name = argv.front();
    std::vector<std::string> candidates;
    if (name.find('/') != std::string::npos) {
      candidates.push_back(name.front() == '/' ? name : join(root_, name));
    } else {
      std::size_t start = 0;
      for (;;) {
        const std::size_t colon = path_value.find(':', start);
        std::string dir = path_value.substr(
            start, colon == std::string::npos ? std::string::npos : colon - start);
        // An empty PATH element means the current directory, which is the root.
        if (dir.empty() || dir.front() != '/') dir = dir.empty() ? root_ : join(root_, dir);
        candidates.push_back(join(dir, name));
        if (colon == std::string::npos) break;
        start = colon + 1;
      }
    }
    bool denied = false;
    for (const auto& candidate : candidates) {
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0) {
        if (errno == EACCES) denied = true;
        continue;
      }
      if (!S_ISREG(st.st_mode) || ::access(candidate.c_str(), X_OK) != 0) {
        denied = true;
        continue;
      }
      spec.program = candidate;
      spec.argv = argv;
      int error = 0;
      auto outcome = internal::run_process(spec, control, &error);
      if (outcome) return outcome;
      *spawn_error = error;
      if (error == ENOEXEC) {
        spec.program = "/bin/sh";
        spec.argv = {"sh", candidate};
        spec.argv.insert(spec.argv.end(), argv.begin() + 1, argv.end());
        return internal::run_process(spec, control, spawn_error);
      }
      if (error == EACCES || error == EPERM || error == EISDIR) {
        denied = true;
      } else if (error != ENOENT && error != ENOTDIR) {
        break;
      }
    }
    if (*spawn_error == 0 || *spawn_error == ENOENT || *spawn_error == ENOTDIR) {
      *spawn_error = denied ? EACCES : ENOENT;
    }
    return std::nullopt;
  }

  // The command never started. 127 and 126 are results, as a shell reports
  // them, unless the environment itself has gone.
  CommandResult not_run(const std::string& name, int error) const {
    ensure_available();
    if (error == ENOENT || error == ENOTDIR) return CommandResult{127, "", name + ": not found\n"};
    if (error == EACCES || error == EPERM || error == EISDIR) {
      return CommandResult{126, "", name + ": Permission denied\n"};
    }
    throw WorkspaceError("local backend: cannot start " + name + ": " +
                         std::generic_category().message(error));
  }

  LocalOptions options_;
  std::string root_;
  WorkspaceRef ref_;
  std::atomic<bool> destroyed_{false};
  std::mutex mutex_;
  std::map<std::uint64_t, Running> running_;
  std::uint64_t next_id_ = 0;
  // Process groups whose background members outlived their command.
  // Groups of commands whose background children outlived them, with the
  // members seen then (stopped at destroy only while one of them lives).
  std::map<pid_t, std::vector<internal::ProcessIdentity>> lingering_;
};

LocalWorkspaceBackend::LocalWorkspaceBackend(LocalOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

LocalWorkspaceBackend::~LocalWorkspaceBackend() = default;

std::optional<WorkspaceRef> LocalWorkspaceBackend::ref() const { return impl_->ref(); }

std::string LocalWorkspaceBackend::working_dir() const { return impl_->root(); }

void LocalWorkspaceBackend::destroy() { impl_->destroy(); }

CommandResult LocalWorkspaceBackend::run(const Command& command, const RunOptions& options) {
  return impl_->run(command, options);
}

std::string LocalWorkspaceBackend::read_bytes(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  return internal::read_file(path);
}

void LocalWorkspaceBackend::write_bytes(const std::string& path, const std::string& data) {
  require_absolute_path(path);
  impl_->ensure_available();
  internal::write_file(path, data);
}

FileEntry LocalWorkspaceBackend::stat(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  return internal::stat_entry(path);
}

std::vector<FileEntry> LocalWorkspaceBackend::list_dir(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  return internal::list_directory(path);
}

void LocalWorkspaceBackend::make_dir(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  internal::make_directories(path);
}

void LocalWorkspaceBackend::remove(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  refuse_remove_of_working_dir(path, impl_->root());
  // The lexical check cannot see links: resolve everything but the last
  // component (which remove never follows) and check again.
  const auto [parent, name] = internal::split_last(internal::clean_path(path));
  const std::string target =
      name == ".." ? internal::resolve_path(path) : join(internal::resolve_path(parent), name);
  refuse_remove_of_working_dir(target, impl_->root());
  // A backend attached by a ref through a symbolic link has a root that is
  // not the directory's real path: compare with that too.
  refuse_remove_of_working_dir(target, internal::resolve_path(impl_->root()));
  try {
    internal::remove_path(target);
  } catch (const std::filesystem::filesystem_error& error) {
    throw make_path_error("remove", path, static_cast<std::errc>(error.code().value()));
  }
}

bool LocalWorkspaceBackend::exists(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  return internal::path_exists(path);
}

std::string LocalWorkspaceBackend::realpath(const std::string& path) {
  require_absolute_path(path);
  impl_->ensure_available();
  return internal::resolve_path(path);
}

}  // namespace lizard::workspace
