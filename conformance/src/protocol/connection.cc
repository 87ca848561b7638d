// The adapter process (connection.h): starting it, its exit, its stderr,
// faults, and shutdown. The messages themselves: conversation.cc.
#include "connection.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rapidjson/error/en.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "lizard/workspace/utf8.h"
#include "schemas.h"

extern char** environ;

namespace lizard::conformance::protocol {

namespace {

// Each stderr line is kept up to this long (the lizard profile looks for the
// key in every line); a failure quotes the tail lines shorter.
constexpr std::size_t kStderrLineBytes = 64 * 1024;
constexpr std::size_t kStderrTotalBytes = 8u << 20;
constexpr std::size_t kTailLineChars = 300;

// "the adapter `python3 adapter.py`": paths shortened to their last part, so
// that a rule's one-line reason keeps room for the adapter's stderr.
std::string quoted_argv(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) {
    const auto slash = a.find_last_of('/');
    text += (text.empty() ? "" : " ") +
            (slash == std::string::npos || slash + 1 == a.size() ? a : a.substr(slash + 1));
  }
  return "the adapter `" + one_line(text, 200) + "`";
}

// Bigger pipes: a 64 MiB file crosses in fewer reads. Best effort.
void grow_pipe(int fd) { (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20); }

}  // namespace

std::string one_line(std::string_view text, std::size_t max) {
  std::string line;
  for (char c : text) {
    if (line.size() >= max) {
      line += "...";
      break;
    }
    // Whitespace as a space; every other control character (ESC of a
    // terminal's escape sequence, BEL, NUL, DEL) as '?': an adapter's text
    // reaches the console and the reports.
    const auto u = static_cast<unsigned char>(c);
    line += (c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f') ? ' '
            : (u < 0x20 || u == 0x7f)                                       ? '?'
                                                                            : c;
  }
  return workspace::repair_utf8(line);
}

std::string seconds_text(std::chrono::milliseconds ms) {
  const auto s = ms.count() / 1000.0;
  std::string text = std::to_string(s);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

Connection::Connection(AdapterOptions options)
    : options_(std::move(options)), description_(quoted_argv(options_.argv)) {
  if (options_.argv.empty() || options_.argv.front().empty()) {
    throw ProtocolError("no adapter program given");
  }
  if (options_.check_schemas) schemas_ = &ProtocolSchemas::get();
  for (const auto& secret : options_.stderr_secrets) {
    if (!secret.empty()) stderr_secrets_.push_back(secret);
  }
  spawn();
  waiter_ = std::thread([this] { wait_for_exit(); });
  stdout_reader_ = std::thread([this] { read_stdout(); });
  stderr_reader_ = std::thread([this] { read_stderr(); });
  monitor_ = std::thread([this] { monitor(); });
}

Connection::~Connection() { shutdown(); }

void Connection::spawn() {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw ProtocolError("pipe: " + std::string(strerror(errno)));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw ProtocolError("pipe: " + std::string(strerror(errno)));
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw ProtocolError("pipe: " + std::string(strerror(errno)));
  }
  grow_pipe(in[1]);
  grow_pipe(out[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group (killed as a whole), no signal blocked (the runner
  // blocks SIGINT and SIGTERM for its sigwait thread), default dispositions.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (options_.env.count(name) == 0) env_strings.emplace_back(entry);
  }
  for (const auto& [name, value] : options_.env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = options_.argv;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int rc = ::posix_spawnp(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    for (int fd : {in[1], out[0], err[0]}) ::close(fd);
    pid_ = -1;
    throw ProtocolError("cannot start " + description_ + ": " + strerror(rc));
  }
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  ::fcntl(stdin_fd_, F_SETFL, ::fcntl(stdin_fd_, F_GETFL) | O_NONBLOCK);
}

void Connection::wait_for_exit() {
  // Observe the exit without reaping: until shutdown() reaps it, the pid
  // (and so the process group id) cannot be reused, and signalling the group
  // can never hit another process.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exited_ = true;
    exit_status_ = info.si_code == CLD_EXITED ? info.si_status : -info.si_status;
  }
  cv_.notify_all();
  if (stopping_) return;
  // Let the reader deliver what the adapter wrote before it exited; an
  // adapter whose stdout is still held open by a child never gets EOF.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (stopping_) return;
  std::size_t in_flight = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, p] : pending_) in_flight += p->internal ? 0 : 1;
  }
  fault(exit_description() + (in_flight
                                  ? " with " + std::to_string(in_flight) + " request(s) in flight"
                                  : " in the middle of the session"),
        true);
}

std::string Connection::exit_description() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::seconds(2), [&] { return exited_; });
  if (!exited_) return "closed its stdout";
  if (exit_status_ >= 0) return "exited with status " + std::to_string(exit_status_);
  const int sig = -exit_status_;
  const char* name = sigabbrev_np(sig);
  return "was killed by signal " + std::to_string(sig) +
         (name ? " (SIG" + std::string(name) + ")" : "");
}

// Once the session is stopping and the adapter has exited, a reader takes
// what is left in its pipe for at most kDrainAfterExit, then stops: a child
// of the adapter that keeps the pipe open (and writing) must not hold the
// reader, and with it shutdown(), for ever. Also stops at the first quiet
// poll then. `drain_until` is the reader's own.
bool Connection::past_drain(std::optional<std::chrono::steady_clock::time_point>& drain_until,
                            bool quiet) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!(stopping_ && exited_)) return false;
  if (quiet) return true;
  const auto now = std::chrono::steady_clock::now();
  if (!drain_until) drain_until = now + kDrainAfterExit;
  return now >= *drain_until;
}

// Every byte of stderr as it is read, before lines are cut or dropped.
void Connection::scan_for_secrets(std::string_view bytes) {
  if (stderr_secrets_.empty() || secret_seen_) return;
  std::size_t longest = 0;
  for (const auto& secret : stderr_secrets_) longest = std::max(longest, secret.size());
  secret_carry_.append(bytes);
  for (const auto& secret : stderr_secrets_) {
    if (secret_carry_.find(secret) != std::string::npos) {
      secret_seen_ = true;
      secret_carry_.clear();
      return;
    }
  }
  if (secret_carry_.size() >= longest) secret_carry_.erase(0, secret_carry_.size() - longest + 1);
}

void Connection::watch_stderr_for(const std::vector<std::string>& secrets) {
  std::lock_guard<std::mutex> lock(stderr_mutex_);
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    stderr_secrets_.push_back(secret);
    for (const auto& line : stderr_lines_) {
      if (line.find(secret) != std::string::npos) secret_seen_ = true;
    }
  }
}

bool Connection::stderr_carried_a_secret() const {
  std::lock_guard<std::mutex> lock(stderr_mutex_);
  return secret_seen_;
}

void Connection::read_stderr() {
  std::string partial;
  bool discarding = false;
  char chunk[16384];
  auto keep = [&](std::string line) {
    line = workspace::repair_utf8(line);
    std::lock_guard<std::mutex> lock(stderr_mutex_);
    stderr_tail_.push_back(one_line(line, kTailLineChars));
    while (stderr_tail_.size() > std::max<std::size_t>(1, options_.stderr_tail_lines)) {
      stderr_tail_.pop_front();
    }
    // Each line costs its bytes and its string (an adapter writing empty
    // lines without end must not grow this without bound either).
    stderr_bytes_ += line.size() + sizeof(std::string);
    stderr_lines_.push_back(std::move(line));
    while (stderr_bytes_ > kStderrTotalBytes && !stderr_lines_.empty()) {
      stderr_bytes_ -= stderr_lines_.front().size() + sizeof(std::string);
      stderr_lines_.pop_front();
    }
  };
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  while (true) {
    pollfd p{stderr_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(kPoll.count()));
    if (r < 0 && errno == EINTR) continue;
    if (past_drain(drain_until, r == 0)) break;
    if (r == 0) continue;
    const ssize_t n = ::read(stderr_fd_, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    {
      std::lock_guard<std::mutex> lock(stderr_mutex_);
      scan_for_secrets(std::string_view(chunk, static_cast<std::size_t>(n)));
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] == '\n') {
        if (!discarding) keep(std::move(partial));
        partial.clear();
        discarding = false;
      } else if (!discarding) {
        partial += chunk[i];
        if (partial.size() >= kStderrLineBytes) {
          keep(std::move(partial) + " [cut]");
          partial.clear();
          discarding = true;
        }
      }
    }
  }
  if (!partial.empty() && !discarding) keep(std::move(partial));
  {
    std::lock_guard<std::mutex> lock(stderr_mutex_);
    stderr_eof_ = true;
  }
  stderr_cv_.notify_all();
}

std::string Connection::fault(const std::string& what, bool fatal) {
  if (!fatal) {
    const std::string message = description_ + " " + what + stderr_tail();
    std::lock_guard<std::mutex> lock(mutex_);
    if (fault_.empty()) fault_ = message;
    return message;
  }
  // One fatal fault tells: the others (the readers see the kill that follows
  // it as an exit) find the connection broken and keep its reason.
  std::lock_guard<std::mutex> serial(fatal_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_ && !fault_.empty()) return fault_;
  }
  // Killed first, so that its stderr ends and the message can quote the
  // adapter's last words (it often writes them just before it breaks).
  signal_group(SIGKILL);
  {
    std::unique_lock<std::mutex> lock(stderr_mutex_);
    stderr_cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stderr_eof_; });
  }
  const std::string message = description_ + " " + what + stderr_tail();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fault_.empty()) fault_ = message;
  }
  fail_all(message);
  return message;
}

std::string Connection::first_fault() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fault_;
}

void Connection::fail_all(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    broken_ = true;
    for (auto& [id, p] : pending_) {
      p->failure = why;
      p->done = true;
    }
    pending_.clear();
  }
  cv_.notify_all();
}

std::vector<std::string> Connection::stderr_lines() const {
  std::lock_guard<std::mutex> lock(stderr_mutex_);
  return {stderr_lines_.begin(), stderr_lines_.end()};
}

std::string Connection::stderr_tail() const {
  std::lock_guard<std::mutex> lock(stderr_mutex_);
  if (stderr_tail_.empty()) return "; it wrote nothing to stderr";
  std::string text = "; its last stderr lines: ";
  bool first = true;
  for (const auto& line : stderr_tail_) {
    text += (first ? "" : " | ") + line;
    first = false;
  }
  return text;
}

void Connection::signal_group(int sig) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Only while the adapter is not reaped: its pid, the group's id, is then
  // still taken and cannot name another process's group.
  if (pid_ > 0) ::kill(-pid_, sig);
}

void Connection::kill_now() {
  stopping_ = true;
  signal_group(SIGKILL);
}

void Connection::shutdown() {
  std::lock_guard<std::mutex> guard(shutdown_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  stopping_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, p] : pending_) {
      p->failure = description_ + ": the session ended while " + p->method + " was in flight";
      p->done = true;
    }
    pending_.clear();
    broken_ = true;
  }
  cv_.notify_all();
  {
    std::lock_guard<std::mutex> lock(write_mutex_);
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
  }
  auto wait_exit = [&](std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return exited_; });
  };
  if (!wait_exit(options_.exit_grace)) {
    signal_group(SIGTERM);
    if (!wait_exit(std::chrono::seconds(2))) signal_group(SIGKILL);
  }
  // What is left of its process group goes too.
  signal_group(SIGKILL);
  wait_exit(std::chrono::seconds(30));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (exited_ && pid_ > 0) {
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  if (waiter_.joinable()) waiter_.join();
  if (stdout_reader_.joinable()) stdout_reader_.join();
  if (stderr_reader_.joinable()) stderr_reader_.join();
  for (int* fd : {&stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace lizard::conformance::protocol
