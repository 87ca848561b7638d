// Properties of the UTF-8 repair, for any input:
// - the output is valid UTF-8;
// - valid input comes back unchanged;
// - repairing chunk by chunk (carrying incomplete tails) equals repairing whole;
// - utf8_valid_prefix ends where the first invalid sequence starts (the
//   repair replaces what follows it first).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lizard/workspace/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lizard::workspace;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string whole = repair_utf8(input);
  if (!is_valid_utf8(whole)) std::abort();
  if (is_valid_utf8(input) && whole != input) std::abort();
  if (repair_utf8(whole) != whole) std::abort();

  const std::size_t valid = utf8_valid_prefix(input);
  if (valid > size || repair_utf8(input.substr(0, valid)) != input.substr(0, valid)) std::abort();
  if (valid < size && repair_utf8(input.substr(valid)).rfind("\xEF\xBF\xBD", 0) != 0) std::abort();

  // Chunk sizes come from the first byte so the fuzzer explores them too.
  const std::size_t step = size == 0 ? 1 : 1 + data[0] % 7;
  std::string chunked;
  std::string carry;
  for (std::size_t pos = 0; pos < size; pos += step) {
    carry.append(input.substr(pos, step));
    const std::size_t keep = utf8_complete_prefix(carry);
    chunked += repair_utf8(std::string_view(carry).substr(0, keep));
    carry.erase(0, keep);
  }
  chunked += repair_utf8(carry);
  if (chunked != whole) std::abort();

  const std::string_view cut = utf8_truncate(whole, size / 2);
  if (!is_valid_utf8(cut)) std::abort();
  return 0;
}
