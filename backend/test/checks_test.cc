#include "lizard/workspace/checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace lizard::workspace {
namespace {

TEST(ValidateRun, RejectsEmptyArgv) {
  EXPECT_THROW(validate_run(Argv{}, {}), std::invalid_argument);
  EXPECT_NO_THROW(validate_run(Argv{{"true"}}, {}));
}

TEST(ValidateRun, RejectsTimeoutsThatAreNotPositiveAndFinite) {
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    RunOptions options;
    options.timeout = Seconds(bad);
    EXPECT_THROW(validate_run(Shell{"true"}, options), std::invalid_argument) << bad;
  }
  RunOptions ok;
  ok.timeout = Seconds(0.001);
  EXPECT_NO_THROW(validate_run(Shell{"true"}, ok));
}

TEST(ValidateRun, RejectsBadEnvNames) {
  for (const char* name : {"", "A=B"}) {
    RunOptions options;
    options.env[name] = "x";
    EXPECT_THROW(validate_run(Shell{"true"}, options), std::invalid_argument) << name;
  }
  RunOptions nul;
  nul.env["A"] = std::string("x\0y", 3);
  EXPECT_THROW(validate_run(Shell{"true"}, nul), std::invalid_argument);
}

TEST(Paths, RequireAbsolute) {
  EXPECT_THROW(require_absolute_path("relative"), std::invalid_argument);
  EXPECT_THROW(require_absolute_path(""), std::invalid_argument);
  EXPECT_THROW(require_absolute_path(std::string("/a\0b", 4)), std::invalid_argument);
  EXPECT_NO_THROW(require_absolute_path("/a/b\nc"));
}

TEST(Paths, Normalize) {
  EXPECT_EQ(normalize_path("/"), "/");
  EXPECT_EQ(normalize_path("//a//./b/../c/"), "/a/c");
  EXPECT_EQ(normalize_path("/../.."), "/");
  EXPECT_EQ(normalize_path("/a/b/.."), "/a");
}

TEST(Paths, ATrailingSlashOrDotNamesADirectory) {
  EXPECT_TRUE(names_a_directory("/a/"));
  EXPECT_TRUE(names_a_directory("/a/."));
  EXPECT_TRUE(names_a_directory("/a//"));
  EXPECT_FALSE(names_a_directory("/"));
  EXPECT_FALSE(names_a_directory("/a"));
  EXPECT_FALSE(names_a_directory("/a/.b"));
  EXPECT_FALSE(names_a_directory("/a/.."));
}

TEST(Paths, RefusesWorkingDirAndAncestors) {
  EXPECT_THROW(refuse_remove_of_working_dir("/", "/workspace"), std::invalid_argument);
  EXPECT_THROW(refuse_remove_of_working_dir("/workspace", "/workspace"), std::invalid_argument);
  EXPECT_THROW(refuse_remove_of_working_dir("/workspace/.", "/workspace"), std::invalid_argument);
  EXPECT_THROW(refuse_remove_of_working_dir("/workspace/a/..", "/workspace"),
               std::invalid_argument);
  EXPECT_THROW(refuse_remove_of_working_dir("/w", "/w/x"), std::invalid_argument);
  EXPECT_NO_THROW(refuse_remove_of_working_dir("/workspace/a", "/workspace"));
  EXPECT_NO_THROW(refuse_remove_of_working_dir("/work", "/workspace"));
}

TEST(Refs, ParseAndPrint) {
  const auto ref = WorkspaceRef::parse("lizard:sbx_1:2");
  EXPECT_EQ(ref.provider, "lizard");
  EXPECT_EQ(ref.id, "sbx_1:2");
  EXPECT_EQ(ref.to_string(), "lizard:sbx_1:2");
  EXPECT_THROW(WorkspaceRef::parse("nocolon"), std::invalid_argument);
  EXPECT_THROW(WorkspaceRef::parse(":x"), std::invalid_argument);
}

}  // namespace
}  // namespace lizard::workspace
