#include <gtest/gtest.h>

#include "lizard/mock/mock_server.h"

TEST(MockServerBasics, StartsOnAnyPort) {
  lizard::mock::MockServer server;
  EXPECT_GT(server.port(), 0);
}
