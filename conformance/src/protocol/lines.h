// The protocol's lines, both ways (docs/protocol.md, "Transport"): read from
// a pipe into one buffer, handed over without a copy, and parsed in place.
//
// A 1 MiB file crosses as one 1.4 MB line. RapidJSON 1.1.0 parses a string
// one character at a time unless RAPIDJSON_SSE2 is defined, which this build
// must not define (Debian's 1.1.0 then mis-handles escaped strings: see
// cmake/LizardDependencies.cmake). parse_line() gives the in-place parser a
// stream of its own type, LineStream, for which lines.cc provides the
// reader's hook for runs of characters that need no unescaping: they are
// skipped (or moved, after an escape) 16 bytes at a time. Everything else
// (escapes, \u sequences, errors and their offsets) is RapidJSON's own code.
//
// Not thread-safe: one LineReader per reading thread.
#pragma once

#include <rapidjson/document.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace lizard::conformance::protocol {

// One complete line, its newline replaced by a NUL (RapidJSON's in-place
// parser stops there). `data` points into `storage`.
struct Line {
  std::unique_ptr<char[]> storage;
  char* data = nullptr;
  std::size_t size = 0;  // without the NUL

  std::string_view view() const { return {data, size}; }
};

// Parses `line` in place into `doc` (which then points into the line; keep
// both together), with RapidJSON's iterative parser: no recursion, whatever
// the line. Arrays and objects nested deeper than api::internal::kMaxJsonDepth
// (64; no message of the protocol nests more than a few levels) stop the
// parse with kParseErrorTermination, so that nothing that walks the document
// later (the schema check, a writer) recurses deeply either. With
// `validate_encoding`, every string is checked to be UTF-8 (RapidJSON's slow
// path, for --check-protocol). On an error `doc` is null.
rapidjson::ParseResult parse_line(rapidjson::Document& doc, Line& line, bool validate_encoding);
// "Invalid value at offset 12", or "nested deeper than 64 levels".
std::string parse_error_text(const rapidjson::ParseResult& result);

// Lines from a file descriptor: read(2) into one growing buffer; a long line
// leaves with the buffer (what follows it is copied to a new one), a short
// one is copied out.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}

  // One read(2) into the buffer: the bytes read, 0 at end of file, -1 with
  // errno set.
  ssize_t fill();
  // The next complete line read so far, or nullopt.
  std::optional<Line> next();
  // The bytes of the line not complete yet (to apply a length limit), its
  // beginning (for a message), and dropping them (a line over the limit).
  std::size_t partial_size() const { return size_ - start_; }
  std::string_view partial_begin(std::size_t n) const;
  void drop_partial();

 private:
  void reserve_free(std::size_t room);

  int fd_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;
  std::size_t start_ = 0;    // where the next line begins
  std::size_t scanned_ = 0;  // no newline in [start_, scanned_)
  std::size_t size_ = 0;
  std::size_t next_capacity_ = 0;  // for the buffer that follows a long line
};

}  // namespace lizard::conformance::protocol
