// LocalWorkspaceBackend::realpath: realpath(1) -m in C++ (path.* rules).
// Beyond the suite's path.* rules (ctest conformance_local): agreement with
// coreutils' realpath -m, loops that are ELOOP, and the 40-link limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "lizard/workspace/errors.h"
#include "local_test_support.h"

namespace lizard::workspace {
namespace {

using local_test::LocalBackendTest;
using local_test::ThrowsPathError;

using Realpath = LocalBackendTest;

class RealpathTree : public LocalBackendTest {
 protected:
  void SetUp() override {
    LocalBackendTest::SetUp();
    backend_->make_dir(at("a/b/c"));
    backend_->write_bytes(at("a/file"), "x");
    link("b/c", "a/rel");            // relative, from the link's directory
    link(at("a/b").c_str(), "abs");  // absolute
    link("../../a/b", "a/b/up");     // climbs out of its own directory
    link("rel", "a/chain");          // a link to a link
    link("missing/deeper", "a/dangling");
    link("file", "a/to-file");
  }
  void link(const std::string& target, const std::string& relative) {
    ASSERT_EQ(::symlink(target.c_str(), at(relative).c_str()), 0) << relative;
  }
};

TEST_F(RealpathTree, ResolvesLinksLikeRealpathM) {
  EXPECT_EQ(backend_->realpath(at("a/rel")), at("a/b/c"));
  EXPECT_EQ(backend_->realpath(at("abs/c")), at("a/b/c"));
  EXPECT_EQ(backend_->realpath(at("a/b/up")), at("a/b"));
  EXPECT_EQ(backend_->realpath(at("a/chain")), at("a/b/c"));
  // link/.. climbs from the link's target, not lexically.
  EXPECT_EQ(backend_->realpath(at("a/rel/..")), at("a/b"));
  EXPECT_EQ(backend_->realpath(at("abs/../..")), root_);
  // Missing components are kept as written, even below a dangling link.
  EXPECT_EQ(backend_->realpath(at("a/no/such/thing")), at("a/no/such/thing"));
  EXPECT_EQ(backend_->realpath(at("a/dangling")), at("a/missing/deeper"));
  EXPECT_EQ(backend_->realpath(at("a/dangling/x")), at("a/missing/deeper/x"));
  EXPECT_EQ(backend_->realpath(at("a/no/../rel")), at("a/b/c"));
  // "." and ".." and repeated slashes.
  EXPECT_EQ(backend_->realpath(root_ + "//a/./b/../b/c/"), at("a/b/c"));
  EXPECT_EQ(backend_->realpath(root_), root_);
  EXPECT_EQ(backend_->realpath(root_ + "/."), root_);
  EXPECT_EQ(backend_->realpath("/"), "/");
  EXPECT_EQ(backend_->realpath("/.."), "/");
}

TEST_F(RealpathTree, AgreesWithCoreutilsRealpathM) {
  const std::vector<std::string> paths = {"a/rel",
                                          "abs/c",
                                          "a/b/up/c",
                                          "a/chain/..",
                                          "a/dangling/x/../y",
                                          "a/to-file/..",
                                          "a/to-file/x",
                                          "abs/../a/rel/../../abs",
                                          "nope/../a/rel",
                                          "a/b/c/../../../a"};
  for (const auto& relative : paths) {
    const auto expected = backend_->run(Argv{{"realpath", "-m", "--", at(relative)}});
    if (expected.exit_code != 0) GTEST_SKIP() << "realpath(1) unavailable: " << expected.err;
    EXPECT_EQ(backend_->realpath(at(relative)) + "\n", expected.out) << relative;
  }
}

TEST_F(Realpath, LoopsEndWithTooManyLinks) {
  ASSERT_EQ(::symlink("self", at("self").c_str()), 0);
  ASSERT_EQ(::symlink("pong", at("ping").c_str()), 0);
  ASSERT_EQ(::symlink("ping", at("pong").c_str()), 0);
  const auto start = std::chrono::steady_clock::now();
  for (const std::string name : {"self", "ping", "pong/x"}) {
    EXPECT_THAT([&] { backend_->realpath(at(name)); },
                ThrowsPathError(std::errc::too_many_symbolic_link_levels))
        << name;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(Realpath, FortyLinksInAChainStillResolve) {
  backend_->make_dir(at("end"));
  std::string previous = "end";
  for (int i = 0; i < 39; ++i) {
    const std::string name = "l" + std::to_string(i);
    ASSERT_EQ(::symlink(previous.c_str(), at(name).c_str()), 0);
    previous = name;
  }
  EXPECT_EQ(backend_->realpath(at(previous)), at("end"));
  ASSERT_EQ(::symlink(previous.c_str(), at("l39").c_str()), 0);
  EXPECT_EQ(backend_->realpath(at("l39")), at("end"));
  ASSERT_EQ(::symlink("l39", at("l40").c_str()), 0);
  EXPECT_THAT([&] { backend_->realpath(at("l40")); }, ThrowsPathError());
}

}  // namespace
}  // namespace lizard::workspace
