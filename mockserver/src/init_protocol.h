// What the mock and a sandbox's PID 1 (lizard-sandbox-init, mockserver/init/)
// say to each other. Both sides include this header; it needs the standard
// library only.
//
// The control socket (AF_UNIX, SOCK_SEQPACKET, the init's fd 3):
//   mock -> outer child   "G"                 go: the outer namespace's ID maps are written
//   outer child -> mock   "C" + report        the init's clone (sandbox_launch.cc)
//   mock -> clone child   "G"                 go: exec the init
//   mock -> init          "P" + fields        the setup plan (steps, see plan_arity)
//   init -> mock          "R"                 ready: the sandbox is built
//   init -> mock          "F" + sentence      setup failed (the init exits)
//   mock -> init          "X" + 3 fds         start a command: its exec socket, stdout, stderr
// The init exits when the control socket closes (the mock is gone).
//
// An exec socket (AF_UNIX, SOCK_STREAM, one per command):
//   mock -> command       u32 length + fields the ExecSpec (argv, env, workdir, uid, gid)
//   command -> mock       Record{'S', pid}    started, in a process group of its own (in
//                                             the init's session); pid as the
//                                             sandbox sees it (the kernel adds the sender's
//                                             credentials, so the mock learns its host pid)
//   command -> mock       Record{'E', errno}  execve failed (then it exits 126 or 127)
//   init -> mock          Record{'W', status} the command's wait status, once reaped
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace lizard::mock::internal::init_protocol {

inline constexpr char kGo = 'G';
inline constexpr char kPlan = 'P';
inline constexpr char kReady = 'R';
inline constexpr char kFailed = 'F';
inline constexpr char kExec = 'X';

struct Record {
  std::uint32_t type;
  std::int32_t value;
};
inline constexpr std::uint32_t kStarted = 'S';
inline constexpr std::uint32_t kExecFailed = 'E';
inline constexpr std::uint32_t kWaitStatus = 'W';

// The largest exec spec a command reads (argv and environment together).
inline constexpr std::uint32_t kMaxSpecBytes = 64u << 20;

// A list of byte strings, each a u32 length (host order) and its bytes.
class FieldWriter {
 public:
  FieldWriter& add(std::string_view field) {
    const auto n = static_cast<std::uint32_t>(field.size());
    char len[4];
    std::memcpy(len, &n, 4);
    out_.append(len, 4);
    out_.append(field);
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// False when `bytes` is not a whole list of fields.
inline bool read_fields(std::string_view bytes, std::vector<std::string>& fields) {
  fields.clear();
  while (!bytes.empty()) {
    if (bytes.size() < 4) return false;
    std::uint32_t n;
    std::memcpy(&n, bytes.data(), 4);
    bytes.remove_prefix(4);
    if (bytes.size() < n) return false;
    fields.emplace_back(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  return true;
}

// Before the init runs, the clone child (still with the mock's own file
// system identity, and already in the sandbox's mount namespace) opens the
// sandbox's workspace, tmp and home as fds 5, 6 and 7 (kSandboxDirFds): the
// init, an unprivileged host user when the mock is root, never walks the
// mock's state directory, which may sit in a private TMPDIR. The init binds
// them from their /proc/self/fd links, then closes them.
//
// The setup plan: the directory where the new root is built (a directory of
// every host's tree, mounted over in the sandbox's own mount namespace
// only), then a flat list of steps, each a keyword and its arguments.
//   root OPTIONS         a tmpfs there: the new root
//   bind-ro SRC DST      read-only recursive bind (nosuid, nodev) of a host path
//   bind-rw SRC DST      read-write bind (nosuid, nodev), from /proc/self/fd/N
//   link TARGET PATH     a symbolic link
//   tmpfs DST OPTIONS    a tmpfs (nosuid; noexec for /dev)
//   dev NAME             bind the host's /dev/NAME onto DST /dev/NAME
//   proc DST             a /proc of the sandbox's PID namespace
//   hostname NAME
//   limit NAME VALUE     nproc, nofile or fsize for every command (soft and hard)
// DST paths are inside the new root.
inline constexpr const char* kNewRoot = "/tmp";
inline constexpr int kSandboxDirFds[3] = {5, 6, 7};  // workspace, tmp, home

// How many arguments a step takes; -1 for an unknown step.
inline int plan_arity(std::string_view step) {
  if (step == "bind-ro" || step == "bind-rw" || step == "link" || step == "tmpfs" ||
      step == "limit")
    return 2;
  if (step == "dev" || step == "proc" || step == "hostname" || step == "root") return 1;
  return -1;
}

// The exec spec's fields: a tag byte, then the value ("a" argv item, "e"
// NAME=value, "w" working directory, "u" uid, "g" gid as decimal text).
inline constexpr char kArg = 'a';
inline constexpr char kEnv = 'e';
inline constexpr char kWorkdir = 'w';
inline constexpr char kUid = 'u';
inline constexpr char kGid = 'g';

}  // namespace lizard::mock::internal::init_protocol
