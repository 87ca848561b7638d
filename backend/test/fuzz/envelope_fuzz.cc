// The parser of the guest helpers' output (the run envelope), for any bytes:
// - it returns nullopt, an Envelope, or throws std::runtime_error (LZFAIL, or
//   a malformed answer); any other exception escapes and is a finding (an
//   undecodable stream line once leaked std::invalid_argument: defect D6);
// - an envelope built from the input's bytes parses back to those bytes,
//   whatever noise precedes it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lizard/api/codec.h"
#include "lizard/guest_helpers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lizard::workspace::internal;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    (void)parse_envelope(input);
  } catch (const std::runtime_error&) {
  }

  // Round trip: split the input into noise, out and err.
  const std::size_t a = size == 0 ? 0 : data[0] % (size + 1);
  const std::size_t b = a + (size - a) / 2;
  // Noise is one line that does not start with a marker (the wrapper's own
  // stdout holds nothing else; a command's output never goes there).
  std::string noise = "#" + std::string(input.substr(0, a));
  for (auto& c : noise) {
    if (c == '\n') c = ' ';
  }
  const std::string out(input.substr(a, b - a));
  const std::string err(input.substr(b));
  const int exit_code = size == 0 ? 0 : data[size - 1];
  const std::string text = noise + "\nLZ2 " + std::to_string(exit_code) + " 0 0 " +
                           std::to_string(out.size()) + " " + std::to_string(err.size()) + " 0\nb" +
                           lizard::api::base64_encode(out) + "\nb" +
                           lizard::api::base64_encode(err) + "\nLZEND\n";
  const auto env = parse_envelope(text);
  if (!env || env->exit_code != exit_code || env->timed_out || env->over_limit) std::abort();
  if (!env->out || *env->out != out || !env->err || *env->err != err) std::abort();
  if (env->out_size != out.size() || env->err_size != err.size()) std::abort();
  return 0;
}
