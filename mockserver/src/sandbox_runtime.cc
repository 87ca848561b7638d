#include "sandbox_runtime.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include "file_trees.h"
#include "sandbox_launch.h"
#include "scoped_fd.h"

namespace lizard::mock::internal {

SandboxSettings sandbox_settings_for_this_process(const MockOptions& options) {
  SandboxSettings s;
  s.limits = options.sandbox_limits;
  if (s.limits.max_processes < 1 || s.limits.max_processes_all_sandboxes < 1)
    throw std::invalid_argument("the process limits must be at least 1");
  if (::geteuid() == 0) {
    constexpr std::uint32_t kMost = 0xfffffffeu - 65536;
    if (options.root_id_base == 0 || options.root_id_base > kMost)
      throw std::invalid_argument("root_id_base must be at least 1 and at most " +
                                  std::to_string(kMost) +
                                  " (the sandboxes' 65,536 ids and their owner's follow it)");
    s.owner_uid = options.root_id_base + 65536;
    s.ids.uid_base = options.root_id_base;
    s.ids.gid_base = options.root_id_base;
    s.ids.count = 65536;
    s.ids.chown = true;
  } else {
    s.ids.uid_base = ::geteuid();
    s.ids.gid_base = ::getegid();
    s.ids.count = 1;
    s.ids.chown = false;
  }
  return s;
}

SandboxRuntime::SandboxRuntime(std::string base_dir, std::string workspace_dir,
                               const SandboxSettings& settings, const std::string& hostname)
    : base_dir_(std::move(base_dir)),
      workspace_dir_(std::move(workspace_dir)),
      external_workspace_(!workspace_dir_.empty()),
      settings_(settings) {
  namespace fs = std::filesystem;
  home_dir_ = base_dir_ + "/home";
  if (workspace_dir_.empty()) workspace_dir_ = base_dir_ + "/workspace";
  for (const std::string& d : {base_dir_, workspace_dir_, base_dir_ + "/tmp", home_dir_})
    fs::create_directories(d);
  ::chmod(base_dir_.c_str(), 0700);
  ::chmod((base_dir_ + "/tmp").c_str(), 01777);
  ::chmod(home_dir_.c_str(), 0700);
  // The sandbox's root owns its trees.
  if (settings_.ids.chown) {
    for (const std::string& d : {base_dir_, workspace_dir_, base_dir_ + "/tmp", home_dir_})
      (void)::lchown(d.c_str(), settings_.ids.uid_base, settings_.ids.gid_base);
  }
  const LaunchedInit init =
      launch_sandbox_init(settings_, {workspace_dir_, base_dir_ + "/tmp", home_dir_}, hostname);
  std::lock_guard lock(mu_);
  init_ = init.pid;
  control_ = init.control;
  root_fd_ = init.root_fd;
}

SandboxRuntime::~SandboxRuntime() { stop(); }

void SandboxRuntime::stop() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  // Killing PID 1 of the namespace kills every process in it, detached ones
  // too; waitpid returns once they are all gone.
  if (init_ > 0) {
    ::kill(init_, SIGKILL);
    while (::waitpid(init_, nullptr, 0) < 0 && errno == EINTR) {
    }
    init_ = -1;
  }
  close_fd(control_);
  close_fd(root_fd_);
}

void SandboxRuntime::destroy() {
  stop();
  if (!external_workspace_) {
    remove_tree(base_dir_);
  } else {
    for (const char* d : {"/root", "/tmp", "/home"}) remove_tree(base_dir_ + d);
    ::rmdir(base_dir_.c_str());
  }
}

int SandboxRuntime::dup_root_fd() const {
  std::lock_guard lock(mu_);
  if (stopped_ || root_fd_ < 0) return -1;
  return ::fcntl(root_fd_, F_DUPFD_CLOEXEC, 0);
}

std::vector<ProcessInfo> SandboxRuntime::processes() const {
  std::lock_guard lock(mu_);
  return running_;
}

std::size_t SandboxRuntime::process_count() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

bool SandboxRuntime::signal(pid_t pid, int sig) {
  std::lock_guard lock(mu_);
  for (const auto& p : running_) {
    if (p.pid == pid) {
      ::kill(-p.host_pid, sig);
      return true;
    }
  }
  return false;
}

namespace {

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string diagnose(const std::string& failure) {
  std::string msg =
      "the Lizard mock cannot isolate its sandboxes on this machine (" + failure +
      "). Every sandbox needs its own user, mount, PID and network namespaces, and the mock "
      "refuses to run commands without them.";
  std::string causes;
  if (first_line_of("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    causes +=
        "\n  - AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): run "
        "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or give this program an "
        "AppArmor profile that allows `userns`, or run it as root.";
  }
  if (first_line_of("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
    causes +=
        "\n  - unprivileged user namespaces are switched off: run `sudo sysctl "
        "kernel.unprivileged_userns_clone=1`, or run as root.";
  }
  if (first_line_of("/proc/sys/user/max_user_namespaces") == "0") {
    causes +=
        "\n  - user namespaces are disabled: run `sudo sysctl user.max_user_namespaces=15000`.";
  }
  msg += causes.empty() ? "\nFixes:" : "\nFound:" + causes + "\nOther fixes:";
  msg +=
      "\n  - in a container (Docker, Podman, a CI job's container): start it with "
      "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt "
      "systempaths=unconfined` (their defaults refuse new namespaces and mask /proc), or "
      "`--privileged`;"
      "\n  - or run the suite as root on a machine (or VM) of your own.";
  return msg;
}

}  // namespace

std::optional<std::string> isolation_problem() {
  static std::once_flag once;
  static std::optional<std::string> problem;
  std::call_once(once, [] {
    std::error_code ec;
    std::string tmpl =
        (std::filesystem::temp_directory_path(ec) / "lizard-mock-probe-XXXXXX").string();
    if (ec || !::mkdtemp(tmpl.data())) {
      problem = "cannot create a temporary directory (" + std::string(std::strerror(errno)) +
                "); set TMPDIR to a writable directory";
      return;
    }
    try {
      MockOptions defaults;
      SandboxSettings settings = sandbox_settings_for_this_process(defaults);
      SandboxRuntime probe(tmpl + "/sandbox", "", settings, "probe");
      probe.destroy();
    } catch (const std::exception& e) {
      problem = diagnose(e.what());
    }
    remove_tree(tmpl);
  });
  return problem;
}

}  // namespace lizard::mock::internal
