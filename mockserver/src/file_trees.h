// Whole directory trees on the host: a sandbox's, a snapshot's, a volume's.
// None follows a link or enters another file system (a stale bind mount is
// never descended into). Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox_files.h"

namespace lizard::mock::internal {

// Removes a directory tree (or a single file or link).
void remove_tree(const std::string& path);

// The bytes of the regular files in a tree.
std::uint64_t tree_bytes(const std::string& path);

// Copies a directory tree (files, dirs, links; modes kept) for fork and
// snapshot, never following a link: every step opens relative to its parent
// with O_NOFOLLOW, so a sandbox that swaps a directory for a link while it
// is copied cannot make the copy read outside its own tree. Owners are kept
// (when `owner.chown`: the mock runs as root). Mount points and special
// files are left out. Any depth (tree_walk.h); holes stay holes, and a file
// with several names in the tree is copied once and linked.
void copy_tree(const std::string& from, const std::string& to, const IdMap& owner);

}  // namespace lizard::mock::internal
