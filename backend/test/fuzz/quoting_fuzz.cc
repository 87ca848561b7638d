// The argv quoting of the run helper (round-trip property), for any argv:
// - each item's encoding ("r" + item or "b" + base64) decodes back to the
//   item exactly, as the supervisor decodes it;
// - valid UTF-8 items travel literally (JSON can carry them), others base64;
// - run_command() carries the encoded items, in order, at the end of the
//   exec argv, and every exec argv item is valid UTF-8 without NUL (what the
//   JSON body can carry); the run id and numbers are passed as given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/api/codec.h"
#include "lizard/guest_helpers.h"
#include "lizard/workspace/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lizard::workspace::internal;
  // Items are separated by NUL (an item itself can never hold NUL).
  std::vector<std::string> argv;
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      argv.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  argv.push_back(current);

  for (const auto& item : argv) {
    const std::string encoded = encode_item(item);
    if (encoded.empty()) std::abort();
    std::string decoded;
    if (encoded[0] == 'r') {
      decoded = encoded.substr(1);
      if (!lizard::workspace::is_valid_utf8(item)) std::abort();
    } else if (encoded[0] == 'b') {
      decoded = lizard::api::base64_decode(std::string_view(encoded).substr(1));
    } else {
      std::abort();
    }
    if (decoded != item) std::abort();
  }

  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.argv = argv;
  spec.timeout_ms = size;
  spec.limit_bytes = 10u * 1024 * 1024;
  spec.cleanup = {"fedcba9876543210"};
  const std::vector<std::string> command = run_command(spec);
  if (command.size() < argv.size()) std::abort();
  const std::size_t first = command.size() - argv.size();
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (command[first + i] != encode_item(argv[i])) std::abort();
  }
  for (const auto& item : command) {
    if (!lizard::workspace::is_valid_utf8(item) || item.find('\0') != std::string::npos) {
      std::abort();
    }
  }
  return 0;
}
