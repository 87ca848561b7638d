// Parsing what a server sent without letting its shape hurt the client:
// RapidJSON's default parser recurses once per nesting level, so an answer
// of a few hundred KB of "[" would overflow the stack. parse_bounded() parses
// iteratively and refuses nesting deeper than kMaxJsonDepth (no answer of
// the API nests more than a few levels; the cap also keeps every later walk
// of the document shallow). The mock parses request bodies with
// DepthLimited too, in place (mockserver/src/json.h). Pure functions;
// thread-safe.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cstdint>
#include <string_view>

namespace lizard::api::internal {

inline constexpr unsigned kMaxJsonDepth = 64;

// Hands SAX events on to `out` (a Document) and stops the parse when arrays
// and objects nest deeper than kMaxJsonDepth.
template <class Out>
class DepthLimited {
 public:
  using Ch = char;
  explicit DepthLimited(Out& out) : out_(out) {}
  bool too_deep() const { return too_deep_; }
  bool Null() { return out_.Null(); }
  bool Bool(bool b) { return out_.Bool(b); }
  bool Int(int i) { return out_.Int(i); }
  bool Uint(unsigned u) { return out_.Uint(u); }
  bool Int64(std::int64_t i) { return out_.Int64(i); }
  bool Uint64(std::uint64_t u) { return out_.Uint64(u); }
  bool Double(double d) { return out_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return out_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) { return out_.String(s, n, copy); }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) { return out_.Key(s, n, copy); }
  bool StartObject() { return enter() && out_.StartObject(); }
  bool EndObject(rapidjson::SizeType n) {
    --depth_;
    return out_.EndObject(n);
  }
  bool StartArray() { return enter() && out_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) {
    --depth_;
    return out_.EndArray(n);
  }

 private:
  bool enter() {
    too_deep_ = ++depth_ > kMaxJsonDepth;
    return !too_deep_;
  }
  Out& out_;
  unsigned depth_ = 0;
  bool too_deep_ = false;
};

// Fills `doc` from `text` with RapidJSON's iterative parser: false (and
// `doc` left null) when `text` is not JSON or nests too deep.
inline bool parse_bounded(rapidjson::Document& doc, std::string_view text) {
  bool ok = false;
  auto fill = [&](rapidjson::Document& d) {
    rapidjson::MemoryStream ms(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(ms);
    rapidjson::Reader reader;
    DepthLimited<rapidjson::Document> handler(d);
    ok = !reader.Parse<rapidjson::kParseIterativeFlag>(in, handler).IsError();
    return ok;
  };
  doc.Populate(fill);
  return ok;
}

}  // namespace lizard::api::internal
