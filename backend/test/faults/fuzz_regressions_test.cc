// Inputs the fuzz targets (backend/test/fuzz) found, kept as tests. Those
// that show a defect in backend/src are DISABLED_ with the defect named
// (docs/reliability.md has the list and the fix).
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "lizard/guest_helpers.h"

namespace lizard::workspace::internal {
namespace {

TEST(FuzzRegressions, AnEnvelopeAfterNoiseOnItsOwnLineParses) {
  const auto env = parse_envelope("#LZ1 noise\nLZ1 3 0 0 2 0\nbaGk=\nb\nLZEND\n");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->exit_code, 3);
  EXPECT_EQ(env->out, "hi");
}

// D7 (fuzz_envelope, UBSan): parse_envelope (backend/src/lizard/guest_helpers.cc)
// accumulates digits with `v = v * 10 + d` in a long long: 20 digits overflow
// (undefined behaviour). It must refuse a number it cannot hold.
TEST(FuzzRegressions, DISABLED_AnEnvelopeNumberTooLargeForItsTypeIsRejected) {
  EXPECT_FALSE(parse_envelope("LZ1 5555555555555555555555 0 0 0 0\nb\nb\nLZEND\n").has_value());
  EXPECT_FALSE(parse_envelope("LZ1 0 0 0 99999999999999999999999 0\nb\nb\nLZEND\n").has_value());
}

// D6 (fuzz_envelope): a stream line "b<not base64>" makes base64_decode throw
// std::invalid_argument out of parse_envelope, which documents only
// std::runtime_error; LizardSandboxBackend::run catches runtime_error, so the
// caller gets std::invalid_argument for a valid call.
TEST(FuzzRegressions, DISABLED_AnUndecodableEnvelopeStreamIsARuntimeError) {
  try {
    (void)parse_envelope("LZ1 0 0 0 3 0\nb!!!\nb\nLZEND\n");
  } catch (const std::invalid_argument& e) {
    FAIL() << "std::invalid_argument: " << e.what();
  } catch (const std::runtime_error&) {
  }
}

}  // namespace
}  // namespace lizard::workspace::internal
