// Small JSON helpers over RapidJSON for the mock's handlers: strict parsing
// of untrusted bodies (invalid UTF-8 and deep nesting are parse errors) and a writer that
// always produces valid JSON (strings are repaired to UTF-8 first; NUL is
// escaped as \u0000). Thread-safe: no shared state.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "lizard/workspace/utf8.h"

namespace lizard::mock::internal {

// How deep arrays and objects may nest in a body. No route needs more than
// a few levels; the cap keeps every later walk of a document (copies,
// Accept) shallow, and the parse is iterative, so no depth overflows the
// stack.
inline constexpr unsigned kMaxJsonDepth = 64;

// Hands SAX events on to `out` (a Document), and stops the parse when
// arrays and objects nest deeper than kMaxJsonDepth. The backend's client
// has the same guard (backend/src/api/bounded_json.h).
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
  bool EndObject(rapidjson::SizeType n) { return leave() && out_.EndObject(n); }
  bool StartArray() { return enter() && out_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) { return leave() && out_.EndArray(n); }

 private:
  bool enter() {
    too_deep_ = ++depth_ > kMaxJsonDepth;
    return !too_deep_;
  }
  bool leave() {
    --depth_;
    return true;
  }
  Out& out_;
  unsigned depth_ = 0;
  bool too_deep_ = false;
};

// Parses `body`; false (with a sentence in `error`) on malformed JSON,
// invalid UTF-8, or nesting deeper than kMaxJsonDepth.
inline bool parse_json(std::string_view body, rapidjson::Document& doc, std::string& error) {
  constexpr unsigned kFlags =
      rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag;
  rapidjson::ParseResult result;
  bool too_deep = false;
  auto fill = [&](rapidjson::Document& d) {
    rapidjson::MemoryStream ms(body.data(), body.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(ms);
    rapidjson::Reader reader;
    DepthLimited<rapidjson::Document> handler(d);
    result = reader.Parse<kFlags>(in, handler);
    too_deep = handler.too_deep();
    return !result.IsError();
  };
  doc.Populate(fill);
  if (too_deep) {
    error = "Malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return false;
  }
  if (result.IsError()) {
    error = std::string("Malformed JSON: ") + rapidjson::GetParseError_En(result.Code()) +
            " at offset " + std::to_string(result.Offset());
    return false;
  }
  return true;
}

inline std::string string_of(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

// A JSON text under construction.
class JsonOut {
 public:
  JsonOut() : w_(buf_) {}
  JsonOut& begin_object() {
    w_.StartObject();
    return *this;
  }
  JsonOut& end_object() {
    w_.EndObject();
    return *this;
  }
  JsonOut& begin_array() {
    w_.StartArray();
    return *this;
  }
  JsonOut& end_array() {
    w_.EndArray();
    return *this;
  }
  JsonOut& key(std::string_view k) {
    std::string fixed = lizard::workspace::repair_utf8(k);
    w_.Key(fixed.data(), static_cast<rapidjson::SizeType>(fixed.size()));
    return *this;
  }
  JsonOut& str(std::string_view s) {
    std::string fixed = lizard::workspace::repair_utf8(s);
    w_.String(fixed.data(), static_cast<rapidjson::SizeType>(fixed.size()));
    return *this;
  }
  JsonOut& num(std::int64_t n) {
    w_.Int64(n);
    return *this;
  }
  JsonOut& boolean(bool b) {
    w_.Bool(b);
    return *this;
  }
  JsonOut& null() {
    w_.Null();
    return *this;
  }
  // A value that is already JSON text (e.g. stored metadata).
  JsonOut& raw(std::string_view json) {
    w_.RawValue(json.data(), json.size(), rapidjson::kObjectType);
    return *this;
  }
  JsonOut& kv(std::string_view k, std::string_view v) { return key(k).str(v); }
  JsonOut& kv(std::string_view k, const char* v) { return key(k).str(v); }
  JsonOut& kv(std::string_view k, std::int64_t v) { return key(k).num(v); }
  JsonOut& kv(std::string_view k, int v) { return key(k).num(v); }
  JsonOut& kv(std::string_view k, bool v) { return key(k).boolean(v); }
  std::string text() const { return std::string(buf_.GetString(), buf_.GetSize()); }

 private:
  rapidjson::StringBuffer buf_;
  rapidjson::Writer<rapidjson::StringBuffer> w_;
};

// Serializes any parsed value back to JSON text.
inline std::string to_json(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace lizard::mock::internal
