// Starting a sandbox's PID 1: lizard-sandbox-init (mockserver/init/), from
// the copy embedded in this library, in new user, mount, PID, network, UTS,
// IPC and cgroup namespaces (the user namespace inside an outer one of its
// own, for the process limit of all sandboxes: sandbox_launch.cc), with its
// ID maps written and its setup plan (init_protocol.h) carried out. Used by
// SandboxRuntime; thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

#include "sandbox_runtime.h"

namespace lizard::mock::internal {

// The host directories a sandbox sees as /workspace, /tmp and /root.
struct SandboxTrees {
  std::string workspace;
  std::string tmp;
  std::string home;
};

// A running, built sandbox init. The caller owns the descriptors and the
// child (kill and reap it to stop the sandbox).
struct LaunchedInit {
  pid_t pid = -1;
  int control = -1;  // the control socket (init_protocol.h)
  int root_fd = -1;  // O_PATH of the root its processes see
};

// Starts the init and waits until it reports the sandbox built. Throws
// std::runtime_error naming the step that failed (nothing is left running).
LaunchedInit launch_sandbox_init(const SandboxSettings& settings, const SandboxTrees& trees,
                                 const std::string& hostname);

}  // namespace lizard::mock::internal
