// Attacks from inside a sandbox, each of which must fail: the host's files
// through a remount or a file handle, another sandbox, the secrets of PID 1
// and of the mock, the mock's sockets, the sandbox's own mount points, a
// snapshot that follows a swapped link, the limits, the filter, a terminal.
//
// These run as whatever user runs the tests: as root (sandbox root maps to
// an unprivileged host range) and, through the `isolation-unprivileged`
// ctest, as nobody (sandbox root maps to that user).
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

std::string random_token(const char* prefix) {
  std::random_device rd;
  std::string s = prefix;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < 24; ++i) s += kHex[rd() % 16];
  return s;
}

// A host directory of this test (removed at the end), readable by the mock.
class HostDir {
 public:
  HostDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lizard-attack-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
    ::chmod(path_.c_str(), 0755);
  }
  ~HostDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class IsolationAttack : public MockFixture {
 protected:
  static MockOptions options_with_canaries() {
    MockOptions o;
    o.api_keys = {api_key_canary()};
    o.control_key = control_key_canary();
    return o;
  }
  static const std::string& api_key_canary() {
    static const std::string k = random_token("liz_canarykey");
    return k;
  }
  static const std::string& control_key_canary() {
    static const std::string k = random_token("mck_canarycontrol");
    return k;
  }
  IsolationAttack() : MockFixture(options_with_canaries()) {}
};

TEST_F(IsolationAttack, RemountingASystemDirectoryReadWriteWritesNothingOnTheHost) {
  const std::string id = create();
  const std::string name = random_token("lizard-probe-");
  auto r = sh(id,
              "mount -o remount,bind,rw /etc; echo mount=$?; mount -o remount,rw /; echo "
              "root=$?; echo x > /etc/" +
                  name + "; echo write=$?");
  EXPECT_NE(r.out.find("mount=32"), std::string::npos) << r.body;
  EXPECT_EQ(r.out.find("write=0"), std::string::npos) << r.body;
  EXPECT_NE(::access(("/etc/" + name).c_str(), F_OK), 0);
  EXPECT_NE(::access(("/" + name).c_str(), F_OK), 0);
}

TEST_F(IsolationAttack, FileHandlesCannotOpenTheHostsFileSystem) {
  const std::string id = create();
  // open_by_handle_at(2) on a handle of the bound /etc would reach the host's
  // whole file system; the filter refuses it (and name_to_handle_at).
  auto r = sh(id,
              "python3 -c 'import ctypes, os\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "fd = os.open(\"/etc\", os.O_RDONLY)\n"
              "buf = ctypes.create_string_buffer(136)\n"
              "ctypes.memmove(buf, (128).to_bytes(4, \"little\"), 4)\n"
              "mount_id = ctypes.c_int()\n"
              "r1 = libc.syscall(303, fd, b\"hostname\", buf, ctypes.byref(mount_id), 0)\n"
              "e1 = ctypes.get_errno()\n"
              "r2 = libc.syscall(304, fd, buf, 0)\n"
              "e2 = ctypes.get_errno()\n"
              "print(r1, os.strerror(e1), r2, os.strerror(e2))'");
  EXPECT_EQ(r.out, "-1 Operation not permitted -1 Operation not permitted\n") << r.body;
}

// io_uring does opens, reads and sends the filter never sees as system
// calls; all three of its calls are refused. Unfiltered, the setup would
// succeed (or be EPERM where the host's kernel.io_uring_disabled is 2) and
// the other two, on descriptor -1, fail with EBADF or EINVAL: those two
// tell the filter from the kernel on any host.
TEST_F(IsolationAttack, TheFilterRefusesIoUring) {
  const std::string id = create();
  auto r = sh(id,
              "python3 -c 'import ctypes, os\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "params = ctypes.create_string_buffer(120)\n"
              "for call, args in ((425, (1, params)), (426, (-1, 1, 0, 0, 0, 0)), "
              "(427, (-1, 0, 0, 0))):\n"
              "    rc = libc.syscall(call, *args)\n"
              "    print(call, rc, os.strerror(ctypes.get_errno()) if rc < 0 else \"-\")'");
  EXPECT_EQ(r.out,
            "425 -1 Operation not permitted\n426 -1 Operation not permitted\n"
            "427 -1 Operation not permitted\n")
      << r.body;
}

// The "Uid:" line of /proc/PID/status (real, effective, saved, file-system)
// of the host process whose command line holds `needle`; empty if none.
std::string host_uids_of(const std::string& needle) {
  // A process can exit between the scan and the read of its status: getline
  // then fails (it does not throw), and the caller asks again.
  for (const pid_t pid : lizard::testing::host_pids_with(needle).value_or(std::vector<pid_t>{})) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) return line.substr(4);
    }
  }
  return {};
}

TEST_F(IsolationAttack, SandboxRootIsNeverHostRoot) {
  // A root mock whose process has supplementary groups (host group 0, say)
  // gives none of them to the sandbox: the launch is made with two, and
  // they are the test process's own again after it.
  std::vector<gid_t> groups(static_cast<std::size_t>(std::max(::getgroups(0, nullptr), 0)));
  groups.resize(static_cast<std::size_t>(
      std::max(::getgroups(static_cast<int>(groups.size()), groups.data()), 0)));
  const gid_t extra[] = {0, 4242};
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::setgroups(2, extra), 0);
  }
  const std::string id = create();
  if (root) {
    ASSERT_EQ(::setgroups(groups.size(), groups.data()), 0);
  }
  const std::string marker = std::to_string(600000 + std::random_device{}() % 99999);
  auto r = sh(id, "id -u; id -G; touch /workspace/mine; sleep " + marker + " >/dev/null 2>&1 &");
  ASSERT_EQ(r.exit_code, 0) << r.body;
  // Host groups would show as 65534, the unmapped id. A user's mock cannot
  // drop the user's own groups (setgroups is "deny" there).
  if (root) {
    EXPECT_EQ(r.out, "0\n0\n");
  } else {
    EXPECT_EQ(r.out.substr(0, 3), "0\n0") << r.out;
  }
  // uid 0 inside is, on the host, the first id of the root mock's range (a
  // user's mock: that user), for the process and for the files it makes.
  const unsigned long expected = ::geteuid() == 0 ? MockOptions{}.root_id_base : ::geteuid();
  const std::string e = std::to_string(expected);
  std::string uids;
  ASSERT_TRUE(eventually([&] { return !(uids = host_uids_of("sleep " + marker)).empty(); }));
  std::istringstream in(uids);
  unsigned long real = 0, effective = 0, saved = 0, fs = 0;
  ASSERT_TRUE(in >> real >> effective >> saved >> fs) << uids;
  EXPECT_EQ(std::vector<unsigned long>({real, effective, saved, fs}),
            std::vector<unsigned long>(4, expected))
      << uids;
  struct stat st {};
  ASSERT_EQ(::stat((server_->workspace_dir(id) + "/mine").c_str(), &st), 0);
  EXPECT_NE(st.st_uid, 0u) << "a file made by sandbox root belongs to host root";
  EXPECT_EQ(st.st_uid, expected);
  EXPECT_EQ(sh(id, "pkill sleep; echo $?").out, "0\n");
}

TEST_F(IsolationAttack, AnotherSandboxIsOutOfReach) {
  const std::string a = create(), b = create();
  ASSERT_EQ(sh(b, "echo secret-b > /workspace/secret; sleep 300 > /dev/null 2>&1 &").exit_code, 0);
  const std::string b_host = server_->workspace_dir(b);
  auto r = sh(a, "cat " + b_host +
                     "/secret; ls /proc | grep -c '^[0-9]'; "
                     "for p in /proc/[0-9]*; do cat $p/root/workspace/secret; done 2>/dev/null; "
                     "kill -9 -1; echo done");
  EXPECT_EQ(r.out.find("secret-b"), std::string::npos) << r.body;
  // Sandbox b and its sleep are untouched by a's kill -9 -1.
  EXPECT_EQ(sh(b, "cat /workspace/secret; pgrep -c sleep").out, "secret-b\n1\n");
}

TEST_F(IsolationAttack, PidOneAndTheMockHoldNoSecretASandboxCanRead) {
  ::setenv("LIZARD_API_KEY", api_key_canary().c_str(), 1);
  const std::string a = create(), b = create();
  const std::string other_secret = random_token("othersandboxsecret");
  // Another sandbox's secret: in its command's environment while it runs.
  ASSERT_EQ(exec(b, R"(["sh","-c","sleep 300 > /dev/null 2>&1 &"])",
                 R"("envs":{"OTHER":")" + other_secret + "\"}")
                .exit_code,
            0);
  auto r = sh(a,
              "cat /proc/1/cmdline | tr '\\0' ' '; echo; cat /proc/1/environ; echo env=$?; "
              "head -c 64 /proc/1/mem; echo mem=$?; ls -l /proc/1/fd/3; echo fd=$?; "
              "cat /proc/*/cmdline /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; "
              "env");
  ::unsetenv("LIZARD_API_KEY");
  EXPECT_EQ(r.out.rfind("lizard-sandbox-init \n", 0), 0u) << r.body;
  EXPECT_NE(r.out.find("env=1"), std::string::npos) << r.body;
  EXPECT_NE(r.out.find("mem=1"), std::string::npos) << r.body;
  EXPECT_EQ(r.out.find("fd=0"), std::string::npos) << r.body;
  for (const std::string& secret :
       {api_key_canary(), control_key_canary(), other_secret, std::string("liz_")}) {
    EXPECT_EQ(r.out.find(secret), std::string::npos) << secret << " is readable: " << r.body;
  }
  // Nor through the files API.
  for (const char* path : {"/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ"}) {
    auto f = get(files_path(a) + "?path=" + path);
    ASSERT_TRUE(f);
    EXPECT_NE(f->status, 200) << path << ": " << f->body;
    EXPECT_EQ(f->body.find(api_key_canary()), std::string::npos);
  }
}

TEST_F(IsolationAttack, NeitherTheApiNorTheControlPlaneIsReachableFromInside) {
  const std::string id = create();
  const std::string port = std::to_string(server_->port());
  auto r = sh(id,
              "python3 -c 'import socket, sys\n"
              "for host in (\"127.0.0.1\", \"10.0.2.2\", \"169.254.169.254\"):\n"
              "    s = socket.socket(); s.settimeout(3)\n"
              "    try:\n"
              "        s.connect((host, " +
                  port +
                  "))\n"
                  "        print(host, \"connected\")\n"
                  "    except OSError as e:\n"
                  "        print(host, \"refused\")\n'; "
                  "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '");
  EXPECT_EQ(r.out, "127.0.0.1 refused\n10.0.2.2 refused\n169.254.169.254 refused\nlo\n") << r.body;
}

TEST_F(IsolationAttack, TheFilterRefusesNamespacesAndMounts) {
  const std::string id = create();
  auto r = sh(id,
              "unshare -U true; echo userns=$?; unshare -m true; echo mntns=$?; mkdir -p /tmp/m; "
              "mount -t tmpfs x /tmp/m; echo mount=$?");
  EXPECT_EQ(r.out, "userns=1\nmntns=1\nmount=32\n") << r.body;
}

// What a command inherits from the init (which takes it on once, so that a
// command start does not pay for it): Docker's capability set as bounding
// and effective set, no_new_privs, the filter; a process group of its own in
// the init's session, which has no controlling terminal.
TEST_F(IsolationAttack, CommandsAndTheInitAreConfinedAndHaveNoTerminal) {
  const std::string id = create();
  auto r = sh(id,
              "grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\t' ' '; "
              "grep -E '^(CapBnd|NoNewPrivs|Seccomp):' /proc/1/status | tr -s '\\t' ' '; "
              "set -- $(cut -d' ' -f5,6 /proc/$$/stat); "
              "[ \"$1\" = $$ ] && echo own-group; echo session=$2; "
              "(: </dev/tty) 2>/dev/null && echo tty=open || echo tty=none");
  EXPECT_EQ(r.out,
            "CapEff: 00000000a80425fb\nCapBnd: 00000000a80425fb\nNoNewPrivs: 1\nSeccomp: 2\n"
            "CapBnd: 00000000a80425fb\nNoNewPrivs: 1\nSeccomp: 2\n"
            "own-group\nsession=1\ntty=none\n")
      << r.body;
}

TEST_F(IsolationAttack, InitCannotBeKilledFromInside) {
  const std::string id = create();
  EXPECT_EQ(sh(id, "kill -9 1; kill -TERM 1; echo sent").out, "sent\n");
  EXPECT_EQ(sh(id, "echo still here").out, "still here\n");
}

TEST_F(IsolationAttack, MountPointsOfTheSandboxCannotBeDeletedOrMoved) {
  const std::string id = create();
  for (const char* path : {"/dev/null", "/dev", "/workspace", "/tmp", "/root", "/proc", "/usr"}) {
    auto r = del(files_path(id), R"({"path":")" + std::string(path) + "\"}");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
  }
  auto moved = post(files_path(id) + "/move", R"({"from":"/dev/null","to":"/workspace/null"})");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->status, 400) << moved->body;
  auto r = sh(id, "echo hi > /dev/null && echo ok > /workspace/f && cat /workspace/f && ls /tmp");
  EXPECT_EQ(r.exit_code, 0) << r.body;
  EXPECT_EQ(r.out, "ok\n");
}

class IsolationLimits : public MockFixture {
 protected:
  IsolationLimits()
      : MockFixture(
            MockOptions{.sandbox_limits = {.max_processes = 40, .max_file_bytes = 1 << 20}}) {}
};

TEST_F(IsolationLimits, LimitsStopAForkBombAndADiskFiller) {
  const std::string id = create();
  // The bomb runs in a shell of its own (a shell that cannot fork gives up);
  // the count uses builtins only, since nothing can fork at the limit. A
  // child just forked is still "sh" until it runs exec, and under load none
  // may have got there when the bomb returns: count until two passes agree
  // on a number above zero (at most 2,000 passes).
  auto r = sh(id,
              "sh -c 'i=0; while [ $i -lt 100 ]; do sleep 60 & i=$((i+1)); done' 2>/dev/null; "
              "n=0; k=0; while [ $k -lt 2000 ]; do m=0; for p in /proc/[0-9]*; do "
              "read c < $p/comm 2>/dev/null && [ \"$c\" = sleep ] && m=$((m+1)); done; "
              "[ $m -gt 0 ] && [ $m -eq $n ] && break; n=$m; k=$((k+1)); done; "
              "echo $n; kill -9 -1; wait; "
              "head -c 3000000 /dev/zero > /tmp/big; echo write=$?; stat -c %s /tmp/big");
  std::istringstream in(r.out);
  int sleeps = 0;
  std::string write_line, size_line;
  in >> sleeps >> write_line >> size_line;
  EXPECT_GT(sleeps, 0) << r.body;
  EXPECT_LT(sleeps, 40) << r.body;
  EXPECT_NE(write_line, "write=0") << r.body;
  EXPECT_EQ(size_line, std::to_string(1 << 20)) << r.body;
}

TEST_F(IsolationLimits, TheProcessLimitHoldsForTheSandboxNotPerUser) {
  // Sandbox root becomes three other users (as a root mock; a user's mock
  // has no other uid, and setpriv fails), and each starts up to 30 sleeps.
  // The limit is the sandbox's, not each uid's: fewer than 40 in all. Were
  // it per uid, 90 would run, and 65,536 uids would use up the host's PIDs.
  const std::string id = create();
  auto r =
      sh(id,
         "for u in 1001 1002 1003; do setpriv --reuid=$u --regid=$u --clear-groups "
         "sh -c 'i=0; while [ $i -lt 30 ]; do sleep 60 & i=$((i+1)); done' 2>/dev/null; "
         "done; "
         "n=0; k=0; while [ $k -lt 2000 ]; do m=0; for p in /proc/[0-9]*; do "
         "read c < $p/comm 2>/dev/null && [ \"$c\" = sleep ] && m=$((m+1)); done; "
         "[ $m -eq $n ] && { [ $m -gt 0 ] || [ $k -ge 20 ]; } && break; n=$m; k=$((k+1)); done; "
         "echo $n; kill -9 -1; wait");
  std::istringstream in(r.out);
  int sleeps = -1;
  in >> sleeps;
  EXPECT_GE(sleeps, 0) << r.body;
  EXPECT_LT(sleeps, 40) << r.body;
  if (::geteuid() == 0) {
    EXPECT_GT(sleeps, 0) << r.body;
  }
}

// A root mock whose sandboxes may hold 40 processes each and 60 together
// (ids of its own, so that no other root mock's sandboxes count).
class IsolationLimitsAcrossSandboxes : public MockFixture {
 protected:
  IsolationLimitsAcrossSandboxes()
      : MockFixture(
            MockOptions{.sandbox_limits = {.max_processes = 40, .max_processes_all_sandboxes = 60},
                        .root_id_base = 1300000000}) {}

  // Starts up to `n` sleeps in the sandbox (a shell that cannot fork gives
  // up), leaves them running, and answers how many run: counted with
  // builtins (nothing may fork at the limit) until there are `n` or the
  // count stayed the same for 1,000 passes (a child just forked is "sh"
  // until its exec).
  int start_sleeps(const std::string& id, int n) {
    const std::string want = std::to_string(n);
    auto r = sh(id, "sh -c 'i=0; while [ $i -lt " + want +
                        " ]; do sleep 600 >/dev/null 2>&1 & i=$((i+1)); done' 2>/dev/null; "
                        "n=-1; k=0; while [ $k -lt 1000 ]; do m=0; for p in /proc/[0-9]*; do "
                        "read c < $p/comm 2>/dev/null && [ \"$c\" = sleep ] && m=$((m+1)); done; "
                        "[ $m -ge " +
                        want +
                        " ] && break; "
                        "[ $m -eq $n ] && k=$((k+1)) || k=0; n=$m; done; echo $m");
    std::istringstream in(r.out);
    int sleeps = -1;
    in >> sleeps;
    EXPECT_GE(sleeps, 0) << r.body;
    return sleeps;
  }
};

TEST_F(IsolationLimitsAcrossSandboxes, SandboxesTogetherStayUnderTheLimitForAll) {
  // Eight sandboxes each at their own limit would still use up a host's
  // PIDs: the kernel counts all sandboxes' processes together too (under
  // the uid that makes their outer namespaces). Sandbox a takes 30 of the
  // 60; b then gets the rest (fewer than 30: its init and shells count);
  // when a's sleeps end, b has room for 30.
  if (::geteuid() != 0)
    GTEST_SKIP() << "a user's mock counts the user's own processes in that limit too";
  const std::string a = create(), b = create();
  EXPECT_EQ(start_sleeps(a, 30), 30);
  const int b_first = start_sleeps(b, 30);
  EXPECT_GT(b_first, 0);
  EXPECT_LT(b_first, 30);
  EXPECT_LE(30 + b_first, 60 - 4) << "the inits and the shells count too";
  EXPECT_EQ(sh(a, "kill -9 -1; echo killed").out, "killed\n");
  ASSERT_TRUE(eventually([&] { return sh(a, "pgrep -c sleep").out == "0\n"; }));
  EXPECT_EQ(sh(b, "kill -9 -1; echo killed").out, "killed\n");
  ASSERT_TRUE(eventually([&] { return sh(b, "pgrep -c sleep").out == "0\n"; }));
  EXPECT_EQ(start_sleeps(b, 30), 30);
  sh(b, "kill -9 -1");
}

TEST_F(IsolationAttack, TreesDeeperThanTheDescriptorLimitAreRemovedWhole) {
  // A sandbox makes trees deeper than any descriptor table or stack (100,000
  // levels take it seconds), with a level of mode 000 halfway (sandbox root
  // passes it; the mock, acting as that root's owner on the host, has no
  // capability to). Removing one through the files API, and then the
  // sandbox, takes everything: no EMFILE for the mock's other threads, no
  // stack overflow, nothing left on the host. The descriptor limit is
  // lowered to 4,096 for the test, and the trees are 6,000 levels deep.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = std::min<rlim_t>(old.rlim_cur, 4096);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  struct Restore {
    rlimit limit;
    ~Restore() { ::setrlimit(RLIMIT_NOFILE, &limit); }
  } restore{old};
  const std::string id = create();
  const std::string host_ws = server_->workspace_dir(id);
  ASSERT_FALSE(host_ws.empty());
  const std::string build =
      "import os\n"
      "for tree in ('a', 'b'):\n"
      "  os.chdir('/workspace'); os.mkdir(tree); os.chdir(tree)\n"
      "  for i in range(6000):\n"
      "    os.mkdir('d')\n"
      "    if i == 3000: os.chmod('d', 0)\n"
      "    os.chdir('d')\n"
      "  open('bottom', 'w').write('x')\n"
      "print('built')\n";
  auto built = exec(id, R"(["python3", "-c", )" + quote(build) + "]");
  ASSERT_EQ(built.out, "built\n") << built.body;
  auto removed = del(files_path(id) + "?path=/workspace/a");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 200) << removed->body;
  EXPECT_EQ(sh(id, "ls -a /workspace").out, ".\n..\nb\n");
  ASSERT_EQ(del("/api/sandboxes/" + id)->status, 200);
  EXPECT_NE(::access(host_ws.c_str(), F_OK), 0) << host_ws << " is left on the host";
}

TEST_F(IsolationAttack, HostnameIsTheSandboxs) {
  const std::string id = create();
  EXPECT_EQ(sh(id, "hostname").out, id + "\n");
}

class IsolationSnapshotRace : public MockFixture {
 protected:
  IsolationSnapshotRace() : MockFixture(MockOptions{.era = Era::kFirecracker}) {}
};

TEST_F(IsolationSnapshotRace, ASwappedLinkNeverCopiesAHostFileIntoASnapshot) {
  HostDir host;
  ASSERT_FALSE(host.path().empty());
  const std::string canary = random_token("hostfilecanary");
  { std::ofstream(host.path() + "/secret") << canary << "\n"; }
  ::chmod((host.path() + "/secret").c_str(), 0644);
  const std::string id = create();
  // The sandbox swaps /workspace/d between a directory and a link to the
  // host's directory (a path that exists only on the host), as fast as it can.
  ASSERT_EQ(
      sh(id,
         "cd /workspace && mkdir -p real && echo inside > real/secret && "
         "( while :; do rm -rf d; ln -s " +
             host.path() + " d; rm -f d; cp -r real d; done ) > /dev/null 2>&1 & echo started")
          .out,
      "started\n");
  for (int i = 0; i < 15; ++i) {
    auto snap = post("/api/sandboxes/" + id + "/snapshot", R"({"name":"race"})");
    ASSERT_TRUE(snap);
    ASSERT_EQ(snap->status, 200) << snap->body;
    const std::string snapshot_id = str_field(parse(snap->body), "id");
    const std::string restored = create("\"snapshotId\":\"" + snapshot_id + "\"");
    auto r =
        sh(restored, "cat /workspace/d/secret 2>/dev/null; ls -la /workspace/d 2>&1 | head -3");
    EXPECT_EQ(r.out.find(canary), std::string::npos) << "snapshot " << i << ": " << r.body;
    del("/api/sandboxes/" + restored);
  }
}

}  // namespace
}  // namespace lizard::mock::test
