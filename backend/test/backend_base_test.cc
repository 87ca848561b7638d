// BackendBase (backend.h): capabilities() and the three accessors come from
// the list of interfaces a backend derives from, so they cannot disagree.
#include <gtest/gtest.h>

#include <stdexcept>

#include "lizard/workspace/backend.h"

namespace lizard::workspace {
namespace {

// A backend that implements files and realpath, nothing of commands.
class FilesAndRealpath final : public BackendBase<SupportsFilesystem, SupportsRealpath> {
 public:
  std::optional<WorkspaceRef> ref() const override { return std::nullopt; }
  std::string working_dir() const override { return "/w"; }
  void destroy() override {}
  std::string read_bytes(const std::string&) override { return "bytes"; }
  void write_bytes(const std::string&, const std::string&) override {}
  FileEntry stat(const std::string&) override { throw std::logic_error("unused"); }
  std::vector<FileEntry> list_dir(const std::string&) override { return {}; }
  void make_dir(const std::string&) override {}
  void remove(const std::string&) override {}
  bool exists(const std::string&) override { return false; }
  std::string realpath(const std::string& path) override { return path; }
};

class Nothing final : public BackendBase<> {
 public:
  std::optional<WorkspaceRef> ref() const override { return std::nullopt; }
  std::string working_dir() const override { return "/"; }
  void destroy() override {}
};

static_assert(FilesAndRealpath::kCapabilities ==
              Capabilities{Capability::kFilesystem, Capability::kRealpath});
static_assert(Nothing::kCapabilities == Capabilities{});
// The order of the list does not matter.
static_assert(BackendBase<SupportsRealpath, SupportsCommands>::kCapabilities ==
              Capabilities{Capability::kCommands, Capability::kRealpath});

TEST(BackendBase, CapabilitiesAndAccessorsComeFromTheSameList) {
  FilesAndRealpath backend;
  WorkspaceBackend& generic = backend;
  EXPECT_EQ(generic.capabilities(), FilesAndRealpath::kCapabilities);
  EXPECT_EQ(generic.commands(), nullptr);
  ASSERT_NE(generic.filesystem(), nullptr);
  ASSERT_NE(generic.realpath_support(), nullptr);
  EXPECT_EQ(generic.filesystem(), static_cast<SupportsFilesystem*>(&backend));
  EXPECT_EQ(generic.filesystem()->read_bytes("/w/x"), "bytes");
  EXPECT_EQ(generic.realpath_support()->realpath("/a/b"), "/a/b");
}

TEST(BackendBase, AnEmptyListOffersNothing) {
  Nothing backend;
  WorkspaceBackend& generic = backend;
  EXPECT_EQ(generic.capabilities(), Capabilities{});
  EXPECT_EQ(generic.commands(), nullptr);
  EXPECT_EQ(generic.filesystem(), nullptr);
  EXPECT_EQ(generic.realpath_support(), nullptr);
}

}  // namespace
}  // namespace lizard::workspace
