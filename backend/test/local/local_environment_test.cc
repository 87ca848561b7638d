// LocalWorkspaceBackend as an environment: the env.* rules of the contract.
// Beyond the suite's env.* rules (ctest conformance_local): the ref is the
// canonical directory, roots reached through links, attach refusing other
// providers and relative ids, destroy of unwritable trees, destroy by
// another object, every running command stopped by destroy, background
// children left running when the object is dropped.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>
#include <stop_token>
#include <thread>
#include <vector>

#include "lizard/workspace/errors.h"
#include "local_test_support.h"

namespace lizard::workspace {
namespace {

using local_test::Eventually;
using local_test::LocalBackendTest;
using local_test::process_gone;

namespace fs = std::filesystem;

// A scratch directory of the test's own, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "lizard-local-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = fs::canonical(pattern).string();
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using Environment = LocalBackendTest;

TEST_F(Environment, RefIsTheCanonicalWorkingDirectory) {
  ASSERT_TRUE(backend_->ref().has_value());
  EXPECT_EQ(*backend_->ref(), (WorkspaceRef{"local", root_}));
  EXPECT_EQ(root_, fs::canonical(root_).string());
  EXPECT_EQ(root_.front(), '/');
  EXPECT_TRUE(fs::is_directory(root_));
  // The ref does not change with use.
  backend_->run(Shell{"true"});
  backend_->write_bytes(at("f"), "x");
  EXPECT_EQ(*backend_->ref(), (WorkspaceRef{"local", root_}));
  EXPECT_EQ(backend_->run(Shell{"pwd -P"}).out, backend_->working_dir() + "\n");
}

TEST_F(Environment, CapabilitiesAreAllThree) {
  const auto caps = backend_->capabilities();
  EXPECT_TRUE(caps.has(Capability::kCommands));
  EXPECT_TRUE(caps.has(Capability::kFilesystem));
  EXPECT_TRUE(caps.has(Capability::kRealpath));
  EXPECT_EQ(backend_->commands(), backend_.get());
  EXPECT_EQ(backend_->filesystem(), backend_.get());
  EXPECT_EQ(backend_->realpath_support(), backend_.get());
}

TEST(EnvironmentRoot, RootReachedThroughALinkIsCanonical) {
  ScratchDir scratch;
  ASSERT_EQ(::mkdir((scratch.path() + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (scratch.path() + "/alias").c_str()), 0);
  LocalWorkspaceBackend backend(LocalOptions{scratch.path() + "/alias/./ws/", {}, {}});
  EXPECT_EQ(backend.working_dir(), scratch.path() + "/real/ws");
  EXPECT_TRUE(fs::is_directory(scratch.path() + "/real/ws"));
  EXPECT_EQ(backend.run(Shell{"pwd -P"}).out, scratch.path() + "/real/ws\n");
  EXPECT_EQ(backend.ref()->id, scratch.path() + "/real/ws");
}

TEST(EnvironmentRoot, FreshDirectoriesAreDistinctAndUnderTmpdir) {
  ScratchDir scratch;
  const char* previous = ::getenv("TMPDIR");
  const std::string saved = previous ? previous : "";
  ASSERT_EQ(::setenv("TMPDIR", scratch.path().c_str(), 1), 0);
  LocalWorkspaceBackend a;
  LocalWorkspaceBackend b;
  if (previous) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_NE(a.working_dir(), b.working_dir());
  EXPECT_EQ(fs::path(a.working_dir()).parent_path().string(), scratch.path());
  EXPECT_EQ(fs::path(b.working_dir()).parent_path().string(), scratch.path());
}

TEST(EnvironmentRoot, ConcurrentFirstUseReachesOneEnvironment) {
  ScratchDir scratch;
  LocalWorkspaceBackend backend(LocalOptions{scratch.path() + "/ws", {}, {}});
  constexpr int kOperations = 8;
  std::vector<std::string> seen(kOperations);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kOperations; ++i) {
      threads.emplace_back([&, i] {
        if (i % 2 == 0) {
          seen[i] = backend.run(Shell{"pwd -P"}).out;
        } else {
          backend.write_bytes(backend.working_dir() + "/f" + std::to_string(i), "x");
          seen[i] = backend.working_dir() + "\n";
        }
      });
    }
  }
  for (const auto& one : seen) EXPECT_EQ(one, scratch.path() + "/ws\n");
  // Exactly one environment directory exists in the scratch directory.
  std::size_t dirs = 0;
  for (const auto& entry : fs::directory_iterator(scratch.path())) dirs += entry.is_directory();
  EXPECT_EQ(dirs, 1u);
  EXPECT_EQ(backend.list_dir(backend.working_dir()).size(), std::size_t{kOperations / 2});
}

TEST_F(Environment, AttachByRefSeesTheSameFiles) {
  backend_->write_bytes(at("shared.txt"), "from a");
  LocalWorkspaceBackend attached(LocalOptions{{}, {}, backend_->ref()});
  EXPECT_EQ(attached.ref(), backend_->ref());
  EXPECT_EQ(attached.working_dir(), root_);
  EXPECT_EQ(attached.read_bytes(at("shared.txt")), "from a");
  EXPECT_EQ(attached.run(Shell{"cat shared.txt"}).out, "from a");
  attached.write_bytes(at("back.txt"), "from b");
  EXPECT_EQ(backend_->read_bytes(at("back.txt")), "from b");
}

TEST_F(Environment, AttachRejectsOtherProvidersAndRelativeIds) {
  EXPECT_THROW(LocalWorkspaceBackend(LocalOptions{{}, {}, WorkspaceRef{"lizard", root_}}),
               std::invalid_argument);
  EXPECT_THROW(LocalWorkspaceBackend(LocalOptions{{}, {}, WorkspaceRef{"local", "relative/dir"}}),
               std::invalid_argument);
}

// Every operation of a backend whose environment is gone.
std::vector<std::pair<const char*, std::function<void(LocalWorkspaceBackend&)>>> all_operations(
    const std::string& root) {
  return {
      {"run", [](auto& b) { b.run(Shell{"true"}); }},
      {"read_bytes", [root](auto& b) { b.read_bytes(root + "/f"); }},
      {"write_bytes", [root](auto& b) { b.write_bytes(root + "/f", "x"); }},
      {"stat", [root](auto& b) { b.stat(root); }},
      {"list_dir", [root](auto& b) { b.list_dir(root); }},
      {"make_dir", [root](auto& b) { b.make_dir(root + "/d"); }},
      {"remove", [root](auto& b) { b.remove(root + "/f"); }},
      {"exists", [root](auto& b) { b.exists(root + "/f"); }},
      {"realpath", [root](auto& b) { b.realpath(root + "/f"); }},
  };
}

TEST_F(Environment, DestroyRemovesTheDirectoryAndLaterOperationsAreUnavailable) {
  backend_->write_bytes(at("deep/tree/file"), "x");
  backend_->destroy();
  EXPECT_FALSE(fs::exists(root_));
  for (const auto& [name, operation] : all_operations(root_)) {
    EXPECT_THROW(operation(*backend_), WorkspaceUnavailableError) << name;
  }
  EXPECT_FALSE(fs::exists(root_));
  EXPECT_NO_THROW(backend_->destroy());
  EXPECT_EQ(*backend_->ref(), (WorkspaceRef{"local", root_}));
}

TEST_F(Environment, DestroyRemovesDirectoriesWithoutPermissions) {
  backend_->write_bytes(at("locked/inner/file"), "x");
  ASSERT_EQ(::chmod(at("locked/inner").c_str(), 0), 0);
  ASSERT_EQ(::chmod(at("locked").c_str(), 0), 0);
  backend_->destroy();
  EXPECT_FALSE(fs::exists(root_));
}

TEST_F(Environment, AttachingToADestroyedEnvironmentIsUnavailableAndCreatesNothing) {
  const WorkspaceRef ref = *backend_->ref();
  backend_->destroy();
  LocalWorkspaceBackend attached(LocalOptions{{}, {}, ref});
  EXPECT_EQ(attached.ref(), ref);
  for (const auto& [name, operation] : all_operations(root_)) {
    EXPECT_THROW(operation(attached), WorkspaceUnavailableError) << name;
  }
  EXPECT_FALSE(fs::exists(root_));
  EXPECT_NO_THROW(attached.destroy());
}

TEST_F(Environment, DestroyByAnotherObjectMakesThisOneUnavailable) {
  LocalWorkspaceBackend attached(LocalOptions{{}, {}, backend_->ref()});
  attached.destroy();
  EXPECT_THROW(backend_->run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend_->write_bytes(at("f"), "x"), WorkspaceUnavailableError);
  EXPECT_FALSE(fs::exists(root_));
}

TEST_F(Environment, DestroyDuringACommandMakesItUnavailable) {
  std::jthread destroyer([&] {
    if (Eventually([&] { return fs::exists(at("started")); })) backend_->destroy();
  });
  EXPECT_THROW(backend_->run(Shell{"echo $$ > sh.pid; touch started; sleep 300"}),
               WorkspaceUnavailableError);
  destroyer.join();
  EXPECT_FALSE(fs::exists(root_));
}

TEST_F(Environment, DestroyStopsEveryRunningCommand) {
  constexpr int kCommands = 4;
  std::vector<int> unavailable(kCommands, 0);
  {
    std::vector<std::jthread> runners;
    for (int i = 0; i < kCommands; ++i) {
      runners.emplace_back([&, i] {
        try {
          backend_->run(Shell{"touch started" + std::to_string(i) + "; sleep 300"});
        } catch (const WorkspaceUnavailableError&) {
          unavailable[i] = 1;
        }
      });
    }
    ASSERT_TRUE(Eventually([&] {
      for (int i = 0; i < kCommands; ++i) {
        if (!fs::exists(at("started" + std::to_string(i)))) return false;
      }
      return true;
    }));
    backend_->destroy();
  }
  for (int i = 0; i < kCommands; ++i) EXPECT_EQ(unavailable[i], 1) << i;
}

TEST_F(Environment, DroppingTheObjectKeepsTheEnvironment) {
  backend_->write_bytes(at("kept"), "still here");
  const WorkspaceRef ref = *backend_->ref();
  backend_.reset();
  EXPECT_TRUE(fs::exists(root_ + "/kept"));
  LocalWorkspaceBackend again(LocalOptions{{}, {}, ref});
  EXPECT_EQ(again.read_bytes(root_ + "/kept"), "still here");
  again.destroy();
  EXPECT_FALSE(fs::exists(root_));
}

TEST_F(Environment, DroppingTheObjectLeavesBackgroundChildrenRunning) {
  const auto result = backend_->run(Shell{"sleep 300 & echo $!"});
  const pid_t child = static_cast<pid_t>(std::stol(result.out));
  const WorkspaceRef ref = *backend_->ref();
  backend_.reset();
  EXPECT_FALSE(process_gone(child));
  ::kill(child, SIGKILL);
  EXPECT_TRUE(Eventually([&] { return process_gone(child); }));
  LocalWorkspaceBackend(LocalOptions{{}, {}, ref}).destroy();
}

}  // namespace
}  // namespace lizard::workspace
