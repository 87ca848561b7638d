// Properties of the SSE parser (streaming exec), for any bytes:
// - no crash, no unbounded growth beyond the input;
// - feeding in any chunking gives the same events as feeding whole
//   (a CR at a chunk end followed by LF in the next is one line end).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lizard/api/codec.h"

namespace {

using Events = std::vector<std::pair<std::string, std::string>>;

Events parse(std::string_view input, std::size_t step) {
  Events events;
  lizard::api::SseParser parser(
      [&](const std::string& event, const std::string& data) { events.emplace_back(event, data); });
  for (std::size_t pos = 0; pos < input.size(); pos += step) parser.feed(input.substr(pos, step));
  parser.finish();
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Events whole = parse(input, input.size() + 1);
  const std::size_t step = size == 0 ? 1 : 1 + data[0] % 5;
  if (parse(input, step) != whole) std::abort();
  if (parse(input, 1) != whole) std::abort();
  std::size_t total = 0;
  for (const auto& [event, text] : whole) total += event.size() + text.size();
  // "message" may be added per event; everything else comes from the input.
  if (total > size + whole.size() * 8) std::abort();
  return 0;
}
