#include "lizard/workspace/utf8.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace lizard::workspace {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Repair, KeepsValidTextAndNul) {
  const std::string text = std::string("a\0b", 3) + "é€😀";
  EXPECT_EQ(repair_utf8(text), text);
  EXPECT_TRUE(is_valid_utf8(text));
}

TEST(Utf8Repair, ReplacesMaximalSubparts) {
  EXPECT_EQ(repair_utf8("a\xFF"
                        "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(repair_utf8("\xC0\xAF"), kFffd + kFffd);              // overlong lead
  EXPECT_EQ(repair_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(repair_utf8("\xE2\x82"), kFffd);                      // truncated 3-byte: one
  EXPECT_EQ(repair_utf8("\xF0\x9F\x98"), kFffd);                  // truncated 4-byte: one
  EXPECT_EQ(repair_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(Utf8Repair, EveryByteValueComesOutValid) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string repaired = repair_utf8(all);
  EXPECT_TRUE(is_valid_utf8(repaired));
  EXPECT_EQ(repaired.substr(0, 128), all.substr(0, 128));
}

TEST(Utf8Repair, ChunkedRepairEqualsWholeRepair) {
  std::mt19937 rng(42);
  const std::string pieces[] = {"a",    "é",        "€",    "😀",
                                "\xFF", "\xE2\x82", "\x80", std::string(1, '\0')};
  for (int round = 0; round < 200; ++round) {
    std::string input;
    for (int i = 0; i < 40; ++i) input += pieces[rng() % std::size(pieces)];
    // Feed in random chunks, carrying an incomplete tail forward.
    std::string out, carry;
    std::size_t pos = 0;
    while (pos < input.size()) {
      const std::size_t n = 1 + rng() % 7;
      carry += input.substr(pos, n);
      pos += n;
      const std::size_t keep = utf8_complete_prefix(carry);
      out += repair_utf8(std::string_view(carry).substr(0, keep));
      carry.erase(0, keep);
    }
    out += repair_utf8(carry);
    EXPECT_EQ(out, repair_utf8(input)) << "round " << round;
  }
}

// The check runs eight ASCII bytes at a time: whatever the alignment, the
// first invalid sequence is found where it starts, and a valid character
// that straddles a word is valid.
TEST(Utf8ValidPrefix, FindsTheFirstInvalidSequenceAtEveryAlignment) {
  for (std::size_t len = 0; len <= 24; ++len) {
    for (std::size_t at = 0; at <= len; ++at) {
      for (const std::string bad :
           {"\x80", "\xFF", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
        std::string text(len, 'a');
        text.insert(at, bad);
        EXPECT_EQ(utf8_valid_prefix(text), at) << "length " << len << ", at " << at;
        EXPECT_FALSE(is_valid_utf8(text));
      }
      std::string good(len, 'a');
      good.insert(at, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
      EXPECT_EQ(utf8_valid_prefix(good), good.size()) << "length " << len << ", at " << at;
      std::string cut(len, 'a');
      cut.append("\xE2\x82");  // a character cut off at the end
      EXPECT_EQ(utf8_valid_prefix(cut), len);
    }
  }
  EXPECT_EQ(utf8_valid_prefix(""), 0u);
  EXPECT_EQ(utf8_valid_prefix(std::string("a\0b", 3)), 3u);
}

TEST(Utf8Truncate, NeverSplitsACharacter) {
  const std::string text = "aé€";  // 1 + 2 + 3 bytes
  EXPECT_EQ(utf8_truncate(text, 2), "a");
  EXPECT_EQ(utf8_truncate(text, 3), "aé");
  EXPECT_EQ(utf8_truncate(text, 5), "aé");
  EXPECT_EQ(utf8_truncate(text, 6), text);
}

}  // namespace
}  // namespace lizard::workspace
