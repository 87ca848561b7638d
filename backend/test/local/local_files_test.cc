// LocalWorkspaceBackend's files: the fs.* and path.* rules of the contract,
// with inputs and checks of this backend's own (names of every kind, paths
// with '.', '//' and a trailing '/', links that escape, permission bits in
// an unprivileged child). The suite runs the same rules on this backend
// (ctest conformance_local); these are its fast unit tests.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "lizard/workspace/errors.h"
#include "local_test_support.h"

namespace lizard::workspace {
namespace {

using local_test::LocalBackendTest;
using local_test::ThrowsPathError;
using ::testing::ElementsAre;

namespace fs = std::filesystem;

std::vector<std::string> names_of(const std::vector<FileEntry>& entries) {
  std::vector<std::string> names;
  for (const auto& entry : entries) names.push_back(entry.name);
  return names;
}

using Files = LocalBackendTest;

TEST_F(Files, AllByteValuesRoundTripAndOverwriteReplaces) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  const std::string path = at("new/parents/bytes.bin");
  backend_->write_bytes(path, bytes);
  EXPECT_EQ(backend_->read_bytes(path), bytes);
  backend_->write_bytes(path, "short");
  EXPECT_EQ(backend_->read_bytes(path), "short");
}

TEST_F(Files, EmptyFileRoundTrips) {
  backend_->write_bytes(at("empty"), "");
  EXPECT_EQ(backend_->read_bytes(at("empty")), "");
  EXPECT_EQ(backend_->stat(at("empty")).size, 0u);
  EXPECT_FALSE(backend_->stat(at("empty")).is_dir);
}

TEST_F(Files, LargeFilesRoundTrip) {
  for (const std::size_t size : {std::size_t{8} << 20, std::size_t{64} << 20}) {
    std::string data(size, '\0');
    for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 131) ^ (i >> 12));
    backend_->write_bytes(at("large"), data);
    EXPECT_EQ(backend_->stat(at("large")).size, size);
    EXPECT_TRUE(backend_->read_bytes(at("large")) == data) << size;
  }
}

TEST_F(Files, Exists) {
  backend_->write_bytes(at("file"), "x");
  backend_->make_dir(at("dir"));
  EXPECT_TRUE(backend_->exists(at("file")));
  EXPECT_TRUE(backend_->exists(at("dir")));
  EXPECT_TRUE(backend_->exists(root_));
  EXPECT_FALSE(backend_->exists(at("absent")));
  EXPECT_FALSE(backend_->exists(at("file/below-a-file")));
  EXPECT_FALSE(backend_->exists(at("absent/deeper")));
  // A trailing "/" names a directory: "file/" is not there, as to stat(2).
  EXPECT_FALSE(backend_->exists(at("file/")));
  EXPECT_TRUE(backend_->exists(at("dir/")));
  EXPECT_THROW(backend_->stat(at("file/")), std::filesystem::filesystem_error);
  EXPECT_THROW(backend_->stat(at("file/.")), std::filesystem::filesystem_error);
}

TEST_F(Files, StatAndListReportNamesPathsKindsAndSizes) {
  backend_->write_bytes(at("b.txt"), "12345");
  backend_->write_bytes(at("a.txt"), "1");
  backend_->write_bytes(at("sub/inner.txt"), "not listed at the top");
  backend_->write_bytes(at("C-upper"), "");
  const auto entries = backend_->list_dir(root_);
  ASSERT_THAT(names_of(entries), ElementsAre("C-upper", "a.txt", "b.txt", "sub"));
  EXPECT_EQ(entries[1], (FileEntry{"a.txt", at("a.txt"), false, 1}));
  EXPECT_EQ(entries[2], (FileEntry{"b.txt", at("b.txt"), false, 5}));
  EXPECT_EQ(entries[3].path, at("sub"));
  EXPECT_TRUE(entries[3].is_dir);
  EXPECT_EQ(backend_->stat(at("b.txt")), (FileEntry{"b.txt", at("b.txt"), false, 5}));
  const auto dir = backend_->stat(at("sub"));
  EXPECT_EQ(dir.name, "sub");
  EXPECT_EQ(dir.path, at("sub"));
  EXPECT_TRUE(dir.is_dir);
  // A trailing slash or "." does not change the answer.
  EXPECT_EQ(backend_->stat(root_ + "/./sub/").path, at("sub"));
  EXPECT_THAT(names_of(backend_->list_dir(root_ + "//sub/")), ElementsAre("inner.txt"));
  EXPECT_EQ(backend_->list_dir(root_ + "//sub/")[0].path, at("sub/inner.txt"));
  EXPECT_TRUE(backend_->stat("/").is_dir);
}

TEST_F(Files, MakeDirCreatesParentsAndIsIdempotent) {
  backend_->make_dir(at("x/y/z"));
  EXPECT_TRUE(backend_->stat(at("x/y/z")).is_dir);
  EXPECT_NO_THROW(backend_->make_dir(at("x/y/z")));
  EXPECT_NO_THROW(backend_->make_dir(at("x")));
  EXPECT_TRUE(backend_->list_dir(at("x/y/z")).empty());
}

TEST_F(Files, SharedWithCommands) {
  backend_->write_bytes(at("from-api"), "api bytes\n");
  EXPECT_EQ(backend_->run(Shell{"cat from-api"}).out, "api bytes\n");
  backend_->run(Shell{"printf 'cmd\\000bytes' > from-cmd"});
  EXPECT_EQ(backend_->read_bytes(at("from-cmd")), std::string("cmd\0bytes", 9));
}

TEST_F(Files, MissingPathsAreNotFound) {
  const std::string missing = at("missing");
  const auto not_found = ThrowsPathError(std::errc::no_such_file_or_directory);
  EXPECT_THAT([&] { backend_->read_bytes(missing); }, not_found);
  EXPECT_THAT([&] { backend_->stat(missing); }, not_found);
  EXPECT_THAT([&] { backend_->list_dir(missing); }, not_found);
  EXPECT_THAT([&] { backend_->remove(missing); }, not_found);
  EXPECT_THAT([&] { backend_->read_bytes(missing); },
              ::testing::Throws<fs::filesystem_error>(
                  ::testing::Property(&fs::filesystem_error::path1, fs::path(missing))));
}

TEST_F(Files, KindMismatchesHaveTheirPosixErrors) {
  backend_->write_bytes(at("file"), "x");
  backend_->make_dir(at("dir"));
  const auto is_a_directory = ThrowsPathError(std::errc::is_a_directory);
  const auto not_a_directory = ThrowsPathError(std::errc::not_a_directory);
  EXPECT_THAT([&] { backend_->read_bytes(at("dir")); }, is_a_directory);
  EXPECT_THAT([&] { backend_->write_bytes(at("dir"), "x"); }, is_a_directory);
  EXPECT_THAT([&] { backend_->list_dir(at("file")); }, not_a_directory);
  EXPECT_THAT([&] { backend_->write_bytes(at("file/child"), "x"); }, not_a_directory);
  EXPECT_THAT([&] { backend_->write_bytes(at("file/deeper/child"), "x"); }, not_a_directory);
  EXPECT_THAT([&] { backend_->read_bytes(at("file/child")); }, not_a_directory);
  EXPECT_THAT([&] { backend_->make_dir(at("file")); }, ThrowsPathError(std::errc::file_exists));
  EXPECT_THAT([&] { backend_->make_dir(at("file/sub")); }, not_a_directory);
  EXPECT_EQ(backend_->read_bytes(at("file")), "x");
}

// The unprivileged user and group a root test process drops to ("nobody").
constexpr uid_t kUnprivilegedId = 65534;

// Runs `checks` in a forked child that, when the tests run as root, first
// drops to kUnprivilegedId (no supplementary groups, then setresgid and
// setresuid, so it cannot regain root): permission bits are not enforced
// for root. `checks` returns what went wrong, or "" when nothing did; the
// result is that text, or why the child could not report it.
std::string in_unprivileged_child(const std::function<std::string()>& checks) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return "pipe2 failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(report[0]);
    std::string text;
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 ||
                             ::setresgid(kUnprivilegedId, kUnprivilegedId, kUnprivilegedId) != 0 ||
                             ::setresuid(kUnprivilegedId, kUnprivilegedId, kUnprivilegedId) != 0)) {
      text = "could not drop privileges";
    } else {
      try {
        text = checks();
      } catch (const std::exception& e) {
        text = std::string("unexpected exception: ") + e.what();
      }
    }
    const ssize_t written = ::write(report[1], text.data(), text.size());
    ::_exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  ::close(report[1]);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(report[0], buffer, sizeof buffer)) > 0) text.append(buffer, n);
  ::close(report[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "the unprivileged child did not finish its report: " + text;
  }
  return text;
}

// Runs as root too: the denied operations run in a child without privileges.
TEST_F(Files, PermissionDenied) {
  backend_->write_bytes(at("locked"), "secret");
  backend_->write_bytes(at("open"), "public");
  ASSERT_EQ(::chmod(at("locked").c_str(), 0), 0);
  ASSERT_EQ(::chmod(at("open").c_str(), 0666), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);  // mkdtemp's 0700 would deny everything
  const std::string failure = in_unprivileged_child([&]() -> std::string {
    if (::geteuid() == 0 || ::getegid() == 0) return "still privileged";
    // The controls: the directory is reachable and other files work, so a
    // denial below is the file's own mode.
    if (backend_->read_bytes(at("open")) != "public") return "cannot read the open file";
    backend_->write_bytes(at("open"), "changed");
    // No assertion can report from this child: the matcher as a predicate.
    const auto denied = ThrowsPathError(std::errc::permission_denied);
    const std::function<void()> read = [&] { backend_->read_bytes(at("locked")); };
    const std::function<void()> write = [&] { backend_->write_bytes(at("locked"), "x"); };
    if (!::testing::Value(read, denied)) return "reading a mode-0 file was not permission_denied";
    if (!::testing::Value(write, denied)) return "writing a mode-0 file was not permission_denied";
    return "";
  });
  EXPECT_EQ(failure, "");
  EXPECT_EQ(backend_->read_bytes(at("open")), "changed") << "the child's control write landed";
  ::chmod(at("locked").c_str(), 0600);
  EXPECT_EQ(backend_->read_bytes(at("locked")), "secret") << "the denied write changed nothing";
}

TEST_F(Files, FifoReadAndWriteFailInsteadOfHanging) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT([&] { backend_->read_bytes(at("fifo")); }, ThrowsPathError());
  EXPECT_THAT([&] { backend_->write_bytes(at("fifo"), "x"); }, ThrowsPathError());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_FALSE(backend_->stat(at("fifo")).is_dir);
}

TEST_F(Files, LoopingAndDanglingLinksListAsNonDirectories) {
  backend_->write_bytes(at("d/a-file"), "x");
  ASSERT_EQ(::symlink("self", at("d/self").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", at("d/dangling").c_str()), 0);
  ASSERT_EQ(::symlink("ping", at("d/pong").c_str()), 0);
  ASSERT_EQ(::symlink("pong", at("d/ping").c_str()), 0);
  const auto entries = backend_->list_dir(at("d"));
  ASSERT_THAT(names_of(entries), ElementsAre("a-file", "dangling", "ping", "pong", "self"));
  for (const auto& entry : entries) EXPECT_FALSE(entry.is_dir) << entry.name;
  // Everything listed can be stat'ed, exists, and removed.
  for (const auto& entry : entries) {
    EXPECT_FALSE(backend_->stat(entry.path).is_dir) << entry.name;
    EXPECT_TRUE(backend_->exists(entry.path)) << entry.name;
  }
  backend_->remove(at("d/self"));
  EXPECT_FALSE(backend_->exists(at("d/self")));
}

// make_dir through a link that loops or dangles fails as mkdir(1) does:
// ELOOP, ENOENT, not "not a directory".
TEST_F(Files, MakeDirThroughALoopingOrDanglingLinkHasTheKernelsError) {
  ASSERT_EQ(::symlink("loop", at("loop").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", at("dangling").c_str()), 0);
  EXPECT_THAT([&] { backend_->make_dir(at("loop/x")); },
              ThrowsPathError(std::errc::too_many_symbolic_link_levels));
  EXPECT_THAT([&] { backend_->make_dir(at("dangling/x")); },
              ThrowsPathError(std::errc::no_such_file_or_directory));
  EXPECT_THAT([&] { backend_->write_bytes(at("dangling/x/y"), "z"); },
              ThrowsPathError(std::errc::no_such_file_or_directory));
}

TEST_F(Files, LinksToDirectoriesAreDirectories) {
  backend_->write_bytes(at("real/inside"), "x");
  ASSERT_EQ(::symlink("real", at("alias").c_str()), 0);
  EXPECT_TRUE(backend_->stat(at("alias")).is_dir);
  EXPECT_EQ(backend_->stat(at("alias")).path, at("alias"));
  for (const auto& entry : backend_->list_dir(root_)) EXPECT_TRUE(entry.is_dir) << entry.name;
  EXPECT_THAT(names_of(backend_->list_dir(at("alias"))), ElementsAre("inside"));
  EXPECT_EQ(backend_->read_bytes(at("alias/inside")), "x");
}

TEST_F(Files, RemoveFileAndTree) {
  backend_->write_bytes(at("file"), "x");
  backend_->write_bytes(at("tree/a/b/c"), "x");
  backend_->write_bytes(at("tree/top"), "x");
  backend_->remove(at("file"));
  backend_->remove(at("tree"));
  EXPECT_FALSE(backend_->exists(at("file")));
  EXPECT_FALSE(backend_->exists(at("tree")));
  EXPECT_TRUE(backend_->list_dir(root_).empty());
}

TEST_F(Files, RemoveNeverFollowsLinks) {
  backend_->write_bytes(at("target/keep"), "kept");
  backend_->write_bytes(at("target-file"), "kept");
  ASSERT_EQ(::symlink(at("target").c_str(), at("dir-link").c_str()), 0);
  ASSERT_EQ(::symlink("target-file", at("file-link").c_str()), 0);
  backend_->make_dir(at("tree"));
  ASSERT_EQ(::symlink(at("target").c_str(), at("tree/inner-link").c_str()), 0);
  backend_->remove(at("dir-link"));
  backend_->remove(at("file-link"));
  backend_->remove(at("tree"));
  EXPECT_FALSE(backend_->exists(at("dir-link")));
  EXPECT_FALSE(backend_->exists(at("file-link")));
  EXPECT_FALSE(backend_->exists(at("tree")));
  EXPECT_EQ(backend_->read_bytes(at("target/keep")), "kept");
  EXPECT_EQ(backend_->read_bytes(at("target-file")), "kept");
}

TEST_F(Files, RemoveRefusesTheWorkingDirectoryItsAncestorsAndRoot) {
  backend_->write_bytes(at("sub/file"), "x");
  const std::string parent = fs::path(root_).parent_path().string();
  // A link outside whose target is the working directory's parent: removing
  // "<link>/<name of root>" would remove the working directory.
  const std::string outside = parent + "/lizard-local-alias-" + std::to_string(::getpid());
  ASSERT_EQ(::symlink(parent.c_str(), outside.c_str()), 0);
  ASSERT_EQ(::symlink(root_.c_str(), at("sub/root-link").c_str()), 0);
  const std::vector<std::string> refused = {
      root_,
      root_ + "/",
      root_ + "/.",
      root_ + "/sub/..",
      at("sub/root-link/.."),
      parent,
      "/",
      "//",
      outside + "/" + fs::path(root_).filename().string(),
  };
  for (const auto& path : refused) {
    EXPECT_THROW(backend_->remove(path), std::invalid_argument) << path;
  }
  ::unlink(outside.c_str());
  EXPECT_EQ(backend_->read_bytes(at("sub/file")), "x");
  // The link to the working directory is itself removable; its target stays.
  backend_->remove(at("sub/root-link"));
  EXPECT_TRUE(backend_->exists(at("sub/file")));
}

// A second backend attached by a ref that goes through a symbolic link has
// a working directory that is not its real path: removing the real path
// (or the link's target by any name) must still be refused.
TEST_F(Files, RemoveRefusesTheWorkingDirectoryOfABackendAttachedThroughALink) {
  backend_->write_bytes(at("file"), "x");
  const std::string alias =
      fs::path(root_).parent_path().string() + "/lizard-local-link-" + std::to_string(::getpid());
  ASSERT_EQ(::symlink(root_.c_str(), alias.c_str()), 0);
  LocalWorkspaceBackend attached(LocalOptions{.ref = WorkspaceRef{"local", alias}});
  EXPECT_THROW(attached.remove(root_), std::invalid_argument);
  EXPECT_THROW(attached.remove(alias + "/."), std::invalid_argument);
  ::unlink(alias.c_str());
  EXPECT_EQ(backend_->read_bytes(at("file")), "x");
}

TEST_F(Files, WriteGoesThroughSymlinks) {
  backend_->write_bytes(at("target"), "old");
  ASSERT_EQ(::symlink("target", at("link").c_str()), 0);
  backend_->write_bytes(at("link"), "new");
  EXPECT_EQ(backend_->read_bytes(at("target")), "new");
  struct stat st {};
  ASSERT_EQ(::lstat(at("link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(Files, OverwriteKeepsTheMode) {
  backend_->write_bytes(at("tool.sh"), "#!/bin/sh\necho one\n");
  ASSERT_EQ(::chmod(at("tool.sh").c_str(), 0751), 0);
  backend_->write_bytes(at("tool.sh"), "#!/bin/sh\necho two\n");
  struct stat st {};
  ASSERT_EQ(::stat(at("tool.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
  EXPECT_EQ(backend_->run(Argv{{"./tool.sh"}}).out, "two\n");
}

TEST_F(Files, OddNamesRoundTrip) {
  const std::vector<std::string> names = {
      "with space", "quote'single",  "quote\"double", "$(touch pwned)", "back`tick`",
      "new\nline",  "-leading-dash", "ünïcødé-名前",  "semi;colon&amp", "star*?[x]"};
  for (const auto& name : names) {
    const std::string path = at(name);
    backend_->write_bytes(path, name);
    EXPECT_EQ(backend_->read_bytes(path), name);
    EXPECT_EQ(backend_->stat(path), (FileEntry{name, path, false, name.size()}));
  }
  const auto entries = backend_->list_dir(root_);
  ASSERT_EQ(entries.size(), names.size());
  for (const auto& name : names) {
    EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [&](const FileEntry& e) {
      return e.name == name && e.path == at(name);
    })) << name;
    backend_->remove(at(name));
    EXPECT_FALSE(backend_->exists(at(name))) << name;
  }
  EXPECT_TRUE(backend_->list_dir(root_).empty());
}

TEST_F(Files, RelativeAndNulPathsAreInvalidArguments) {
  for (const std::string& bad :
       std::vector<std::string>{"relative", "", "./x", std::string("/a\0b", 4)}) {
    EXPECT_THROW(backend_->read_bytes(bad), std::invalid_argument);
    EXPECT_THROW(backend_->write_bytes(bad, "x"), std::invalid_argument);
    EXPECT_THROW(backend_->stat(bad), std::invalid_argument);
    EXPECT_THROW(backend_->list_dir(bad), std::invalid_argument);
    EXPECT_THROW(backend_->make_dir(bad), std::invalid_argument);
    EXPECT_THROW(backend_->remove(bad), std::invalid_argument);
    EXPECT_THROW(backend_->exists(bad), std::invalid_argument);
    EXPECT_THROW(backend_->realpath(bad), std::invalid_argument);
  }
  EXPECT_TRUE(backend_->list_dir(root_).empty());
}

}  // namespace
}  // namespace lizard::workspace
