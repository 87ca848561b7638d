// Builds a sandbox's file system and names, as PID 1 of fresh user, mount,
// PID, network, UTS and IPC namespaces: the plan's binds, tmpfs, device
// nodes and /proc under the new root, pivot_root into it (the old root is
// detached), the root made read-only, the host name set and the loopback
// interface up.
#pragma once

#include <string>
#include <vector>

namespace lizard::mock::init {

struct CommandLimits {
  long long nproc = -1;  // -1: not set
  long long nofile = -1;
  long long fsize = -1;
};

// Runs the plan (init_protocol.h: the new root's directory first, then
// steps). Returns an empty string on success, else a sentence naming the
// step and the error.
std::string build_sandbox(const std::vector<std::string>& plan, CommandLimits& limits);

}  // namespace lizard::mock::init
