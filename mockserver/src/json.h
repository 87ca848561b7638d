// Small JSON helpers over RapidJSON for the mock's handlers: strict parsing
// of untrusted bodies, in place (invalid UTF-8, NUL and deep nesting are
// parse errors), and a writer that always produces valid JSON (strings are
// repaired to UTF-8 first; NUL is escaped as \u0000). Thread-safe: no
// shared state.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <string_view>

#include "api/bounded_json.h"
#include "lizard/workspace/utf8.h"

namespace lizard::mock::internal {

// Bodies are parsed with the client's depth guard (backend/src/api/bounded_json.h):
// iteratively, so no depth overflows the stack, and no deeper than
// kMaxJsonDepth (64) levels; no route needs more than a few, and the cap
// keeps every later walk of a document (copies, Accept) shallow.
using api::internal::kMaxJsonDepth;

// Parses `body` in place (RapidJSON's in-situ mode): strings are unescaped
// inside `body` and `doc` points into it, so a write of 256 MiB is not copied
// twice more on its way to the disk. `body` is garbage afterwards and must
// outlive `doc`. False (with a sentence in `error`) on malformed JSON, text
// that is not UTF-8 (checked in one pass over the whole text, much faster
// than RapidJSON's check byte by byte; outside strings JSON is ASCII anyway),
// a NUL byte (JSON allows none unescaped; it would end an in-situ parse
// early), or nesting deeper than kMaxJsonDepth. Escapes are JSON's: an
// escaped lone low surrogate ("\udc00") decodes to bytes that are not UTF-8
// (ED B0 80), as it did before (RapidJSON refuses only lone high ones).
inline bool parse_json_in_place(std::string& body, rapidjson::Document& doc, std::string& error) {
  const auto at = [](std::size_t offset) { return " at offset " + std::to_string(offset); };
  if (const auto nul = body.find('\0'); nul != std::string::npos) {
    error = "Malformed JSON: a NUL byte" + at(nul);
    return false;
  }
  if (const auto valid = lizard::workspace::utf8_valid_prefix(body); valid != body.size()) {
    error = "Malformed JSON: invalid UTF-8" + at(valid);
    return false;
  }
  // One leading byte order mark is passed over (RFC 8259 allows a parser
  // to ignore it; RapidJSON's copying streams did), offsets still count it.
  const std::size_t bom = body.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  rapidjson::ParseResult result;
  bool too_deep = false;
  auto fill = [&](rapidjson::Document& d) {
    rapidjson::InsituStringStream in(body.data() + bom);
    rapidjson::Reader reader;
    api::internal::DepthLimited<rapidjson::Document> handler(d);
    result =
        reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag>(in, handler);
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
            at(bom + result.Offset());
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
