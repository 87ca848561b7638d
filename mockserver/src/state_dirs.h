// The mock's state directories (TMPDIR/lizard-mock-XXXXXX) outlive nothing:
// each carries a marker of the process that made it; a new mock removes the
// directories of processes that are gone (an interrupted run), and a process
// that is stopping can remove all of its own at once.
//
// Thread-safe.
#pragma once

#include <string>

namespace lizard::mock::internal {

// Writes the marker (this process's pid and start time) into `dir`.
void mark_state_dir_owner(const std::string& dir);
// Removes TMPDIR/lizard-mock-* directories of this user whose process is
// gone (or, without a marker, older than ten minutes).
void remove_abandoned_state_dirs();
void register_state_dir(const std::string& dir);
void unregister_state_dir(const std::string& dir);
// Removes every registered directory of this process (for an exit that
// runs no destructor: a signal, an abandoned rule).
void remove_registered_state_dirs();

}  // namespace lizard::mock::internal
