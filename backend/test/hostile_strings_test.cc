// The hostile-string matrix: strings that mean something to a shell, to
// printf or to a terminal go through every operation of every bundled
// backend (LocalWorkspaceBackend, LizardSandboxBackend on both eras of the
// embedded mock) and come out literally; none of them makes anything run.
// A backend that builds shell text from caller strings fails here first.
// The suite's cmd.argv-literal, cmd.env-exact and fs.odd-names try some of
// these strings on one operation each; this matrix tries every string on
// every operation, on both backends and both eras, with one canary for all.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "lizard/mock/mock_server.h"
#include "lizard/testing/mock_fixture.h"
#include "lizard/workspace/lizard_sandbox_backend.h"
#include "lizard/workspace/local_workspace_backend.h"

namespace lizard::workspace {
namespace {

// Each string is also used as a file name, so none holds '/' or NUL.
const std::vector<std::string>& hostile_strings() {
  static const std::vector<std::string> strings = {
      "$(touch CANARY)",
      "`touch CANARY`",
      "'; touch CANARY; '",
      "\"; touch CANARY; \"",
      "a\nb\ntouch CANARY",
      "-n",
      "--",
      "-rf",
      "*",
      "?[a-z]{x,y}",
      "%s%n%x%%",
      "\x1b[31mred\x1b[0m\x07",
      "a && touch CANARY || touch CANARY",
      "$HOME ${IFS} $0 $$ !!",
      " leading and trailing ",
      "\\\\ \\n \\x41 \\",
      "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\xa6\x8e",
      "> CANARY < nul | cat",
  };
  return strings;
}

enum class Kind { kLocal, kLizardKubernetes, kLizardFirecracker };

std::string kind_name(const ::testing::TestParamInfo<Kind>& info) {
  switch (info.param) {
    case Kind::kLocal:
      return "Local";
    case Kind::kLizardKubernetes:
      return "LizardKubernetes";
    case Kind::kLizardFirecracker:
      return "LizardFirecracker";
  }
  return "Unknown";
}

class HostileStrings : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kLocal) {
      backend_ = std::make_unique<LocalWorkspaceBackend>(LocalOptions{});
    } else {
      server_ = std::make_unique<mock::MockServer>(GetParam() == Kind::kLizardFirecracker
                                                       ? lizard::testing::firecracker()
                                                       : mock::MockOptions{});
      backend_ = std::make_unique<LizardSandboxBackend>(lizard::testing::options_for(*server_));
    }
    dir_ = backend_->working_dir() + "/hostile";
    canary_ = dir_ + "/CANARY";
    fs().make_dir(dir_);
  }
  void TearDown() override {
    if (backend_) backend_->destroy();
  }

  SupportsCommands& cmd() { return *backend_->commands(); }
  SupportsFilesystem& fs() { return *backend_->filesystem(); }

  // Nothing any string said has run: no CANARY anywhere it could land.
  void expect_no_canary() {
    EXPECT_FALSE(fs().exists(canary_)) << "a string ran as a command in " << dir_;
    EXPECT_FALSE(fs().exists(backend_->working_dir() + "/CANARY"))
        << "a string ran as a command in the working directory";
  }

  std::unique_ptr<mock::MockServer> server_;
  std::unique_ptr<WorkspaceBackend> backend_;
  std::string dir_;
  std::string canary_;
};

TEST_P(HostileStrings, ArgvItemsArriveLiterally) {
  for (const auto& s : hostile_strings()) {
    auto r = cmd().run(Argv{{"printf", "%s", s}});
    EXPECT_EQ(r.exit_code, 0) << s;
    EXPECT_EQ(r.out, s) << "argv item";
    // As the program's own arguments after a shell's $1, too.
    auto sh = cmd().run(Argv{{"sh", "-c", "printf %s \"$1\"", "sh", s}});
    EXPECT_EQ(sh.out, s) << "a shell's $1";
  }
  expect_no_canary();
}

TEST_P(HostileStrings, EnvValuesAndNamesArriveLiterally) {
  for (const auto& s : hostile_strings()) {
    RunOptions options;
    options.env = {{"LZ_HOSTILE", s}};
    auto r = cmd().run(Argv{{"printenv", "LZ_HOSTILE"}}, options);
    EXPECT_EQ(r.out, s + "\n") << "env value";
  }
  // Strings as names too, where a name can hold them (no '=').
  RunOptions names;
  for (const auto& s : hostile_strings()) {
    if (s.find('=') == std::string::npos) names.env[s] = "value of " + s;
  }
  auto r = cmd().run(Argv{{"env", "-0"}}, names);
  const std::string entries = std::string(1, '\0') + r.out;  // every entry between NULs
  for (const auto& [name, value] : names.env) {
    EXPECT_NE(entries.find(std::string(1, '\0') + name + "=" + value + std::string(1, '\0')),
              std::string::npos)
        << "env name \"" << name << "\"";
  }
  expect_no_canary();
}

TEST_P(HostileStrings, TimeoutsAndWorkingDirDoNotInterpretOutput) {
  // A command whose output is itself hostile: the result is only data.
  for (const auto& s : hostile_strings()) {
    RunOptions options;
    options.timeout = Seconds(30);
    auto r =
        cmd().run(Argv{{"sh", "-c", "printf %s \"$1\"; printf %s \"$1\" >&2", "sh", s}}, options);
    EXPECT_EQ(r.out, s);
    EXPECT_EQ(r.err, s);
  }
  expect_no_canary();
}

TEST_P(HostileStrings, FileNamesAndContentsRoundTrip) {
  for (const auto& s : hostile_strings()) {
    const std::string path = dir_ + "/" + s;
    fs().write_bytes(path, s);
    EXPECT_EQ(fs().read_bytes(path), s) << "content of \"" << s << "\"";
    EXPECT_TRUE(fs().exists(path)) << s;
    const FileEntry entry = fs().stat(path);
    EXPECT_EQ(entry.name, s);
    EXPECT_EQ(entry.path, path);
    EXPECT_FALSE(entry.is_dir);
    // Commands see the same name.
    auto r = cmd().run(Argv{{"cat", "--", path}});
    EXPECT_EQ(r.out, s) << "cat of \"" << s << "\"";
    fs().make_dir(path + ".d");
    EXPECT_TRUE(fs().stat(path + ".d").is_dir) << s;
    if (auto* rp = backend_->realpath_support()) {
      EXPECT_EQ(rp->realpath(path), path) << s;
    }
  }
  std::vector<std::string> listed;
  for (const auto& e : fs().list_dir(dir_)) listed.push_back(e.name);
  for (const auto& s : hostile_strings()) {
    EXPECT_NE(std::find(listed.begin(), listed.end(), s), listed.end()) << "listing: " << s;
    EXPECT_NE(std::find(listed.begin(), listed.end(), s + ".d"), listed.end()) << s << ".d";
  }
  for (const auto& s : hostile_strings()) {
    fs().remove(dir_ + "/" + s);
    fs().remove(dir_ + "/" + s + ".d");
    EXPECT_FALSE(fs().exists(dir_ + "/" + s)) << s;
  }
  expect_no_canary();
  EXPECT_TRUE(fs().list_dir(dir_).empty()) << "remove left something behind";
}

INSTANTIATE_TEST_SUITE_P(Backends, HostileStrings,
                         ::testing::Values(Kind::kLocal, Kind::kLizardKubernetes,
                                           Kind::kLizardFirecracker),
                         kind_name);

}  // namespace
}  // namespace lizard::workspace
