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
  const auto env = parse_envelope("#LZ2 noise\nLZ2 3 0 0 2 0 0\nbaGk=\nb\nLZEND\n");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->exit_code, 3);
  EXPECT_EQ(env->out, "hi");
}

// D7 (fuzz_envelope, UBSan; fixed): parse_envelope accumulated digits with
// `v = v * 10 + d` in a long long, so 20 digits overflowed (undefined
// behaviour). It must refuse a number it cannot hold.
TEST(FuzzRegressions, AnEnvelopeNumberTooLargeForItsTypeIsRejected) {
  EXPECT_FALSE(parse_envelope("LZ2 5555555555555555555555 0 0 0 0 0\nb\nb\nLZEND\n").has_value());
  EXPECT_FALSE(parse_envelope("LZ2 0 0 0 99999999999999999999999 0 0\nb\nb\nLZEND\n").has_value());
  EXPECT_FALSE(parse_envelope("LZ2 0 0 0 -5 0 0\nb\nb\nLZEND\n").has_value());
  // The largest accepted: 18 digits.
  const auto env = parse_envelope("LZ2 0 0 0 999999999999999999 0 0\n-\nb\nLZEND\n");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->out_size, 999999999999999999u);
}

// D6 (fuzz_envelope; fixed): a stream line "b<not base64>" made base64_decode
// throw std::invalid_argument out of parse_envelope, which documents only
// std::runtime_error; LizardSandboxBackend::run catches runtime_error, so the
// caller got std::invalid_argument for a valid call.
TEST(FuzzRegressions, AnUndecodableEnvelopeStreamIsARuntimeError) {
  try {
    (void)parse_envelope("LZ2 0 0 0 3 0 0\nb!!!\nb\nLZEND\n");
    FAIL() << "a stream that is not base64 was accepted";
  } catch (const std::invalid_argument& e) {
    FAIL() << "std::invalid_argument: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("malformed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lizard::workspace::internal
