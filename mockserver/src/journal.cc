#include "journal.h"

#include <string>
#include <string_view>

namespace lizard::mock::internal {

std::string Journal::keep(std::string_view body) const {
  std::string kept(body.substr(0, limits_.max_body_bytes));
  if (body.size() > limits_.max_body_bytes) {
    kept += "...[cut by lizard-mock: " + std::to_string(body.size()) + " bytes in all]";
  }
  return kept;
}

void Journal::record(JournalEntry entry) {
  std::lock_guard lock(mu_);
  total_bytes_ += entry.body.size();
  entries_.push_back(std::move(entry));
  while (!entries_.empty() &&
         (entries_.size() > limits_.max_entries || total_bytes_ > limits_.max_total_bytes)) {
    total_bytes_ -= entries_.front().body.size();
    entries_.pop_front();
    ++dropped_;
  }
}

std::vector<JournalEntry> Journal::entries() const {
  std::lock_guard lock(mu_);
  return {entries_.begin(), entries_.end()};
}

void Journal::clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
  total_bytes_ = 0;
  dropped_ = 0;
}

std::uint64_t Journal::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace lizard::mock::internal
