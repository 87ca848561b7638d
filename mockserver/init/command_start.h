// The start of one command, in a child the init forked: read the exec spec
// from the exec socket, put stdin (/dev/null), stdout and stderr in place,
// start a session of its own, report its PID, then give up what a command
// must not have (capabilities outside Docker's default set, a way to gain
// privileges, the refused system calls) and execve it.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "sandbox_setup.h"

namespace lizard::mock::init {

struct CommandPolicy {
  CommandLimits limits;
  std::vector<sock_filter> filter;  // seccomp_policy.h
};

// Never returns. `exec_sock`, `out_w`, `err_w` and `devnull` are this
// process's descriptors; every other descriptor is closed before execve.
[[noreturn]] void start_command(int exec_sock, int out_w, int err_w, int devnull,
                                const CommandPolicy& policy);

}  // namespace lizard::mock::init
