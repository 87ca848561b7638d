#include "lizard/workspace/utf8.h"

#include <cstdint>
#include <cstring>

namespace lizard::workspace {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The index of the first byte at or after `i` that is not ASCII (or the
// size): eight bytes at a time, since large texts (a 64 MiB upload's base64,
// a command's 10 MiB of output) are mostly ASCII.
std::size_t skip_ascii(std::string_view bytes, std::size_t i) {
  constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;
  while (i + 8 <= bytes.size()) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, sizeof word);
    if (word & kHighBits) break;
    i += 8;
  }
  while (i < bytes.size() && static_cast<std::uint8_t>(bytes[i]) < 0x80) ++i;
  return i;
}

// Length of the valid sequence starting at bytes[i], or 0 when the bytes at i
// are not a valid (complete) sequence. `*maximal` gets the length of the
// maximal subpart of a valid sequence (>= 1) for the replacement rule.
std::size_t sequence_length(std::string_view bytes, std::size_t i, std::size_t* maximal) {
  const auto b0 = static_cast<std::uint8_t>(bytes[i]);
  *maximal = 1;
  if (b0 < 0x80) return 1;
  std::size_t need;
  std::uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < need; ++k) {
    if (i + k >= bytes.size()) return 0;
    const auto b = static_cast<std::uint8_t>(bytes[i + k]);
    const std::uint8_t l = k == 1 ? lo : 0x80;
    const std::uint8_t h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0;
    *maximal = k + 1;
  }
  return need;
}

}  // namespace

std::string repair_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  std::size_t run_start = 0;
  while ((i = skip_ascii(bytes, i)) < bytes.size()) {
    std::size_t maximal = 1;
    const std::size_t n = sequence_length(bytes, i, &maximal);
    if (n != 0) {
      i += n;
      continue;
    }
    out.append(bytes.substr(run_start, i - run_start));
    out.append(kReplacement);
    i += maximal;
    run_start = i;
  }
  out.append(bytes.substr(run_start));
  return out;
}

bool is_valid_utf8(std::string_view bytes) { return utf8_valid_prefix(bytes) == bytes.size(); }

std::size_t utf8_valid_prefix(std::string_view bytes) {
  std::size_t i = 0;
  while ((i = skip_ascii(bytes, i)) < bytes.size()) {
    std::size_t maximal = 1;
    const std::size_t n = sequence_length(bytes, i, &maximal);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::size_t utf8_complete_prefix(std::string_view bytes) {
  // Look back at most 3 bytes for the start of a sequence that is cut off.
  const std::size_t size = bytes.size();
  for (std::size_t back = 1; back <= 3 && back <= size; ++back) {
    const auto b = static_cast<std::uint8_t>(bytes[size - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    std::size_t need = 1;
    if (b >= 0xC2 && b <= 0xDF)
      need = 2;
    else if (b >= 0xE0 && b <= 0xEF)
      need = 3;
    else if (b >= 0xF0 && b <= 0xF4)
      need = 4;
    if (need <= back) return size;  // complete (or invalid: repair will handle it)
    // A lead byte waiting for more: cut only if what follows is valid so far.
    std::size_t maximal = 1;
    sequence_length(bytes, size - back, &maximal);
    return maximal == back ? size - back : size;
  }
  return size;
}

std::string_view utf8_truncate(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<std::uint8_t>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

}  // namespace lizard::workspace
