// LizardSandboxBackend's files against the embedded mock.
//
// The conformance suite runs every fs.* and path.* rule on this backend and
// this mock (ctests conformance_lizard, conformance_lizard_firecracker);
// this file checks what those rules do not: that a FIFO read fails with a
// path error (the rule takes any exception), dangling links in a listing
// and in exists(), that a refused remove sends nothing, that a realpath
// loop is ELOOP when it is an error, and make_dir's errno for what the disk
// cannot show. The requests each file operation
// costs are in RequestCountsPerOperation (lizard_backend_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "lizard_backend_test.h"

namespace lizard::workspace {
namespace {

using namespace lizard_test;

using LizardFilesTest = LizardCommandTest;

// The path error a call raises; none: an empty code.
template <class Call>
std::error_code path_error_of(const Call& call) {
  try {
    call();
  } catch (const std::filesystem::filesystem_error& e) {
    return e.code();
  }
  return {};
}

// fs.fifo-read-does-not-hang accepts any exception, in time.
TEST_F(LizardFilesTest, AFifoReadIsAPathError) {
  backend_->run(Shell{"mkfifo fifo"});
  EXPECT_THAT([&] { backend_->read_bytes("/workspace/fifo"); }, ThrowsPathError());
}

// fs.symlink-loop-listing lists a link loop; path.entries-follow-links links
// that resolve. A link to nowhere lists as a non-directory, and exists()
// says it is not there.
TEST_F(LizardFilesTest, ADanglingLinkListsAsAFileAndDoesNotExist) {
  backend_->run(Shell{"mkdir d && ln -s nowhere d/dangling && printf x > d/file"});
  std::map<std::string, FileEntry> by_name;
  for (const auto& e : backend_->list_dir("/workspace/d")) by_name[e.name] = e;
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_FALSE(by_name.at("dangling").is_dir);
  EXPECT_EQ(by_name.at("dangling").path, "/workspace/d/dangling");
  EXPECT_FALSE(backend_->exists("/workspace/d/dangling"));
}

// fs.remove-refuses-working-dir checks that nothing is removed; here nothing
// is even sent.
TEST_F(LizardFilesTest, RefusedRemovesSendNothing) {
  for (const char* p : {"/workspace", "/workspace/", "/", "/workspace/a/..", "//"}) {
    EXPECT_THAT([&] { backend_->remove(p); }, ThrowsInvalidArgument()) << p;
  }
  EXPECT_TRUE(journal().empty());
}

// path.realpath-loop accepts any error for a loop; this backend's is ELOOP.
// A link's '..' followed by missing parts resolves from the link's target.
TEST_F(LizardFilesTest, RealpathResolvesInsideTheSandboxAndSurvivesLoops) {
  backend_->run(Shell{"mkdir -p real/sub && ln -s real/sub rel && ln -s loop loop"});
  EXPECT_EQ(backend_->realpath("/workspace/rel/../missing/x"), "/workspace/real/missing/x");
  try {
    const auto p = backend_->realpath("/workspace/loop");
    EXPECT_EQ(p.rfind("/workspace", 0), 0u);
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::too_many_symbolic_link_levels));
  }
}

// make_dir names what the disk cannot show: a read-only file system (the
// mock binds /usr read-only) and a name too long are not "missing", and a
// directory named like an error changes nothing.
TEST_F(LizardFilesTest, MakeDirNamesTheErrorsTheDiskCannotShow) {
  const auto code_of = [&](const std::string& path) {
    return path_error_of([&] { backend_->make_dir(path); });
  };
  EXPECT_EQ(code_of("/usr/lizard-made/sub"),
            std::make_error_code(std::errc::read_only_file_system));
  EXPECT_EQ(code_of("/workspace/" + std::string(300, 'n')),
            std::make_error_code(std::errc::filename_too_long));
  backend_->run(Shell{"printf x > 'Read-only file system'"});
  EXPECT_EQ(code_of("/workspace/Read-only file system/sub"),
            std::make_error_code(std::errc::not_a_directory));
  EXPECT_EQ(code_of("/workspace/x: Read-only file system"), std::error_code());
}

// A path ending in "/" names a directory, as open(2) and stat(2) read it
// (the local backend's answers); the files API read and wrote "file/" as
// the file, and "new/" created a file "new".
TEST_F(LizardFilesTest, ATrailingSlashNamesADirectoryAsLocally) {
  backend_->run(Shell{"printf x > f && mkdir d"});
  const auto not_dir = std::make_error_code(std::errc::not_a_directory);
  const auto is_dir = std::make_error_code(std::errc::is_a_directory);
  const auto missing = std::make_error_code(std::errc::no_such_file_or_directory);
  EXPECT_EQ(path_error_of([&] { backend_->read_bytes("/workspace/f/"); }), not_dir);
  EXPECT_EQ(path_error_of([&] { backend_->read_bytes("/workspace/f/."); }), not_dir);
  EXPECT_EQ(path_error_of([&] { backend_->read_bytes("/workspace/d/"); }), is_dir);
  EXPECT_EQ(path_error_of([&] { backend_->read_bytes("/workspace/missing/"); }), missing);
  EXPECT_EQ(path_error_of([&] { backend_->write_bytes("/workspace/f/", "y"); }), is_dir);
  EXPECT_EQ(path_error_of([&] { backend_->write_bytes("/workspace/new/", "y"); }), is_dir);
  EXPECT_EQ(path_error_of([&] { backend_->write_bytes("/workspace/missing/new/", "y"); }), missing);
  EXPECT_EQ(path_error_of([&] { backend_->write_bytes("/workspace/f/new/", "y"); }), not_dir);
  EXPECT_EQ(backend_->read_bytes("/workspace/f"), "x");
  EXPECT_FALSE(backend_->exists("/workspace/new"));
  EXPECT_FALSE(backend_->exists("/workspace/f/"));
  EXPECT_TRUE(backend_->exists("/workspace/d/"));
  EXPECT_EQ(path_error_of([&] { backend_->stat("/workspace/f/"); }), not_dir);
  EXPECT_TRUE(backend_->stat("/workspace/d/").is_dir);
  EXPECT_TRUE(backend_->exists("/workspace/f"));
}

// The files API has no code for a name too long and answers EINVAL; the
// path's lengths tell it, so that the error is ENAMETOOLONG, as locally.
TEST_F(LizardFilesTest, ANameTooLongIsTheKernelsErrorNotAnInvalidArgument) {
  const std::string long_name = "/workspace/" + std::string(300, 'n');
  const auto too_long = std::make_error_code(std::errc::filename_too_long);
  EXPECT_EQ(path_error_of([&] { backend_->read_bytes(long_name); }), too_long);
  EXPECT_EQ(path_error_of([&] { backend_->write_bytes(long_name, "x"); }), too_long);
  EXPECT_EQ(path_error_of([&] { backend_->stat(long_name); }), too_long);
  EXPECT_EQ(path_error_of([&] { backend_->list_dir(long_name); }), too_long);
  EXPECT_EQ(path_error_of([&] { backend_->read_bytes("/workspace/" + std::string(255, 'n')); }),
            std::make_error_code(std::errc::no_such_file_or_directory));
}

}  // namespace
}  // namespace lizard::workspace
