// UTF-8 repair: the contract's output is valid UTF-8, with every maximal
// invalid subsequence replaced by U+FFFD (the WHATWG / Unicode "substitution
// of maximal subparts" practice, which Python's errors="replace" also uses).
// NUL bytes are valid and kept. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lizard::workspace {

// Returns `bytes` with invalid sequences replaced by U+FFFD.
std::string repair_utf8(std::string_view bytes);

// True when `bytes` is valid UTF-8 (no surrogates, no overlongs, <= U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// The length of the longest valid UTF-8 prefix of `bytes`: bytes.size()
// when all of it is valid, else the offset of the first invalid sequence.
std::size_t utf8_valid_prefix(std::string_view bytes);

// The length of the longest prefix of `bytes` that does not end inside an
// incomplete (but so far valid) multi-byte sequence. Lets a stream decoder
// repair chunk by chunk without splitting a character that spans chunks.
std::size_t utf8_complete_prefix(std::string_view bytes);

// Cuts `text` (valid UTF-8) to at most `max_bytes` without splitting a character.
std::string_view utf8_truncate(std::string_view text, std::size_t max_bytes);

}  // namespace lizard::workspace
