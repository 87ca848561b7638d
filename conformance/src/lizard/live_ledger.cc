#include "live_ledger.h"

#include <iomanip>
#include <sstream>

namespace lizard::conformance::internal {

namespace {

std::string format(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

}  // namespace

double LiveLedger::seconds_locked(Clock::time_point now) const {
  double seconds = 0;
  for (const auto& [ref, life] : lives_) {
    seconds += std::chrono::duration<double>(life.end.value_or(now) - life.start).count();
  }
  return seconds;
}

std::string LiveLedger::exhausted_locked() const {
  if (budget_.max_sandboxes > 0 && reserved_ >= budget_.max_sandboxes) {
    return "budget reached: " + std::to_string(reserved_) + " of " +
           std::to_string(budget_.max_sandboxes) + " sandboxes (--max-sandboxes)";
  }
  if (budget_.max_sandbox_seconds > 0) {
    const double used = seconds_locked(Clock::now());
    if (used >= budget_.max_sandbox_seconds) {
      return "budget reached: " + format(used, 0) + " of " +
             format(budget_.max_sandbox_seconds, 0) + " sandbox-seconds (--max-sandbox-seconds)";
    }
  }
  return "";
}

LiveLedger::Clock::time_point LiveLedger::reserve() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string spent = exhausted_locked();
  if (!spent.empty()) throw BudgetReached(spent + "; no sandbox was created");
  ++reserved_;
  return Clock::now();
}

void LiveLedger::created(const std::string& ref, Clock::time_point since) {
  std::lock_guard<std::mutex> lock(mutex_);
  lives_.emplace(ref, Life{since, std::nullopt, false});
}

void LiveLedger::deleted(const std::string& ref, bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = lives_.find(ref);
  if (it == lives_.end() || (it->second.end && !it->second.delete_failed)) return;
  it->second.end = Clock::now();
  it->second.delete_failed = !ok;
}

std::string LiveLedger::exhausted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exhausted_locked();
}

std::vector<std::string> LiveLedger::notes(const std::string& run_id, const std::string& size,
                                           double dollars_per_hour) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> left;
  int deleted = 0;
  for (const auto& [ref, life] : lives_) {
    if (life.end && !life.delete_failed) {
      ++deleted;
    } else {
      left.push_back(ref);
    }
  }
  const double seconds = seconds_locked(Clock::now());
  std::vector<std::string> notes = {
      "live run " + run_id + ": sandboxes created " + std::to_string(lives_.size()) + ", deleted " +
          std::to_string(deleted) + ", left behind " + std::to_string(left.size()),
      "estimated cost: $" + format(seconds / 3600.0 * dollars_per_hour, 4) + " (" +
          std::to_string(static_cast<long>(seconds)) + " sandbox-seconds of size " + size + ")"};
  for (const auto& ref : left) notes.push_back("left behind: " + ref);
  if (budget_.max_sandboxes > 0 || budget_.max_sandbox_seconds > 0) {
    std::string line = "budget:";
    if (budget_.max_sandboxes > 0) {
      line += " " + std::to_string(reserved_) + " of " + std::to_string(budget_.max_sandboxes) +
              " creates";
    }
    if (budget_.max_sandbox_seconds > 0) {
      line += std::string(budget_.max_sandboxes > 0 ? "," : "") + " " + format(seconds, 0) +
              " of " + format(budget_.max_sandbox_seconds, 0) + " sandbox-seconds";
    }
    const std::string spent = exhausted_locked();
    notes.push_back(line + (spent.empty() ? "" : " (reached)"));
  }
  return notes;
}

}  // namespace lizard::conformance::internal
