// Linked into every test binary that uses lizard::testing: when a test
// process dies of SIGSEGV, SIGBUS, SIGFPE or SIGILL, the stack of the
// thread that crashed goes to stderr before the default action (a core, if
// the process may dump), so that a crash seen once under ctest's load says
// where it was. Sanitizer builds keep their own, better, reports.
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LIZARD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LIZARD_SANITIZED 1
#endif
#endif

namespace {

#ifndef LIZARD_SANITIZED

void say(const char* text) { (void)!::write(2, text, std::strlen(text)); }

void say_hex(unsigned long value) {
  char digits[2 + 16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value % 16];
    value /= 16;
  } while (value != 0 && n < 16);
  say("0x");
  while (n > 0) (void)!::write(2, &digits[--n], 1);
}

// Only async-signal-safe calls, but backtrace(), whose first call loads
// libgcc: it was called once at start.
void report(int sig, siginfo_t* info, void*) {
  say("\n*** test process crashed: ");
  say(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "SIGILL");
  say(" at address ");
  say_hex(reinterpret_cast<unsigned long>(info->si_addr));
  say(" in thread ");
  say_hex(static_cast<unsigned long>(::syscall(SYS_gettid)));
  say("; its stack (resolve with addr2line -f -C -e <binary> <offset>):\n");
  void* frames[64];
  ::backtrace_symbols_fd(frames, ::backtrace(frames, 64), 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

struct Install {
  Install() {
    void* warm[1];
    (void)::backtrace(warm, 1);
    // A stack overflow leaves no stack to report on: the main thread gets a
    // spare one (other threads report what they can).
    static char spare[1 << 16];
    stack_t alt{};
    alt.ss_sp = spare;
    alt.ss_size = sizeof spare;
    (void)::sigaltstack(&alt, nullptr);
    struct sigaction action {};
    action.sa_sigaction = report;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
      (void)::sigaction(sig, &action, nullptr);
  }
};

const Install install;

#endif

}  // namespace
