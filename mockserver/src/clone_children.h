// The code of a sandbox launch that runs in the clone children
// (sandbox_launch.cc): the outer child, in the sandbox's outer user
// namespace, and the init it clones, up to the init's exec. Only
// sandbox_launch.cc uses it.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>

namespace lizard::mock::internal {

// What the clone children are given (prepared before the clone: they may
// not allocate).
struct InitChildPlan {
  int control = -1;  // the child's end of the control socket
  int image = -1;    // the init program (a memory file)
  const char* const* argv = nullptr;
  const char* const* envp = nullptr;
  // The sandbox's workspace, tmp and home on the host, bound at the staged
  // paths of init_protocol.h.
  const char* sources[3] = {nullptr, nullptr, nullptr};
  // What the outer child does before it clones the init: takes this gid of
  // the outer namespace (-1: keeps its own, which that namespace maps),
  // sets this process limit (the kernel copies it into the inner user
  // namespace), and writes the inner namespace's ID maps.
  long outer_gid = -1;
  rlimit sandbox_nproc{};
  char uid_map[32] = {};
  char gid_map[32] = {};
  // The launching thread's signal mask, for the init's exec.
  sigset_t signal_mask{};
  // As root: the init must drop the supplementary groups it got from the
  // mock (host root's); a user's mock cannot (setgroups is "deny").
  bool drop_groups = false;
  // Where the outer child puts the init's pid as soon as it is cloned (in
  // this process's memory): the mock reaps an init whose report never came.
  pid_t* cloned = nullptr;
  // How the outer child clones the init: the C library's clone(3) (never a
  // sanitizer's interceptor of it, which would run its own bookkeeping in
  // the child), and the top of the init's stack, mapped until the init has
  // executed or is reaped.
  int (*clone)(int (*)(void*), void*, int, void*, ...) = nullptr;
  void* init_stack = nullptr;
};

// The outer child's one message: the init's host pid, or the step that
// failed and its errno.
struct OuterReport {
  char tag = 'C';
  std::int32_t pid = -1;  // -1 before the clone of the init
  std::int32_t step = 0;  // 0: the init is cloned, its maps are written
  std::int32_t err = 0;
};
inline constexpr const char* kOuterSteps[] = {
    "",
    "wait for the outer namespace's ID maps",
    "take the owner's group in the outer namespace",
    "set the sandbox's process limit",
    "clone into the sandbox's namespaces",
    "write the sandbox's uid map",
    "write the sandbox's gid map",
};

// The outer child's entry, for clone(2) with CLONE_VM on a stack of its
// own; `plan` is an InitChildPlan. Never returns: the outer child clones
// the init (CLONE_VM too, on plan->init_stack), reports on the control
// socket and exits.
int outer_entry(void* plan);

}  // namespace lizard::mock::internal
