// The threads serve_protocol runs its requests on (server.cc): workers that
// wait for the next task when theirs is done, instead of a thread started and
// ended per request. On a VM, a thread's end cost more than a 1 MiB read:
// glibc's madvise of its stack flushes the other CPU's TLB by an interrupt
// (docs/performance.md, "The backend protocol on the slow host").
//
// A worker is started when no idle one is left for the tasks waiting, so as
// many run at once as were submitted, up to `max_workers`; past that, tasks
// wait in the queue for a worker. One idle for 10 s ends.
//
// Thread-safe. The object must outlive its workers: close() says whether
// they all ended.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

namespace lizard::conformance::protocol {

class Workers {
 public:
  explicit Workers(int max_workers) : max_workers_(max_workers) {}
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Queues `task` for a worker. False when no worker can take it: no thread
  // could be started and none runs (the task is dropped; the caller answers
  // for it).
  bool submit(std::function<void()> task);

  // No more tasks: the workers end once the queue is empty. True when all
  // had ended within `timeout`.
  bool close(std::chrono::seconds timeout);

 private:
  void work();

  const int max_workers_;
  std::mutex mutex_;
  std::condition_variable work_cv_;   // a task, or closing_
  std::condition_variable ended_cv_;  // a worker ended
  std::deque<std::function<void()>> tasks_;
  int threads_ = 0;  // workers running
  int idle_ = 0;     // workers waiting for a task
  bool closing_ = false;
};

}  // namespace lizard::conformance::protocol
