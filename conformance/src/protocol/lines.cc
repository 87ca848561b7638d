#include "lines.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include "api/bounded_json.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lizard::conformance::protocol {

// RapidJSON's in-place string stream, with the end of the line: the scan
// below reads 16 bytes at a time and must not read past it.
struct LineStream : rapidjson::InsituStringStream {
  LineStream(char* begin, char* end) : rapidjson::InsituStringStream(begin), end_(end) {}
  char* end_;  // one past the line's NUL
};

namespace {

// The first '"', '\\' or control character in [p, end), else end.
const char* skip_plain(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control = _mm_set1_epi8(0x1F);
  for (; end - p >= 16; p += 16) {
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // c < 0x20 (unsigned) <=> max(c, 0x1F) == 0x1F
    const __m128i stop =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(s, quote), _mm_cmpeq_epi8(s, backslash)),
                     _mm_cmpeq_epi8(_mm_max_epu8(s, control), control));
    if (const int mask = _mm_movemask_epi8(stop); mask != 0) {
      return p + __builtin_ctz(static_cast<unsigned>(mask));
    }
  }
#endif
  while (p != end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
  return p;
}

}  // namespace

}  // namespace lizard::conformance::protocol

namespace rapidjson {

// Copied by value in the parser's loops, as its own in-place stream is.
template <>
struct StreamTraits<lizard::conformance::protocol::LineStream> {
  enum { copyOptimization = 1 };
};

// The reader's hook for a run of characters that need no unescaping
// (anything but '"', '\\' and control characters), called at the start of a
// string and after each escape; its generic version does nothing, leaving
// every character to the per-character loop. Skips the run, or moves it
// back over the room earlier escapes freed; the per-character loop takes
// over at the character that stops it.
template <>
template <>
void GenericReader<UTF8<>, UTF8<>, CrtAllocator>::ScanCopyUnescapedString<
    lizard::conformance::protocol::LineStream, lizard::conformance::protocol::LineStream>(
    lizard::conformance::protocol::LineStream& is, lizard::conformance::protocol::LineStream& os) {
  (void)os;  // the same stream: in place
  const char* p = lizard::conformance::protocol::skip_plain(is.src_, is.end_);
  const std::size_t n = static_cast<std::size_t>(p - is.src_);
  if (is.dst_ != is.src_) std::memmove(is.dst_, is.src_, n);
  is.src_ += n;
  is.dst_ += n;
}

}  // namespace rapidjson

namespace lizard::conformance::protocol {

namespace {

constexpr std::size_t kMinFree = 64 * 1024;
// A line this long leaves with the buffer instead of being copied out.
constexpr std::size_t kHandOver = 64 * 1024;
// The buffer after a long line is sized for one like it, up to this.
constexpr std::size_t kMaxHint = 16u << 20;

}  // namespace

rapidjson::ParseResult parse_line(rapidjson::Document& doc, Line& line, bool validate_encoding) {
  rapidjson::ParseResult result;
  auto fill = [&](rapidjson::Document& d) {
    LineStream stream(line.data, line.data + line.size + 1);
    rapidjson::Reader reader;
    api::internal::DepthLimited<rapidjson::Document> handler(d);
    constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag;
    result = validate_encoding
                 ? reader.Parse<kFlags | rapidjson::kParseValidateEncodingFlag>(stream, handler)
                 : reader.Parse<kFlags>(stream, handler);
    return !result.IsError();
  };
  doc.Populate(fill);
  return result;
}

std::string parse_error_text(const rapidjson::ParseResult& result) {
  // The only handler that stops a parse is the depth limit's.
  if (result.Code() == rapidjson::kParseErrorTermination) {
    return "nested deeper than " + std::to_string(api::internal::kMaxJsonDepth) + " levels";
  }
  return std::string(rapidjson::GetParseError_En(result.Code())) + " at offset " +
         std::to_string(result.Offset());
}

void LineReader::reserve_free(std::size_t room) {
  if (capacity_ - size_ >= room) return;
  if (start_ > 0) {  // the lines before it are gone: move the partial one to the front
    std::memmove(buffer_.get(), buffer_.get() + start_, size_ - start_);
    size_ -= start_;
    scanned_ -= start_;
    start_ = 0;
    if (capacity_ - size_ >= room) return;
  }
  const std::size_t capacity = std::max({capacity_ * 2, size_ + room, next_capacity_});
  std::unique_ptr<char[]> bigger(new char[capacity]);
  if (size_ > 0) std::memcpy(bigger.get(), buffer_.get(), size_);
  buffer_ = std::move(bigger);
  capacity_ = capacity;
}

ssize_t LineReader::fill() {
  reserve_free(kMinFree);
  const ssize_t n = ::read(fd_, buffer_.get() + size_, capacity_ - size_);
  if (n > 0) size_ += static_cast<std::size_t>(n);
  return n;
}

std::optional<Line> LineReader::next() {
  if (scanned_ >= size_) return std::nullopt;
  char* const base = buffer_.get();
  const void* nl = std::memchr(base + scanned_, '\n', size_ - scanned_);
  if (nl == nullptr) {
    scanned_ = size_;
    return std::nullopt;
  }
  const auto pos = static_cast<std::size_t>(static_cast<const char*>(nl) - base);
  Line line;
  line.size = pos - start_;
  if (line.size >= kHandOver) {
    // The line keeps the buffer; what follows it moves to a new one.
    const std::size_t rest = size_ - (pos + 1);
    // Room for the next such line and the free space fill() keeps, so that
    // it is read without the buffer growing (a copy of all of it).
    next_capacity_ = std::min(line.size, kMaxHint) + 2 * kMinFree;
    const std::size_t capacity = std::max(next_capacity_, rest + kMinFree);
    std::unique_ptr<char[]> fresh(new char[capacity]);
    if (rest > 0) std::memcpy(fresh.get(), base + pos + 1, rest);
    base[pos] = '\0';
    line.data = base + start_;
    line.storage = std::move(buffer_);
    buffer_ = std::move(fresh);
    capacity_ = capacity;
    start_ = scanned_ = 0;
    size_ = rest;
    return line;
  }
  line.storage.reset(new char[line.size + 1]);
  std::memcpy(line.storage.get(), base + start_, line.size);
  line.storage[line.size] = '\0';
  line.data = line.storage.get();
  start_ = scanned_ = pos + 1;
  if (start_ == size_) start_ = scanned_ = size_ = 0;
  return line;
}

std::string_view LineReader::partial_begin(std::size_t n) const {
  return {buffer_.get() + start_, std::min(n, size_ - start_)};
}

void LineReader::drop_partial() { size_ = scanned_ = start_; }

}  // namespace lizard::conformance::protocol
