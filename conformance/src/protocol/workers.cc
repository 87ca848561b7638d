#include "workers.h"

#include <exception>
#include <thread>
#include <utility>

namespace lizard::conformance::protocol {

namespace {
constexpr auto kWorkerIdle = std::chrono::seconds(10);
}  // namespace

bool Workers::submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  if (tasks_.size() <= static_cast<std::size_t>(idle_)) {
    work_cv_.notify_one();
    return true;
  }
  if (threads_ >= max_workers_) return true;
  ++threads_;
  try {
    std::thread([this] { work(); }).detach();
  } catch (const std::exception&) {
    // No thread to be had (a limit on threads or memory): a worker there is
    // takes the task when it is done.
    --threads_;
    if (threads_ > 0) return true;
    tasks_.pop_back();
    return false;
  }
  return true;
}

bool Workers::close(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  closing_ = true;
  work_cv_.notify_all();
  return ended_cv_.wait_for(lock, timeout, [&] { return threads_ == 0; });
}

void Workers::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (tasks_.empty()) {
      if (closing_) break;
      ++idle_;
      const bool woken =
          work_cv_.wait_for(lock, kWorkerIdle, [&] { return closing_ || !tasks_.empty(); });
      --idle_;
      if (!woken) break;  // idle too long (tasks_ is empty: nothing counted on it)
      continue;
    }
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // what it holds goes before the next wait
    lock.lock();
  }
  --threads_;
  ended_cv_.notify_all();
}

}  // namespace lizard::conformance::protocol
