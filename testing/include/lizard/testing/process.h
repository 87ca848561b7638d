// Samples of this process and of the host's processes, for tests of leaks
// and of what is left running. Linux (/proc). Thread-safe.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lizard::testing {

// Open file descriptors of this process.
inline std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

// A field of /proc/self/status ("Threads", "VmRSS" and "VmHWM" in KiB); -1 when absent.
inline long status_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) return std::stol(line.substr(name.size() + 1));
  }
  return -1;
}
inline long threads() { return status_field("Threads"); }
inline long rss_kib() { return status_field("VmRSS"); }

// Pids of the host's processes whose command line (NULs read as spaces)
// contains `needle`; nullopt when /proc cannot be listed. A process that
// exits during the scan is left out (its files read as errors, and no read
// here throws).
inline std::optional<std::vector<pid_t>> host_pids_with(const std::string& needle) {
  struct DirCloser {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  std::unique_ptr<DIR, DirCloser> proc(::opendir("/proc"));
  if (!proc) return std::nullopt;
  std::vector<pid_t> pids;
  while (const dirent* e = ::readdir(proc.get())) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string(e->d_name) + "/cmdline";
    const int fd = ::openat(::dirfd(proc.get()), path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmd;
    bool complete = false;
    char buf[4096];
    for (;;) {
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        complete = got == 0;
        break;
      }
      cmd.append(buf, static_cast<std::size_t>(got));
    }
    ::close(fd);
    if (!complete) continue;
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(needle) != std::string::npos)
      pids.push_back(static_cast<pid_t>(std::stol(e->d_name)));
  }
  return pids;
}

// How many host processes have `needle` in their command line (as above);
// -1 when /proc cannot be listed.
inline int host_processes_with(const std::string& needle) {
  const auto pids = host_pids_with(needle);
  return pids ? static_cast<int>(pids->size()) : -1;
}

}  // namespace lizard::testing
