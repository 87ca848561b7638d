// The start of one command, in a child the init forked: read the exec spec
// from the exec socket, put stdin (/dev/null), stdout and stderr in place,
// start a session of its own, report its PID, then give up what a command
// must not have (capabilities outside Docker's default set, a way to gain
// privileges) and execve it. What a fork inherits (the bounding set,
// no_new_privs, the system-call filter) the init takes on itself once,
// after the setup (confine_init), so that no command start pays for it.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "sandbox_setup.h"

namespace lizard::mock::init {

struct CommandPolicy {
  CommandLimits limits;
};

// Confines the calling process (the init, once the sandbox is built) with
// what every command must have and a fork inherits: the capability bounding
// set cut to Docker's default set, no_new_privs, and `filter` (the
// system-call filter, seccomp_policy.h). Its own effective capabilities
// stay (it forks past the sandbox's process limit); after the setup it
// makes none of the refused calls. Empty on success, else a sentence.
std::string confine_init(const std::vector<sock_filter>& filter);

// Never returns. `exec_sock`, `out_w`, `err_w` and `devnull` are this
// process's descriptors; every other descriptor is closed before execve.
[[noreturn]] void start_command(int exec_sock, int out_w, int err_w, int devnull,
                                const CommandPolicy& policy);

}  // namespace lizard::mock::init
