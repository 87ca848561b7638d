#include <gtest/gtest.h>

#include "lizard/workspace/local_workspace_backend.h"

namespace lizard::workspace {
namespace {
TEST(LocalSmoke, Runs) {
  LocalWorkspaceBackend backend;
  auto r = backend.run(Shell{"printf out; printf err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out");
  EXPECT_EQ(r.err, "err");
  backend.destroy();
}
}  // namespace
}  // namespace lizard::workspace
