// CpuWait and Silence (cpu_wait.h): /proc read with read(2), every file
// small and whole.
#include "cpu_wait.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "connection.h"

namespace lizard::conformance::protocol {

namespace {

// A small /proc file of task directory `tasks`, whole; empty if it is gone.
std::string read_task_file(int tasks, const std::string& name) {
  // read(2), not a stream: a thread that ends meanwhile is an answer (ESRCH).
  const int fd = ::openat(tasks, name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char text[1024];
  const ssize_t n = ::read(fd, text, sizeof text);
  ::close(fd);
  return n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
}

// The threads of process `pid`, by TID. False where the kernel keeps no such
// counts.
bool thread_times(pid_t pid, std::map<long, CpuWait::Times>& threads) {
  DIR* tasks = ::opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (tasks == nullptr) return false;
  while (const dirent* e = ::readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string tid = e->d_name;
    const std::string sched = read_task_file(::dirfd(tasks), tid + "/schedstat");
    CpuWait::Times t;
    char* end = nullptr;
    t.ran = std::strtoll(sched.c_str(), &end, 10);
    const char* wait_start = end;
    t.waited = std::strtoll(wait_start, &end, 10);
    if (end == wait_start || t.ran < 0 || t.waited < 0) continue;
    // "TID (COMM) STATE ...": COMM may hold anything, ") " too.
    const std::string stat = read_task_file(::dirfd(tasks), tid + "/stat");
    const auto close = stat.rfind(") ");
    t.runnable = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R';
    threads[std::strtol(tid.c_str(), nullptr, 10)] = t;
  }
  ::closedir(tasks);
  return !threads.empty();
}

}  // namespace

CpuWait::Clock::duration CpuWait::read(Clock::time_point now) {
  std::map<long, Times> threads;
  if (!thread_times(pid_, threads)) return total_;
  return update(threads, now);
}

CpuWait::Clock::duration CpuWait::update(const std::map<long, Times>& threads,
                                         Clock::time_point now) {
  std::map<long, Seen> seen;
  Clock::duration most{};
  for (const auto& [tid, times] : threads) {
    // A kernel that keeps no counts shows zeros; a thread that never ran has
    // nothing to say either.
    if (times.ran == 0 && times.waited == 0) continue;
    Seen& s = seen[tid];
    s.times = times;
    s.since = now;
    const auto before = last_.find(tid);
    if (before == last_.end()) {
      // At the first reading, its count so far is the baseline; a thread
      // new since then waited all of its count since the reading before.
      s.base = read_before_ ? 0 : times.waited;
    } else {
      const Seen& was = before->second;
      s.base = was.base;
      const bool unchanged = times.ran == was.times.ran && times.waited == was.times.waited;
      if (unchanged && was.times.runnable) s.since = was.since;
    }
    const Clock::duration ongoing = times.runnable ? now - s.since : Clock::duration{};
    s.credited = std::chrono::nanoseconds(times.waited - s.base) + ongoing;
    const Clock::duration credited_before =
        before == last_.end() ? Clock::duration{} : before->second.credited;
    most = std::max(most, s.credited - credited_before);
  }
  read_before_ = true;
  last_ = std::move(seen);
  total_ += most;
  return total_;
}

Silence::Clock::duration Silence::length(Clock::time_point since, Clock::time_point now,
                                         Clock::duration waited, Clock::duration limit) {
  if (since != since_) {
    since_ = since;
    waited_at_start_ = waited;
  }
  waited_ = std::max<Clock::duration>(
      Clock::duration{},
      std::min<Clock::duration>({waited - waited_at_start_, now - since, 4 * limit}));
  return now - since - waited_;
}

std::string Silence::waited_text() const {
  if (waited_ < std::chrono::seconds(1)) return "";
  return ", not counting " +
         seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(waited_)) +
         " it waited for a CPU";
}

}  // namespace lizard::conformance::protocol
