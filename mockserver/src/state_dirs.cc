#include "state_dirs.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "file_trees.h"
#include "sandbox_files.h"
#include "sandbox_runtime.h"

namespace lizard::mock::internal {
namespace {

constexpr const char* kMarker = "/.lizard-mock-owner";

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& registry() {
  static std::set<std::string> dirs;
  return dirs;
}

// A process's start time (field 22 of /proc/PID/stat), or empty when it is gone.
std::string start_time_of(pid_t pid) {
  // One line. getline, not an istreambuf_iterator: a process that exits
  // between the open and the read makes the read fail with ESRCH, which
  // libstdc++'s filebuf throws through an iterator but getline only reports.
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  return field;
}

// True when the marker names a live process; nullopt when it cannot be read.
std::optional<bool> owner_alive(const std::string& dir) {
  std::ifstream in(dir + kMarker);
  pid_t pid = 0;
  std::string started;
  if (!(in >> pid >> started)) return std::nullopt;
  return start_time_of(pid) == started;
}

}  // namespace

void mark_state_dir_owner(const std::string& dir) {
  // Written aside and renamed: a scan never sees half a marker.
  const std::string tmp = dir + kMarker + ".tmp";
  {
    std::ofstream out(tmp);
    out << ::getpid() << " " << start_time_of(::getpid()) << "\n";
  }
  std::rename(tmp.c_str(), (dir + kMarker).c_str());
}

void remove_abandoned_state_dirs() {
  std::error_code ec;
  const auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec) return;
  DirPtr d(::opendir(tmp.c_str()));
  if (!d) return;
  const auto now = std::chrono::system_clock::now();
  while (dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name.rfind("lizard-mock-", 0) != 0) continue;
    const std::string dir = (tmp / name).string();
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    // Gone only when its owner is: a marker of a dead process, or (a mock
    // of an older version, or one killed before its marker) none for ten
    // minutes.
    const auto alive = owner_alive(dir);
    if (alive.value_or(false)) continue;
    if (!alive) {
      const auto age = now - std::chrono::system_clock::from_time_t(st.st_mtime);
      if (age < std::chrono::minutes(10)) continue;
    }
    remove_tree(dir);
  }
}

void register_state_dir(const std::string& dir) {
  std::lock_guard lock(registry_mutex());
  registry().insert(dir);
}

void unregister_state_dir(const std::string& dir) {
  std::lock_guard lock(registry_mutex());
  registry().erase(dir);
}

void remove_registered_state_dirs() {
  std::set<std::string> dirs;
  {
    std::lock_guard lock(registry_mutex());
    dirs.swap(registry());
  }
  for (const auto& dir : dirs) remove_tree(dir);
}

}  // namespace lizard::mock::internal
