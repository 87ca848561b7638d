// The time an adapter waited for a CPU, and a silence less that time: what
// the runner's liveness check counts (docs/protocol.md, "Cancellation and
// liveness"). A starved host is not a hung adapter.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>

namespace lizard::conformance::protocol {

// How long process `pid` has waited for a CPU since it was first read, from
// /proc/PID/task/*/{schedstat,stat}. Each thread's wait so far is what the
// kernel counted since the thread was first seen, plus a wait still going
// on: the kernel adds a wait only when the thread gets a CPU back (under a
// load of 20 a starved thread's wait went unseen for 1.3 s), so a thread
// runnable at two readings that neither ran nor waited between them counts
// as waiting since the first. At each reading the process's wait grows by
// the most one thread's grew: threads waiting side by side are one wait,
// and an adapter's own threads, more than the CPUs, cannot make up a wait
// longer than the time that passed. It never goes down (a thread that ends
// keeps what it was credited). Only the process's own threads are counted,
// not its children's (a wrapper's). Where the kernel keeps no such counts
// (no file, or zeros) it stays 0.
class CpuWait {
 public:
  using Clock = std::chrono::steady_clock;

  struct Times {
    long long ran = 0;      // ns on a CPU
    long long waited = 0;   // ns runnable, waiting for one
    bool runnable = false;  // 'R' now: running or waiting
  };

  explicit CpuWait(pid_t pid) : pid_(pid) {}

  // Reads the process's threads and returns update()'s answer.
  Clock::duration read(Clock::time_point now);
  // The wait so far, given every thread's counts at `now`, by TID.
  Clock::duration update(const std::map<long, Times>& threads, Clock::time_point now);

 private:
  struct Seen {
    Times times;
    long long base = 0;          // its count when first seen
    Clock::time_point since;     // runnable with these counts since
    Clock::duration credited{};  // its wait so far
  };
  pid_t pid_;
  bool read_before_ = false;
  std::map<long, Seen> last_;
  Clock::duration total_{};
};

// A silence from the adapter's latest sign of life, less the time it waited
// for a CPU meanwhile: time the adapter could have used. An adapter asleep,
// stopped or computing on a free CPU waits for none. The credit is at most
// the silence, and at most four times the deadline: five deadlines of
// silence are a hang however busy the host.
class Silence {
 public:
  using Clock = std::chrono::steady_clock;

  // `waited`: CpuWait's reading at `now`.
  Clock::duration length(Clock::time_point since, Clock::time_point now, Clock::duration waited,
                         Clock::duration limit);
  // ", not counting 12 s it waited for a CPU", or nothing under a second.
  std::string waited_text() const;

 private:
  Clock::time_point since_{};
  Clock::duration waited_at_start_{};
  Clock::duration waited_{};
};

}  // namespace lizard::conformance::protocol
