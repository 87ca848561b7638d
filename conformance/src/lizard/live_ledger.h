// The bookkeeping of a live run (live_factory.cc): every sandbox created and
// deleted, for how long it lived, and the budget (--max-sandboxes,
// --max-sandbox-seconds) that stops new creates once spent.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lizard::conformance::internal {

// A create the budget refused. Deliberately not a contract error: a rule
// that expects one (WorkspaceUnavailableError, say) must not take it for
// the backend's answer.
class BudgetReached : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LiveBudget {
  int max_sandboxes = 0;           // creates attempted; 0: no limit
  double max_sandbox_seconds = 0;  // summed lives; 0: no limit
};

// Thread-safe.
class LiveLedger {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LiveLedger(LiveBudget budget) : budget_(budget) {}

  // Before a create: counts it, or throws BudgetReached when the budget is
  // spent. Returns the time its sandbox's life is counted from.
  Clock::time_point reserve();
  // The create reserved at `since` made the sandbox `ref` ("lizard:sbx_...").
  void created(const std::string& ref, Clock::time_point since);
  // The end of `ref`'s life: deleted, or the delete failed. A ref this run
  // did not create is ignored.
  void deleted(const std::string& ref, bool ok);
  // "budget reached: ..." once the budget is spent, else "".
  std::string exhausted() const;
  // The report's lines: created, deleted and left behind, the cost estimate
  // (`dollars_per_hour` for `size`), the budget.
  std::vector<std::string> notes(const std::string& run_id, const std::string& size,
                                 double dollars_per_hour) const;

 private:
  struct Life {
    Clock::time_point start;
    std::optional<Clock::time_point> end;  // set once deleted
    bool delete_failed = false;
  };
  double seconds_locked(Clock::time_point now) const;
  std::string exhausted_locked() const;

  LiveBudget budget_;
  mutable std::mutex mutex_;
  int reserved_ = 0;
  std::map<std::string, Life> lives_;
};

}  // namespace lizard::conformance::internal
