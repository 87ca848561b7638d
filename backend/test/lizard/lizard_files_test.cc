// LizardSandboxBackend's files against the embedded mock: bytes, path
// errors, links, odd names, realpath.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "lizard_backend_test.h"

namespace lizard::workspace {
namespace {

using namespace lizard_test;

// --- files ------------------------------------------------------------------------

using LizardFilesTest = LizardCommandTest;

TEST_F(LizardFilesTest, AllByteValuesRoundTripThroughNewParents) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  server_.clear_journal();
  // Not UTF-8: the base64 as a UTF-8 file, decoded in the sandbox (two requests).
  backend_->write_bytes("/workspace/new/parents/all.bin", bytes);
  EXPECT_EQ(journal().size(), 2u);
  server_.clear_journal();
  backend_->write_bytes("/workspace/new/parents/text.txt", "UTF-8 text, \xc3\xa9");
  EXPECT_EQ(journal().size(), 1u);
  server_.clear_journal();
  EXPECT_EQ(backend_->read_bytes("/workspace/new/parents/all.bin"), bytes);
  EXPECT_EQ(journal().size(), 1u);
  backend_->write_bytes("/workspace/new/parents/all.bin", "short");
  EXPECT_EQ(backend_->read_bytes("/workspace/new/parents/all.bin"), "short");
  EXPECT_EQ(backend_->run(Shell{"cat new/parents/all.bin"}).out, "short");
  backend_->run(Shell{"printf 'from command' > fromcmd"});
  EXPECT_EQ(backend_->read_bytes("/workspace/fromcmd"), "from command");
}

TEST_F(LizardFilesTest, LargeFilesRoundTripExactly) {
  for (const std::size_t size : {std::size_t{8} << 20, std::size_t{64} << 20}) {
    const std::string data = random_bytes(size, size);
    backend_->write_bytes("/workspace/large.bin", data);
    EXPECT_TRUE(backend_->read_bytes("/workspace/large.bin") == data) << size;
  }
}

TEST_F(LizardFilesTest, EmptyFileStatAndListInOneRequestEach) {
  backend_->write_bytes("/workspace/d/empty", "");
  backend_->write_bytes("/workspace/d/b.txt", "12345");
  backend_->make_dir("/workspace/d/sub");
  server_.clear_journal();
  const auto st = backend_->stat("/workspace/d/empty");
  EXPECT_EQ(st, (FileEntry{"empty", "/workspace/d/empty", false, 0}));
  const auto entries = backend_->list_dir("/workspace/d");
  EXPECT_TRUE(backend_->exists("/workspace/d/sub"));
  EXPECT_FALSE(backend_->exists("/workspace/d/absent"));
  EXPECT_EQ(journal().size(), 4u);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0], (FileEntry{"b.txt", "/workspace/d/b.txt", false, 5}));
  EXPECT_EQ(entries[1].name, "empty");
  EXPECT_EQ(entries[2].name, "sub");
  EXPECT_TRUE(entries[2].is_dir);
  EXPECT_TRUE(backend_->stat("/workspace/d/sub").is_dir);
}

void expect_errc(const std::function<void()>& f, std::errc code) {
  try {
    f();
    ADD_FAILURE() << "expected " << std::make_error_code(code).message();
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(code)) << e.what();
  }
}

TEST_F(LizardFilesTest, PathErrorsAreTheExactPosixKind) {
  backend_->write_bytes("/workspace/file", "x");
  backend_->make_dir("/workspace/dir");
  const auto enoent = std::errc::no_such_file_or_directory;
  expect_errc([&] { backend_->read_bytes("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->stat("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->list_dir("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->remove("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->read_bytes("/workspace/dir"); }, std::errc::is_a_directory);
  expect_errc([&] { backend_->write_bytes("/workspace/dir", "x"); }, std::errc::is_a_directory);
  expect_errc([&] { backend_->list_dir("/workspace/file"); }, std::errc::not_a_directory);
  expect_errc([&] { backend_->write_bytes("/workspace/file/x", "x"); }, std::errc::not_a_directory);
  expect_errc([&] { backend_->make_dir("/workspace/file"); }, std::errc::file_exists);
  EXPECT_NO_THROW(backend_->make_dir("/workspace/dir"));
  EXPECT_THROW(backend_->read_bytes("relative"), std::invalid_argument);
}

TEST_F(LizardFilesTest, FifoReadFailsFast) {
  backend_->run(Shell{"mkfifo fifo"});
  EXPECT_THROW(backend_->read_bytes("/workspace/fifo"), std::filesystem::filesystem_error);
}

TEST_F(LizardFilesTest, SymlinksBehaveAsTheContractSays) {
  backend_->write_bytes("/workspace/target/file", "old");
  backend_->run(
      Shell{"ln -s target/file link; ln -s target dirlink; ln -s loop loop; "
            "ln -s nowhere dangling"});
  backend_->write_bytes("/workspace/link", "new");
  EXPECT_EQ(backend_->read_bytes("/workspace/target/file"), "new");
  EXPECT_TRUE(backend_->stat("/workspace/dirlink").is_dir);
  EXPECT_EQ(backend_->stat("/workspace/link").size, 3u);
  const auto entries = backend_->list_dir("/workspace");
  std::map<std::string, FileEntry> by_name;
  for (const auto& e : entries) by_name[e.name] = e;
  EXPECT_TRUE(by_name.at("dirlink").is_dir);
  EXPECT_FALSE(by_name.at("loop").is_dir);
  EXPECT_FALSE(by_name.at("dangling").is_dir);
  EXPECT_FALSE(backend_->exists("/workspace/dangling"));
  backend_->remove("/workspace/link");
  EXPECT_FALSE(backend_->exists("/workspace/link"));
  EXPECT_EQ(backend_->read_bytes("/workspace/target/file"), "new");
  backend_->remove("/workspace/target");
  EXPECT_FALSE(backend_->exists("/workspace/target"));
}

TEST_F(LizardFilesTest, OverwriteKeepsModeBits) {
  backend_->write_bytes("/workspace/tool.sh", "#!/bin/sh\necho one\n");
  backend_->run(Shell{"chmod 755 tool.sh"});
  backend_->write_bytes("/workspace/tool.sh", "#!/bin/sh\necho two\n");
  EXPECT_EQ(backend_->run(Argv{{"/workspace/tool.sh"}}).out, "two\n");
  EXPECT_EQ(backend_->run(Shell{"stat -c %a tool.sh"}).out, "755\n");
}

TEST_F(LizardFilesTest, RemoveRefusesTheWorkingDirectoryAndItsAncestors) {
  server_.clear_journal();
  for (const char* p : {"/workspace", "/workspace/", "/", "/workspace/a/..", "//"}) {
    EXPECT_THROW(backend_->remove(p), std::invalid_argument) << p;
  }
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardFilesTest, OddNamesRoundTrip) {
  for (const std::string name : {"with space", "quote'\"", "$(id)", "new\nline", "-dash", "ünï"}) {
    const std::string path = "/workspace/odd/" + name;
    backend_->write_bytes(path, name);
    EXPECT_EQ(backend_->read_bytes(path), name);
    EXPECT_EQ(backend_->stat(path).name, name);
    const auto entries = backend_->list_dir("/workspace/odd");
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].name, name);
    backend_->remove(path);
    EXPECT_FALSE(backend_->exists(path));
  }
}

TEST_F(LizardFilesTest, RealpathResolvesInsideTheSandboxAndSurvivesLoops) {
  backend_->run(Shell{"mkdir -p real/sub && ln -s real/sub rel && ln -s loop loop"});
  EXPECT_EQ(backend_->realpath("/workspace/rel/../missing/x"), "/workspace/real/missing/x");
  EXPECT_EQ(backend_->realpath("/workspace"), "/workspace");
  try {
    const auto p = backend_->realpath("/workspace/loop");
    EXPECT_EQ(p.rfind("/workspace", 0), 0u);
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::too_many_symbolic_link_levels));
  }
}

}  // namespace
}  // namespace lizard::workspace
